"""Soak: an infinite fast Publisher into a slow Subscriber through Spark (benchmarks/soak.py) for
RS_SOAK_MINUTES minutes. Resident memory stays flat and buffered counts stay within their bounds.

The test suite (and so CI, through .ci/run) runs it for 3 minutes; the documented 10-minute soak
(docs/guarantees.md) is ``RS_SOAK_MINUTES=10 .venv/bin/python -m pytest tests/reliability/test_soak.py``.

It runs in a process of its own, with a SparkSession of its own: the memory it measures is that of
the soak's processes only (not of the test session's shared Spark), and it stops its session."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MINUTES = float(os.environ.get("RS_SOAK_MINUTES", "3"))

# Runs benchmarks/soak.py's soak() and prints its result as one JSON line (the table goes to stderr).
RUNNER = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("rs_soak", sys.argv[1])
soak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soak)
r = soak.soak(float(sys.argv[2]), out=sys.stderr)
r["error"] = None if r["error"] is None else repr(r["error"])
r["max_buffered_bound"] = soak.MAX_BUFFERED
print("RESULT " + json.dumps(r), flush=True)
"""


def _soak(minutes: float) -> tuple[dict, str]:
    """Run the soak in its own process: (its result, the table it printed)."""
    r = subprocess.run(
        [sys.executable, "-c", RUNNER, os.path.join(ROOT, "benchmarks", "soak.py"), str(minutes)],
        capture_output=True,
        text=True,
        timeout=minutes * 60 + 540,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [ROOT, os.environ.get("PYTHONPATH")] if p)),
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, f"the soak exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    return json.loads(lines[-1][len("RESULT ") :]), r.stderr


@pytest.mark.slow
@pytest.mark.timeout(int(MINUTES * 60 + 600))
def test_soak_fast_publisher_slow_subscriber_memory_flat_and_buffers_bounded():
    r, stderr = _soak(MINUTES)
    table = stderr[stderr.rfind("\n", 0, max(0, stderr.find("t (s)"))) + 1 :]  # from its header on (after Spark's log)
    print(f"\nsoak for {MINUTES:g} min (RS_SOAK_MINUTES):\n{table}")
    assert r["error"] is None and r["rows"] > 0, r["error"]
    assert max(s["src_buffered"] for s in r["samples"]) <= r["max_buffered_bound"]
    assert r["max_hub"] <= 65536  # at most one record batch beyond the Subscriber's demand
    for role, (middle, last) in r["growth"].items():
        slack = 150.0 if role == "jvm" else 40.0  # the JVM heap may still expand towards -Xmx
        assert last <= middle * 1.25 + slack, f"{role} RSS grew from {middle:.0f} to {last:.0f} MB"
