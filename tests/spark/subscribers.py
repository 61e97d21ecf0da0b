"""Subscriber factories for the sink tests' executor tasks (option ``subscriber``); the in-process
recorder is tests/subscribers.py."""

from __future__ import annotations

import json
import os


def to_files(options):
    """Factory mode: each task's subscriber appends its elements as JSON lines to a file of its own
    under ``subscriber.dir``, requesting ``subscriber.batch`` at a time."""
    directory = options["dir"]
    batch = int(options.get("batch", 100))

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
    after = int(options.get("after", 3))

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


RECORDED: list[dict] = []


def recording(options):
    """Records the options it was built with (in this process) and takes every element."""
    RECORDED.append(dict(options))

    class Taker:
        def on_subscribe(self, s):
            s.request(1 << 30)

        def on_next(self, item):
            pass

        def on_error(self, exc):
            pass

        def on_complete(self):
            pass

    return Taker()
