"""The one duration grammar of every duration option, in every format (``reactive``, ``reactive-rt``,
both sinks) and language: the JVM shim's ``rsspark.rt.Durations`` implements the same rules, and
tests/realtime/test_durations.py parses one list of strings on both sides and compares.

A duration is one or more ``<number><unit>`` terms (``500ms``, ``30s``, ``10min``, ``1h``,
``1h 30min``), units in short form or Spark's interval words (``10 seconds``, ``1 minute``,
``2 hours``, ``500 milliseconds``; an ``interval`` in front is allowed, as Spark's
``trigger(processingTime=...)`` allows). A bare number is refused: its unit was ambiguous
(milliseconds in ``reactive``, seconds in ``reactive-rt`` before 0.x), so it must be written out.
"""

from __future__ import annotations

import re
from typing import Any

from .options import OptionError

UNITS: dict[str, float] = {}
"""Every accepted unit word -> milliseconds per unit (the JVM's ``Durations.UNITS`` is the same)."""

_UNIT_WORDS: tuple[tuple[float, tuple[str, ...]], ...] = (
    (0.001, ("us", "micro", "micros", "microsecond", "microseconds")),
    (1.0, ("ms", "milli", "millis", "millisecond", "milliseconds", "msec", "msecs")),
    (1000.0, ("s", "sec", "secs", "second", "seconds")),
    (60_000.0, ("m", "min", "mins", "minute", "minutes")),
    (3_600_000.0, ("h", "hr", "hrs", "hour", "hours")),
    (86_400_000.0, ("d", "day", "days")),
    (604_800_000.0, ("w", "week", "weeks")),
)
for _ms, _words in _UNIT_WORDS:
    for _w in _words:
        UNITS[_w] = _ms

MINIMUMS: dict[str, tuple[float, str, str]] = {
    "pollTimeout": (10.0, "10ms", "planning waits this long for requested records; shorter makes it a busy loop"),
    "maxTriggerDelay": (
        10.0,
        "10ms",
        "a smaller batch runs after this long; shorter makes minRecordsPerTrigger run every batch at once",
    ),
    "resumeWindow": (
        1000.0,
        "1s",
        "a restarted query reconnects after seconds; a shorter window ends the zero-loss guarantee at the "
        "first restart",
    ),
    "commitTimeout": (1000.0, "1s", "a commit waits for the Subscriber's demand; shorter fails healthy commits"),
    "ackTimeout": (1000.0, "1s", "a task's end waits for the Subscriber; shorter fails healthy tasks"),
    "connectTimeout": (100.0, "100ms", "a connection takes a round trip and a handshake"),
    "keepSubscriberOnAbort": (
        1000.0,
        "1s",
        "a restarted query needs longer than that to resume; use false, true (10min) or a window of at least 1s, "
        "e.g. '10min'",
    ),
    "keepaliveInterval": (100.0, "100ms", "KEEPALIVE frames more often than that cost without telling more"),
    "keepaliveTimeout": (
        1000.0,
        "1s",
        "a busy but healthy peer may answer a second late; shorter takes it for lost and reconnects",
    ),
    "reconnectBackoff": (10.0, "10ms", "tries closer together make a busy loop against an unreachable endpoint"),
    "reconnectBackoffMax": (10.0, "10ms", "tries closer together make a busy loop against an unreachable endpoint"),
    "reconnectTimeout": (1000.0, "1s", "reconnecting takes a few round trips; shorter fails at the first blip"),
}
"""Option name -> (least milliseconds, that bound as written, why): the same on the JVM."""

_TERM = re.compile(r"([0-9]+(?:\.[0-9]+)?) *([a-z]+)")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
EXAMPLES = "'500ms', '30s', '10min', '1h' or '10 seconds'"


def duration_ms(name: str, value: Any) -> float:
    """Option ``name``'s ``value`` in milliseconds; :class:`~rs_spark.spark.options.OptionError` says
    what to write."""
    text = str(value).strip().lower()
    shown = f"option {name}='{value}'"
    if _NUMBER.fullmatch(text):
        raise OptionError(
            f"{shown}: a duration needs a unit, e.g. '{text}s' or '{text}ms' (units: ms, s, min, h, d or "
            "Spark's words: milliseconds, seconds, minutes, hours, days)"
        )
    body = text[len("interval") :].strip() if text.startswith("interval ") else text
    if not body:
        raise OptionError(f"{shown} is not a duration; write e.g. {EXAMPLES}")
    total, pos = 0.0, 0
    while pos < len(body):  # term by term, as the JVM's Durations.millis does
        m = _TERM.match(body, pos)
        if m is None:
            raise OptionError(f"{shown} is not a duration; write e.g. {EXAMPLES}")
        per = UNITS.get(m.group(2))
        if per is None:
            raise OptionError(f"{shown}: unknown unit {m.group(2)!r}; write e.g. {EXAMPLES}")
        total += float(m.group(1)) * per
        pos = m.end()
        while pos < len(body) and body[pos] == " ":
            pos += 1
    _check_minimum(name, shown, total)
    return total


def parse_duration(name: str, value: Any) -> float:
    """Option ``name``'s ``value`` in seconds (see :func:`duration_ms`)."""
    return duration_ms(name, value) / 1000.0


def _check_minimum(name: str, shown: str, total: float) -> None:
    bound = MINIMUMS.get(name)
    if bound is not None and total < bound[0]:
        raise OptionError(f"{shown} is below its minimum of {bound[1]}: {bound[2]}")


__all__ = ["duration_ms", "parse_duration", "UNITS", "MINIMUMS", "EXAMPLES"]
