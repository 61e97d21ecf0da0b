"""What a clean run of the demo (``python -m rs_spark demo``) under load looks like, for the tests that
run it from each kind of install."""

from __future__ import annotations

import re

# A demo run that stops while micro-batches run back to back (each takes longer than the 1 s
# trigger once the Subscriber has rows to take), so Spark plans the next batch as soon as one ends.
# --seconds: the stop under test is the one at a micro-batch boundary, not the time cap's.
UNDER_LOAD = ["demo", "--batches", "3", "--deliveries", "8", "--subscriber-ms", "20", "--seconds", "900"]
UNDER_LOAD += ["--chart", ""]


def assert_stopped_cleanly(out: str, run: str) -> None:
    """The demo's whole output (stdout and stderr): it stopped at a batch boundary, quietly."""
    assert "Subscriber signalled: on_complete" in out, f"{run}:\n{out[-3000:]}"
    assert "stopped at the time cap" not in out, f"{run}:\n{out[-3000:]}"
    # No traceback (pyspark's accumulator server's EOFError included), no ERROR line (Spark's
    # "MicroBatchWrite[...] is aborting" / "failed to abort", or any other).
    # The demo's own line naming Spark's log level ("its log: ERROR and above") is not one.
    bad = [ln for ln in out.splitlines() if "Traceback" in ln or _error_line(ln)]
    assert bad == [], f"{run}: {bad}\n{out[-5000:]}"


def _error_line(line: str) -> bool:
    return bool(re.search(r"\bERROR\b", line)) and "ERROR and above" not in line
