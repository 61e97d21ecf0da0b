"""A victim process for the Arrow attacks: runs one rs_spark decode path on hostile bytes, touches
every value of whatever was decoded (where neighbouring heap would leak or the process crash), and
prints one JSON line: what was delivered, the error, and the peak RSS."""

from __future__ import annotations

import json
import resource
import sys
import threading


def _touch(batches):
    return sum(len(str(b.to_pylist())) for b in batches)


def peak_rss_mb() -> float:
    """This process's own peak RSS. Not ``ru_maxrss``: on Linux it keeps the peak of the process
    that started us (a fork, or the vfork of ``subprocess``, shares its memory until exec), so a
    test runner that had grown to 400 MB made every victim report 400 MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _report(**fields):
    fields["max_rss_mb"] = peak_rss_mb()
    print(json.dumps(fields), flush=True)


def decode_path(path: str, payload: bytes):
    if path == "codec":
        from rs_spark.net.protocol.codecs import ArrowCodec

        return [ArrowCodec().decode(payload)]
    if path == "from_ipc":
        from rs_spark.arrow.ipc import from_ipc

        return from_ipc(payload)
    if path == "jvm_handoff":
        from rs_spark.jvm.publisher import _one_batch

        return [_one_batch(payload, 0)]
    raise SystemExit(f"unknown path {path}")


def main() -> None:
    what = sys.argv[1]
    if what == "client":  # read a served publisher at argv[2] over rs_spark.net
        from rs_spark import net
        from rs_spark.streams.subscribers import BlockingIterator

        it = BlockingIterator(prefetch=4)
        net.connect(sys.argv[2], codec="arrow").subscribe(it)
        got, error = [], None
        try:
            for b in it:
                got.append(b)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        _report(delivered=len(got), touched=_touch(got), error=error)
        return
    payload = sys.stdin.buffer.read()
    try:
        batches = decode_path(what, payload)
    except Exception as exc:
        _report(delivered=0, error=f"{type(exc).__name__}: {exc}")
        return
    _report(delivered=len(batches), touched=_touch(batches), error=None)


if __name__ == "__main__":
    threading.stack_size(1 << 20)
    main()
