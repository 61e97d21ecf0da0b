"""A micro-batch's commit whose delivery hub is unreachable (tests/faultrelay.py: a real relay that
black-holes or resets): the commit is tried again, spaced by the backoff, for up to
reconnectTimeout, and the hub's ledger keeps every row from reaching the Subscriber twice, even when
the hub delivered the rows and its answer was what the outage lost. Called as Spark's commit worker
calls it (rs_spark.spark.sink.writer.deliver), without a Spark session."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pyarrow as pa
import pytest

from rs_spark.delivery import DeliveryHub, SinkError
from rs_spark.spark.sink.options import SinkOptions
from rs_spark.spark.sink.staging import stage
from rs_spark.spark.sink.writer import deliver
from tests.faultrelay import FaultRelay
from tests.waits import wait_until

FAST = {
    "keepaliveInterval": "200ms",
    "keepaliveTimeout": "1s",
    "reconnectBackoff": "50ms",
    "reconnectBackoffMax": "500ms",
    "reconnectTimeout": "30s",
}


class _Taker:
    """Requests ``first`` rows, then more only when the test says."""

    def __init__(self, first: int) -> None:
        self.ids: list[int] = []
        self.first = first
        self.s: Any = None

    def on_subscribe(self, s: Any) -> None:
        self.s = s
        s.request(self.first)

    def on_next(self, row: Any) -> None:
        self.ids.append(row["id"])

    def on_error(self, e: BaseException) -> None:
        pass

    def on_complete(self) -> None:
        pass


@pytest.fixture
def hub_behind_relay():
    made: list[Any] = []

    def start(sub: Any) -> tuple[DeliveryHub, FaultRelay, str]:
        hub = DeliveryHub(sub)
        address = hub.serve()
        relay = FaultRelay(address)
        made.extend([relay, hub])
        return hub, relay, relay.address(address)

    yield start
    for x in made:
        x.close() if isinstance(x, FaultRelay) else x.stop()


def _staged(lo: int, hi: int, opts: SinkOptions) -> list[Any]:
    return [stage([pa.record_batch([pa.array(range(lo, hi), pa.int64())], names=["id"])], opts)]


def _commit_in_background(messages: list[Any], batch_id: int, opts: SinkOptions) -> tuple[threading.Thread, list]:
    failed: list[BaseException] = []

    def run() -> None:
        try:
            deliver(messages, batch_id, opts)
        except BaseException as exc:
            failed.append(exc)

    t = threading.Thread(target=run)
    t.start()
    return t, failed


@pytest.mark.parametrize("fault", ["black_hole", "reset"])
def test_a_commit_waits_for_an_unreachable_hub_and_delivers_every_row_once(hub_behind_relay, fault):
    sub = _Taker(10**6)
    hub, relay, endpoint = hub_behind_relay(sub)
    opts = SinkOptions.parse({"endpoint": endpoint, **FAST})
    deliver(_staged(0, 100, opts), 0, opts)
    getattr(relay, fault)()
    t, failed = _commit_in_background(_staged(100, 200, opts), 1, opts)
    time.sleep(3.0)  # the outage: three keepalive lifetimes (time passing is the fault, not a synchronisation)
    assert t.is_alive() and not failed, failed
    relay.heal()
    t.join(30)
    assert not t.is_alive() and not failed, failed
    assert sub.ids == list(range(200))


def test_a_commit_whose_answer_the_outage_lost_is_answered_duplicate_and_delivers_nothing_twice(
    hub_behind_relay, caplog
):
    sub = _Taker(150)
    hub, relay, endpoint = hub_behind_relay(sub)
    opts = SinkOptions.parse({"endpoint": endpoint, **FAST})
    deliver(_staged(0, 100, opts), 0, opts)
    with caplog.at_level(logging.INFO, logger="rs_spark"):
        t, failed = _commit_in_background(_staged(100, 200, opts), 1, opts)
        wait_until(lambda: len(sub.ids) == 150, "the first 50 rows of micro-batch 1")
        relay.black_hole()
        sub.s.request(10**6)  # the hub delivers the rest now, and answers into the black hole
        wait_until(lambda: len(sub.ids) == 200, "the rest of micro-batch 1")
        assert t.is_alive(), "the commit heard its answer through the black hole"
        tries = relay.accepted
        relay.reset()  # the answer, held in the hole, is lost with the connection
        relay.heal()
        t.join(30)
        assert not t.is_alive() and not failed, failed
    assert sub.ids == list(range(200))
    assert hub.ledger.batch_id == 1 and hub.ledger.complete
    assert relay.accepted > tries >= 2, "the commit was not tried again after its answer was lost"
    answers = [r.getMessage() for r in caplog.records if r.name == "rs_spark.sink"]
    assert any("micro-batch 1 (100 rows)" in m and "was delivered before" in m for m in answers), (
        "the try after the lost answer was not answered duplicate"
    )


def test_a_hub_unreachable_longer_than_reconnect_timeout_fails_the_commit_saying_so(hub_behind_relay):
    sub = _Taker(10**6)
    hub, relay, endpoint = hub_behind_relay(sub)
    opts = SinkOptions.parse({"endpoint": endpoint, **FAST, "reconnectTimeout": "2s"})
    relay.reset()
    started = time.monotonic()
    with pytest.raises(SinkError, match=r"the hub was unreachable for reconnectTimeout=2 s") as err:
        deliver(_staged(0, 10, opts), 0, opts)
    assert time.monotonic() - started < 15
    assert "token" not in str(err.value).replace("token=***", "")
    assert sub.ids == []
