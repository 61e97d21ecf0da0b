"""Runs seeded mutations of valid Arrow IPC through every in-process decode path and touches every
value decoded; prints counts and peak RSS as JSON. A crash ends the process: the test sees it."""

from __future__ import annotations

import json
import sys

from rs_spark.arrow.ipc import from_ipc
from rs_spark.arrow.validate import MalformedArrow
from rs_spark.jvm.publisher import _one_batch
from rs_spark.net.protocol.codecs import ArrowCodec

from .arrow_attacks import mutations
from .victim import peak_rss_mb

PATHS = {
    "codec": lambda d: [ArrowCodec().decode(d)],
    "from_ipc": lambda d: from_ipc(d, "fuzz"),
    "jvm_handoff": lambda d: [_one_batch(d, 0)],
}


def main() -> None:
    seed, count = int(sys.argv[1]), int(sys.argv[2])
    outcome = {"accepted": 0, "refused": 0, "other_errors": {}}
    for i, data in mutations(seed, count):
        for name, decode in PATHS.items():
            sys.stderr.write(f"\rseed {seed} case {i} path {name}   ")  # the last case is named if we crash
            try:
                batches = decode(data)
            except MalformedArrow:
                outcome["refused"] += 1
                continue
            except Exception as exc:  # anything else must be a clear error too: count its kinds
                kind = type(exc).__name__
                outcome["other_errors"][kind] = outcome["other_errors"].get(kind, 0) + 1
                continue
            for b in batches:
                b.to_pylist()  # where unvalidated offsets would read neighbouring memory
            outcome["accepted"] += 1
    outcome["max_rss_mb"] = peak_rss_mb()
    print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main()
