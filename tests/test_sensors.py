"""The demo's sensor feed (rs_spark.examples.sensors): a push source on its own clock whose records
follow from its options and their number, so it is Replayable (in this process and in another)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta

import pytest

from rs_spark.examples.sensors import DEFAULT_ORIGIN, SensorFeed, parse_origin, readings
from rs_spark.streams.subscribers import to_list
from rs_spark.streams.types import Publisher, Replayable

from .waits import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A fast feed: 100 records per 10 ms cycle then a burst of 40 at one instant, 2000 records in all.
FAST = {
    "sensors": 5,
    "rate": 10_000,
    "burst": 40,
    "burst_every": 0.01,
    "seed": 7,
    "origin": "2026-05-01T12:00:00Z",
    "total": 2000,
}


class Recorder:
    """Requests nothing until told; records what arrives and how the stream ended."""

    def __init__(self) -> None:
        self.items: list[dict] = []
        self.done = threading.Event()
        self.error: BaseException | None = None

    def on_subscribe(self, s) -> None:
        self.s = s

    def on_next(self, item) -> None:
        self.items.append(item)

    def on_error(self, e) -> None:
        self.error = e
        self.done.set()

    def on_complete(self) -> None:
        self.done.set()


def _from(feed: SensorFeed, position: int) -> list[dict]:
    r = Recorder()
    feed.subscribe_at(r, position)
    r.s.request(1 << 40)
    assert r.done.wait(30) and r.error is None, r.error
    return r.items


def _jsonable(records: list[dict]) -> list[dict]:
    return [dict(r, ts=r["ts"].isoformat()) for r in records]


CHILD = """
import json, sys
from rs_spark.examples.sensors import readings
from rs_spark.streams.subscribers import to_list
class From:
    def __init__(self, feed, p): self.feed, self.p = feed, p
    def subscribe(self, s): self.feed.subscribe_at(s, self.p)
options, p = json.loads(sys.argv[1]), int(sys.argv[2])
print(json.dumps([dict(r, ts=r["ts"].isoformat()) for r in to_list(From(readings(options), p), timeout=30)]))
"""


def test_the_feed_is_a_replayable_publisher_and_subscribe_starts_at_record_zero():
    feed = readings(FAST)
    assert isinstance(feed, Publisher) and isinstance(feed, Replayable)
    records = to_list(feed, timeout=30)
    assert [r["seq"] for r in records] == list(range(2000))
    assert records == [feed.record(n) for n in range(2000)]


def test_two_subscriptions_from_the_same_position_get_the_same_records_in_this_process_and_another():
    p = 1234
    here = _from(readings(FAST), p)
    again = _from(readings(dict(FAST)), p)  # another feed object with the same options
    assert [r["seq"] for r in here] == list(range(p, 2000))
    assert again == here
    child = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(FAST), str(p)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED="123"),  # hash randomisation must not matter
    )
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout) == _jsonable(here)


def test_records_follow_the_schedule_from_the_origin_with_bursts_at_one_instant():
    feed = readings(FAST)
    origin = datetime(2026, 5, 1, 12, tzinfo=UTC)
    ts = [feed.record(n)["ts"] for n in range(280)]
    assert ts[0] == origin and ts[1] - ts[0] == timedelta(microseconds=100)  # 10,000 records/s
    assert ts[99] == origin + timedelta(microseconds=9900)
    assert set(ts[100:140]) == {origin + timedelta(milliseconds=10)}  # the burst ends the first cycle
    assert ts[140] == origin + timedelta(milliseconds=10)  # the second cycle starts there
    assert ts == sorted(ts)
    r = feed.record(5)
    assert r["sensor"].startswith("sensor-") and 0 <= int(r["sensor"][7:]) < 5 and 20 <= r["temperature"] < 30


def test_the_default_origin_is_fixed_and_another_seed_gives_other_records():
    assert readings({}).record(0)["ts"] == datetime.fromtimestamp(parse_origin(DEFAULT_ORIGIN) / 1e6, UTC)
    assert readings({}).record(10) == readings({"seed": "42"}).record(10)
    assert [readings({}).record(n) for n in range(50)] != [readings({"seed": 1}).record(n) for n in range(50)]


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("2026-05-01T12:00:00Z", datetime(2026, 5, 1, 12, tzinfo=UTC)),
        ("2026-05-01T14:00:00+02:00", datetime(2026, 5, 1, 12, tzinfo=UTC)),
        ("2026-05-01T12:00:00", datetime(2026, 5, 1, 12, tzinfo=UTC)),  # naive: UTC
        ("1777636800.5", datetime(2026, 5, 1, 12, 0, 0, 500000, tzinfo=UTC)),
    ],
)
def test_publisher_origin_takes_iso_8601_or_epoch_seconds(raw, expected):
    assert readings({"origin": raw}).record(0)["ts"] == expected


@pytest.mark.parametrize(
    "options, words",
    [
        ({"rate": "fast"}, "option publisher.rate='fast' is not a number"),
        ({"sensors": 0}, "option publisher.sensors=0 must be >= 1"),
        ({"origin": "yesterday"}, "option publisher.origin='yesterday' is neither ISO 8601"),
        ({"rate": 0, "burst": 0}, "are both 0: the feed would never emit"),
    ],
)
def test_bad_options_say_which_option_and_why(options, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        readings(options)


def test_a_bad_position_reaches_on_error_saying_what_is_needed():
    r = Recorder()
    readings(FAST).subscribe_at(r, -1)
    assert r.done.wait(10)
    assert "subscribe_at(position=-1): a record number >= 0 is needed" in str(r.error)


def test_a_position_past_total_completes_at_once():
    assert _from(readings(FAST), 5000) == []


def test_a_full_buffer_drops_the_oldest_readings_and_counts_them(caplog):
    feed = readings(dict(FAST, **{"buffer": 10, "total": 1000}))
    r = Recorder()
    with caplog.at_level("WARNING", logger="rs_spark.examples.sensors"):
        feed.subscribe_at(r, 0)  # no demand yet: the clock keeps going, the buffer keeps the newest 10
        wait_until(lambda: feed.dropped == 990, "the feed to drop all but the last 10 readings")
    r.s.request(100)
    assert r.done.wait(10) and r.error is None
    assert [x["seq"] for x in r.items] == list(range(990, 1000))
    assert "10 readings wait for demand (option publisher.buffer), so the oldest are dropped" in caplog.text
