"""Errors rs_spark raises for spec violations, and the one place dropped errors are reported."""

from __future__ import annotations

import logging

log = logging.getLogger("rs_spark.streams")


class SpecViolation(RuntimeError):
    """A party broke a Reactive Streams rule; ``rule`` is its number, e.g. ``"1.1"``."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"{message} (Reactive Streams rule {rule})")
        self.rule = rule


class BufferOverflowError(RuntimeError):
    """A push source produced more than its bounded buffer holds and its strategy is ERROR."""


def null_element_error(where: str) -> TypeError:
    """The ``TypeError`` for a ``None`` element or argument (rules 1.9 and 2.13)."""
    return TypeError(
        f"{where} is None: Reactive Streams forbids None elements and subscribers (rules 1.9, 2.13). "
        "Wrap optional values (e.g. in a tuple or dict) instead of sending None."
    )


def throw_if_fatal(error: BaseException) -> None:
    """Re-raise ``error`` when no Subscriber may receive it (as RxJava's ``Exceptions.throwIfFatal``).

    Fatal means not an :class:`Exception`: ``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``,
    ``asyncio.CancelledError`` and any other ``BaseException`` asking the thread or program to stop.
    Every place that turns an exception from user code into ``on_error`` (or a log line) calls this
    first, so Ctrl-C and ``sys.exit()`` stop the program instead of becoming a stream error.
    """
    if not isinstance(error, Exception):
        raise error


def report_dropped(error: BaseException, context: str) -> None:
    """Report an error that has no one left to receive it (rule 2.13: 'raise it in a fashion
    adequate for the runtime'): it goes to the ``rs_spark.streams`` logger at ERROR level."""
    log.error("%s: %s: %s", context, type(error).__name__, error, exc_info=error)


__all__ = ["SpecViolation", "BufferOverflowError", "null_element_error", "throw_if_fatal", "report_dropped", "log"]
