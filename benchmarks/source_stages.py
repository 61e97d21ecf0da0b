"""What format("reactive") adds per micro-batch on one host, stage by stage, for source.py's batches.

    .venv/bin/python benchmarks/source_stages.py [--rows 1000000] [--runs 10]

Times, in this process, the work (a) and (a') of ``benchmarks/source.py`` do that the hand-written
source (c) does not, for one micro-batch of ``--rows`` rows (3 columns: long, double, string):

* the local hand-off (a): the reader process writes the planned batch to a private file
  (``LocalHandoff.put``), an executor maps it and validates it in full;
* the replay log (a'): ``ReplayLog.append`` of the batch, the segment before it deleted as a commit
  deletes it (so the page cache holds about two segments, as in a query).

Each stage runs ``--runs`` times; the table shows the median [range] in milliseconds and the median's
share of the micro-batch time of (c) at ``--c-rate`` rows/s (source.py's (c) on this machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402
from _baselines import make_batch  # noqa: E402

from rs_spark.arrow.validate import checked  # noqa: E402
from rs_spark.spark.source.single.handoff import LocalHandoff  # noqa: E402
from rs_spark.spark.source.single.replay_log import ReplayLog  # noqa: E402


def timed(fn: Callable[[int], object], runs: int) -> list[float]:
    out = []
    for i in range(runs):
        t0 = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--c-rate", type=float, default=3.27e6, help="rows/s of source.py's (c) on this machine")
    a = ap.parse_args()
    batch = make_batch(0, a.rows)
    handoff = LocalHandoff()
    log = ReplayLog(tempfile.mkdtemp(prefix="rs-bench-stages-"))

    def put(i: int) -> None:
        handoff.put(i, [batch], batch.schema)
        handoff.drop(i - 1)

    def mapped(i: int) -> pa.Table:
        found = handoff.file_of(a.runs - 1)
        assert found is not None
        return ipc.open_file(pa.memory_map(os.path.join(*found))).read_all()

    stages = {"hand-off: write the private file": timed(put, a.runs)}
    stages["hand-off: map it (executor)"] = timed(mapped, a.runs)
    table = mapped(0)
    stages["hand-off: validate in full (executor)"] = timed(
        lambda i: [checked(b, "bench") for b in table.to_batches()], a.runs
    )

    def append(i: int) -> None:
        log.append(i * a.rows, (i + 1) * a.rows, [batch], batch.schema)
        log.truncate_before(i * a.rows)

    stages["replay log: append (a')"] = timed(append, a.runs)
    handoff.close()
    budget = a.rows / a.c_rate * 1000
    print(f"one micro-batch of {a.rows:,} rows ({batch.nbytes / 1e6:.0f} MB); (c) takes {budget:.0f} ms for it")
    print(f"{'stage':<40} {'ms, median [range]':>24} {'of (c)':>8}")
    for name, ms in stages.items():
        med = statistics.median(ms)
        print(f"{name:<40} {f'{med:.1f} [{min(ms):.1f}-{max(ms):.1f}]':>24} {med / budget:>8.1%}")


if __name__ == "__main__":
    main()
