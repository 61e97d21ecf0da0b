"""Fixtures of the net tests: a plain server, spawned child processes serving or reading, TLS files.

A module that needs a server configured otherwise (limits, TLS, WebSocket) defines its own
``server`` fixture, which takes the place of this one there."""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import signal
import tempfile

import pytest

from rs_spark import net

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


@pytest.fixture
def no_internal_errors(caplog):
    """Fails the test if the server logged an ERROR record: a bug in it shows as one ("internal error",
    a reader thread that failed: "reader ... failed")."""
    caplog.set_level(logging.WARNING, logger="rs_spark.net")
    yield
    bad = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not bad, f"the server logged internal errors: {bad[:3]}"


@pytest.fixture(scope="module")
def server():
    """A ``net.Server`` on 127.0.0.1 with default settings, shared by the module's tests (each
    registers its own names)."""
    s = net.Server()
    yield s
    s.stop()


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
    three_produced = CTX.Event()
    c = Child(_procs.serve_publishers, bind, produced, cancelled, three_produced)
    c.produced, c.cancelled, c.three_produced = produced, cancelled, three_produced
    yield c
    c.kill()


@pytest.fixture
def subscriber_child(bind):
    results = CTX.Queue()
    c = Child(_procs.serve_subscriber, bind, results)
    c.results = results
    yield c
    c.kill()


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1/localhost, made for this test session: (cert, key)."""
    from tests.certs import self_signed

    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def tls(tls_files):
    """(server SSLContext, client SSLContext trusting the throwaway certificate)."""
    import ssl

    cert, key = tls_files
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=cert)
    return server, client
