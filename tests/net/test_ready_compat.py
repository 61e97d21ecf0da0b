"""Issue 50's READY question across builds, for real: build ab88d32 (the last before it) runs in a
process of its own (tests/old_build.py), beside this one, on 127.0.0.1.

Today's reader of that build's endpoint hears a window push without the READY entry: it knows at
once that no answer will come, asks nothing that it would wait for, and reads and acknowledges as
before (the old endpoint ignores a question it is sent). That build's reader of today's endpoint
ignores the new entry and reads, acknowledges and ends as before."""

from __future__ import annotations

import logging
import time

import pytest

from rs_spark import net
from tests.old_build import OldEndpoint, OldProcess
from tests.publishers import Counting
from tests.subscribers import Recorder
from tests.waits import wait_until

pytestmark = pytest.mark.timeout(180)

TOKEN = "ready-compat-token"
ROWS = 500


@pytest.fixture
def old_endpoint(old_build):
    e = OldEndpoint(old_build, TOKEN, {"backlog": (0, ROWS)})
    yield e
    e.close()


def test_todays_reader_of_an_earlier_endpoint_waits_for_no_answer_and_reads_and_acknowledges(old_endpoint, caplog):
    caplog.set_level(logging.WARNING, logger="rs_spark.net")
    r = Recorder(100, refill=False)
    net.connect(old_endpoint.address("backlog"), token=TOKEN).resumable().subscribe(r)
    r.wait_for(100)
    wait_until(lambda: r.s.answers_ready is False, what=lambda: f"answers_ready False, is {r.s.answers_ready}")
    t = time.monotonic()
    q = r.s.ask_ready(5.0)  # sent anyway (the reactive source would not): the old endpoint ignores it
    assert r.s.wait_ready(q, 60) is None
    assert time.monotonic() - t < 30, "wait_ready waited for an answer an earlier build never sends"
    r.s.on_commit(60)
    wait_until(lambda: r.s.retention.get("ackedPosition") == 60, what=lambda: f"the ack answered: {r.s.retention}")
    assert r.s.retention["retainedRecords"] == 40
    r.request(10_000)
    r.wait_done(30)
    assert r.error is None and [x["id"] for x in r.items] == list(range(ROWS))
    said = [rec.getMessage() for rec in caplog.records]
    assert said == [], f"the connection did not go on as before: {said}"  # e.g. dropped, then resumed
    r.s.on_commit(ROWS)


_OLD_READER = r"""
import json, sys, threading
import rs_spark
from rs_spark import net

address, token, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
pub = net.connect(address, token=token).resumable()
got, errors, done = [], [], threading.Event()


class Reader:
    def on_subscribe(self, s):
        self.s = s
        s.request(rows + 10)

    def on_next(self, x):
        got.append(x)
        if len(got) % 100 == 0:
            self.s.on_commit(len(got))  # the last one, at the end, closes the connection

    def on_error(self, e):
        errors.append(f"{type(e).__name__}: {e}")
        done.set()

    def on_complete(self):
        done.set()


r = Reader()
pub.subscribe(r)
ended = done.wait(60)
print(json.dumps({"package": rs_spark.__file__, "ended": ended, "errors": errors, "got": got,
                  "window": pub.stated_window}), flush=True)
sys.stdin.read()  # until the test has seen what it needs on the endpoint's side
"""


def test_an_earlier_reader_of_todays_endpoint_ignores_the_new_entry_and_reads_acknowledges_and_ends(old_build):
    pub = Counting(ROWS)
    server = net.serve(pub, name="nums", token=TOKEN)
    reader = None
    try:
        reader = OldProcess(old_build, _OLD_READER, server.address, TOKEN, str(ROWS))
        said = reader.said
        assert said["ended"] and said["errors"] == [], said["errors"]
        assert said["got"] == list(range(ROWS))
        # it read the window push that carries the new entry (it knows the window), and ignored the entry
        assert said["window"] == 600.0, said["window"]
        wait_until(lambda: pub.commits == list(range(100, ROWS + 1, 100)), what=lambda: f"the commits: {pub.commits}")
        wait_until(lambda: server.stats().streams == (), what="the finished stream to end")
        stats = server.stats()
        assert (stats.expired_streams, stats.lost_records, stats.discarded_records) == (0, 0, 0), stats
    finally:
        if reader is not None:
            err = reader.close()
            assert "Traceback" not in err, err[-5000:]
        server.stop()
