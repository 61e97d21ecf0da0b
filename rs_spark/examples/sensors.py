"""A bursty sensor feed: quiet stretches, then bursts far faster than a sink can take.

``readings(options)`` is a ``format("reactive")`` factory. Options (all optional, under the
``publisher.`` prefix): ``sensors`` (default 8), ``total`` (records, default unbounded),
``rate`` (records/s between bursts, default 200), ``burst`` (records per burst, default 5000),
``burst_every`` (seconds, default 3), ``seed``.

It is a real push source: a thread emits on its own clock through ``create`` with a bounded
buffer (``publisher.buffer``, default 50000, ``Overflow.DROP_OLDEST``); Spark's demand drains it.
"""

from __future__ import annotations

import random
import threading
import time
from datetime import UTC
from typing import Any

from ..streams import Overflow, create

SCHEMA = "sensor STRING, ts TIMESTAMP, temperature DOUBLE, seq LONG"


def readings(options: dict[str, Any]) -> Any:
    opt = {k.lower(): v for k, v in options.items()}

    def get(name: str, default: float) -> float:
        return float(opt.get(f"publisher.{name}", default))

    sensors = int(get("sensors", 8))
    total = int(get("total", -1))
    rate = get("rate", 200.0)
    burst = int(get("burst", 5000))
    burst_every = get("burst_every", 3.0)
    rng = random.Random(int(get("seed", 42)))

    def run(emitter: Any) -> None:
        stop = threading.Event()
        emitter.on_cancel(stop.set)

        def loop() -> None:
            from datetime import datetime

            seq = 0
            next_burst = time.monotonic() + burst_every
            while not stop.is_set() and (total < 0 or seq < total):
                now = time.monotonic()
                n = burst if now >= next_burst else 1
                if now >= next_burst:
                    next_burst = now + burst_every
                for _ in range(n):
                    if total >= 0 and seq >= total:
                        break
                    s = rng.randrange(sensors)
                    emitter.next(
                        {
                            "sensor": f"sensor-{s}",
                            "ts": datetime.now(UTC),
                            "temperature": round(20 + 5 * rng.random() + s, 2),
                            "seq": seq,
                        }
                    )
                    seq += 1
                if n == 1:
                    time.sleep(1.0 / rate)
            emitter.complete()

        threading.Thread(target=loop, name="sensor-feed", daemon=True).start()

    # A sensor cannot be slowed: bursts wait in a bounded buffer; if Spark fell so far behind that
    # it filled, the oldest readings would go first (counted by the emitter).
    return create(run, Overflow.DROP_OLDEST, buffer_size=int(get("buffer", 50_000)))
