"""CPU load beside a test: one busy process per core, each ending by itself after ``seconds`` and
killed when the block ends, whatever happened in it.

The busy processes run at nice 10: they take every idle cycle and shift the timing of everything
else, but do not starve a new process of the tested program (Spark gives a new Python worker a fixed
10 s to connect back, PythonWorkerFactory; on a machine already busy, an unniced load made that fail
before the behaviour under test was reached)."""

from __future__ import annotations

import os
import subprocess
import sys

_BUSY = """
import os, sys, time
os.nice(10)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pass
"""


class CpuLoad:
    """``with CpuLoad(seconds):`` runs ``os.cpu_count()`` busy Python processes for the block."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> CpuLoad:
        for _ in range(os.cpu_count() or 1):
            self.procs.append(subprocess.Popen([sys.executable, "-c", _BUSY, str(self.seconds)]))
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
