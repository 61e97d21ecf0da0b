"""One partition's publisher in a process of its own: an rs_spark.net server serving a
:class:`~tests.reliability.trial.ContinuingCounter` (it cannot replay; rows carry the partition's
tag), answering ``stats`` over a pipe until it is told to stop or the pipe closes."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

CTX = mp.get_context("spawn")


def serve_counter(tag: str, token: str, conn: Any) -> None:
    """The child process: serve, send the address, then answer ``stats`` requests."""
    from rs_spark import net
    from tests.reliability.trial import ContinuingCounter

    counter = ContinuingCounter(tag)
    server = net.serve(counter, name=tag, token=token)
    try:
        conn.send(server.address)
        while True:
            try:
                cmd = conn.recv()
            except EOFError:  # the test process is gone: stop with it
                return
            if cmd != "stats":
                return
            conn.send({"server": server.stats().as_dict(), "emitted": [list(r) for r in counter.ranges]})
    finally:
        server.stop()


class PartitionProcess:
    """The test's side of one partition's publisher process."""

    def __init__(self, tag: str, token: str) -> None:
        self.tag = tag
        self._conn, child = CTX.Pipe()
        self.proc = CTX.Process(target=serve_counter, args=(tag, token, child), daemon=True, name=f"publisher {tag}")
        self.proc.start()
        child.close()
        if not self._conn.poll(60):
            self.stop()
            raise RuntimeError(f"the publisher process of partition {tag!r} did not report its address in 60 s")
        self.address: str = self._conn.recv()

    def stats(self) -> dict[str, Any]:
        """``server``: the server's ``stats().as_dict()`` (camelCase keys); ``emitted``: [start, end) of ids
        per subscription."""
        self._conn.send("stats")
        return dict(self._conn.recv())

    def stream(self) -> dict[str, Any]:
        """The stats of the one resumable stream of this partition (empty before it is opened)."""
        streams = self.stats()["server"]["streams"]
        assert len(streams) <= 1, f"partition {self.tag!r} has {len(streams)} streams: {streams}"
        return streams[0] if streams else {}

    def stop(self) -> None:
        if self.proc.is_alive():
            try:
                self._conn.send("stop")
            except OSError:
                pass
            self.proc.join(20)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(10)
        self._conn.close()
