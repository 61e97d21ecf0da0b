"""Subscribers for the sink tests: in-process recorders and factories for executor tasks."""

from __future__ import annotations

import json
import os
import threading


class Recorder:
    """Requests ``batch`` at a time (re-requesting when they arrive) and records everything:
    elements, the most demand ever outstanding, the batch id seen per element, terminal signals."""

    def __init__(self, batch=2**62, cancel_after=None, raise_at=None, delay=0.0, bad_request_after=None):
        self.bad_request_after = bad_request_after
        self.items = []
        self.batch_ids = []
        self.batch = batch
        self.cancel_after = cancel_after
        self.raise_at = raise_at
        self.delay = delay
        self.error = None
        self.completed = False
        self.done = threading.Event()
        self.max_outstanding = 0
        self._outstanding = 0
        self.s = None
        self.signals_after_end = 0

    def on_subscribe(self, s):
        self.s = s
        self._request(self.batch)

    def _request(self, n):
        self._outstanding += n
        self.max_outstanding = max(self.max_outstanding, self._outstanding)
        self.s.request(n)

    def on_next(self, x):
        if self.done.is_set():
            self.signals_after_end += 1
        self._outstanding -= 1
        assert self._outstanding >= 0, "more on_next than requested (rule 1.1)"
        if self.raise_at is not None and len(self.items) == self.raise_at:
            raise RuntimeError(f"subscriber refuses element {self.raise_at}")
        self.items.append(x)
        self.batch_ids.append(getattr(self.s, "batch_id", None))
        if self.delay:
            threading.Event().wait(self.delay)
        if self.cancel_after is not None and len(self.items) == self.cancel_after:
            self.s.cancel()
            self.done.set()
            return
        if self.bad_request_after is not None and len(self.items) == self.bad_request_after:
            self.s.request(0)  # illegal (rule 3.9)
            return
        if self._outstanding == 0:
            self._request(self.batch)

    def on_error(self, e):
        self.error = e
        self.done.set()

    def on_complete(self):
        self.completed = True
        self.done.set()


def to_files(options):
    """Factory mode: each task's subscriber appends its elements as JSON lines to a file of its own
    under ``subscriber.dir``, requesting ``subscriber.batch`` at a time."""
    directory = options["subscriber.dir"]
    batch = int(options.get("subscriber.batch", 100))

    class ToFile:
        def on_subscribe(self, s):
            self.s = s
            self.n = 0
            self.f = open(os.path.join(directory, f"task-{os.getpid()}-{id(self)}.jsonl"), "w")
            s.request(batch)

        def on_next(self, x):
            self.f.write(json.dumps(x) + "\n")
            self.n += 1
            if self.n % batch == 0:
                self.s.request(batch)

        def on_error(self, e):
            self.f.write(json.dumps({"error": str(e)}) + "\n")
            self.f.close()

        def on_complete(self):
            self.f.write(json.dumps({"complete": True}) + "\n")
            self.f.close()

    return ToFile()


def raising(options):
    """Factory mode: a subscriber that raises in on_next."""

    class Raising:
        def on_subscribe(self, s):
            s.request(10)

        def on_next(self, x):
            raise ValueError("the task's subscriber refuses rows")

        def on_error(self, e):
            pass

        def on_complete(self):
            pass

    return Raising()


def cancelling(options):
    """Factory mode: takes ``subscriber.after`` elements, then cancels."""
    after = int(options.get("subscriber.after", 3))

    class Cancelling:
        def on_subscribe(self, s):
            self.s, self.n = s, 0
            s.request(after)

        def on_next(self, x):
            self.n += 1
            if self.n == after:
                self.s.cancel()

        def on_error(self, e):
            pass

        def on_complete(self):
            pass

    return Cancelling()
