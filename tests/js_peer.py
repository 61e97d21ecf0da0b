"""rsocket-js as a test peer: ``node interop/js/peer.js ...`` with its stdout read line by line as JSON.

Tests that use it request the ``rsocket_js`` fixture (tests/conftest.py: ``require_rsocket_js``)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JS = os.path.join(ROOT, "interop", "js")
_EOF = None  # what the stdout reader queues when the peer closed its stdout (exited)


def require_rsocket_js() -> str:
    """The ``node`` executable; skips the test without Node.js (rsocket-js cannot run at all) and
    fails it without the npm packages (.ci/setup installs them), which would otherwise make every
    peer wait out its timeout and fail obscurely."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: rsocket-js cannot run")
    if not os.path.isdir(os.path.join(JS, "node_modules", "rsocket-core")):
        pytest.fail("rsocket-js is not installed: run `npm ci --prefix interop/js` (.ci/setup does)")
    return node


class JsPeer:
    """A running ``peer.js``; it ends when its stdin closes (``close()``)."""

    def __init__(self, *args: object) -> None:
        node = shutil.which("node") or "node"
        self.proc = subprocess.Popen(
            [node, os.path.join(JS, "peer.js"), *map(str, args)],
            cwd=JS,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[str] = []
        # Both pipes are drained by threads, so neither can fill and block the peer, and what it
        # wrote to stderr is still there to report after it exited.
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._readers:
            t.start()

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]  # stdout=PIPE: never None
            self.lines.put(line)
        self.lines.put(_EOF)

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]  # stderr=PIPE: never None
            self._stderr.append(line)

    def next(self, timeout: float = 60.0) -> dict:
        """The peer's next JSON report; fails with its stderr if it exits or is silent for ``timeout`` s."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            line, why = _EOF, f"said nothing in {timeout} s"
        else:
            why = "exited"
        if line is _EOF:
            self.close()
            raise AssertionError(f"rsocket-js {why} (exit code {self.proc.returncode}); stderr:\n{self.stderr()}")
        return json.loads(line)

    def stderr(self) -> str:
        """What the peer wrote to stderr so far (all of it once ``close()`` returned)."""
        return "".join(self._stderr)

    def close(self) -> None:
        """End the peer (EOF on its stdin; killed after 10 s) and wait for its output to be read."""
        if self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]  # stdin=PIPE: never None
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for t in self._readers:
            t.join(10)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()  # type: ignore[union-attr]  # all three are pipes


@contextlib.contextmanager
def js_server_at(count: int, step: int, texts: str | None = None) -> Iterator[tuple[JsPeer, int]]:
    """An rsocket-js server with ``count`` numbers and a sink requesting ``step`` at a time: (peer, port).
    ``texts``: a file whose lines it also serves as route ``texts``, each line one payload as written."""
    peer = JsPeer("server", count, step, *([texts] if texts else []))
    try:
        yield peer, peer.next()["port"]
    finally:
        peer.close()
