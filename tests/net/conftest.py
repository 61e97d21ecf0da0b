from __future__ import annotations

import multiprocessing as mp
import os
import signal
import tempfile

import pytest

from . import _procs

CTX = mp.get_context("spawn")


class Child:
    """A spawned process serving something; ``base`` is its server's base address."""

    def __init__(self, target, bind, *rest):
        parent, child = CTX.Pipe()
        self.proc = CTX.Process(target=target, args=(bind, child) + rest, daemon=True)
        self.proc.start()
        if not parent.poll(60):
            self.kill()
            raise RuntimeError("the child process did not report its address within 60 s")
        self.base = parent.recv()

    def kill(self):
        if self.proc.is_alive():
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except OSError:
                pass
            self.proc.kill()
        self.proc.join(10)


@pytest.fixture(params=["tcp", "unix"])
def bind(request):
    if request.param == "tcp":
        yield "tcp://127.0.0.1:0"
    else:
        d = tempfile.mkdtemp(prefix="rsnet")
        yield f"unix://{d}/s.sock"


@pytest.fixture
def publisher_child(bind):
    produced = CTX.Value("q", 0)
    cancelled = CTX.Event()
    c = Child(_procs.serve_publishers, bind, produced, cancelled)
    c.produced, c.cancelled = produced, cancelled
    yield c
    c.kill()


@pytest.fixture
def subscriber_child(bind):
    results = CTX.Queue()
    c = Child(_procs.serve_subscriber, bind, results)
    c.results = results
    yield c
    c.kill()
