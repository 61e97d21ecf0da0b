"""The README's main job, run as users run it: `python -m rs_spark demo`, in its own process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_demo_runs_the_pipeline_into_the_slow_subscriber_and_writes_the_chart(tmp_path):
    chart = tmp_path / "demo.png"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = subprocess.run(
        [sys.executable, "-m", "rs_spark", "demo", "--seconds", "20", "--chart", str(chart)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env=dict(os.environ, TMPDIR=str(tmp)),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "micro-batches (none above 2000)" in out.stdout
    assert "window averages delivered to a Subscriber" in out.stdout
    assert "Subscriber signalled: on_complete" in out.stdout
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    left = [p.name for p in tmp.iterdir() if p.name.startswith("rs-")]
    assert left == [], f"the demo left {left} in its temp directory"
