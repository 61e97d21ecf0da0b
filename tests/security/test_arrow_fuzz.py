"""Fuzz every Arrow decode path with seeded mutations of valid IPC messages (offsets, lengths, type
codes, dictionary ids, compression flags, truncations, splices): thousands of cases in a separate
process, no crash, no hang, bounded memory, and every refusal a MalformedArrow."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = 1500  # x 3 decode paths = 4,500 decodes per seed


@pytest.mark.parametrize("seed", [1, 2])
def test_mutated_ipc_never_crashes_hangs_or_grows_any_decode_path(seed):
    r = subprocess.run(
        [sys.executable, "-m", "tests.security.fuzz_victim", str(seed), str(CASES)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    last_case = r.stderr.strip().rsplit("\r", 1)[-1]
    assert r.returncode == 0, f"the fuzzed process died (exit {r.returncode}) at {last_case}: {r.stderr[-1500:]}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["refused"] > CASES, out  # most mutations break something, and each is refused as malformed
    assert out["other_errors"] == {}, f"errors that are not MalformedArrow (seed {seed}): {out}"
    assert out["max_rss_mb"] < 500, out
