"""Fatal errors (KeyboardInterrupt, SystemExit: anything that is not an Exception) raised by user code
are never turned into ``on_error`` or a log line: they propagate out of the call that ran that code, on
the calling thread, as RxJava and Reactor do with ``Exceptions.throwIfFatal``. Plain exceptions keep
their handling (rule 2.13: cancel and report; a failing function: ``on_error``)."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from rs_spark import streams as rs
from rs_spark.streams.drain import DrainSubscription
from rs_spark.streams.scheduler import Scheduler

from .strict import StrictSubscriber
from .test_chunked_delivery import ChunkSubscriber

FATAL = [KeyboardInterrupt, SystemExit]


def _pushed(n):
    """create(): n elements buffered at subscribe time, delivered by the drain of a later request."""

    def run(em):
        for i in range(n):
            em.next(i)
        em.complete()

    return rs.create(run, buffer_size=max(1, n))


SOURCES = {
    "range_": lambda n: rs.range_(n),  # IteratorSubscription
    "create": _pushed,  # QueueSubscription
    "piped_unfused": lambda n: _pushed(n).pipe(rs.map(lambda x: x)),  # a Stage in between
    "batch": lambda n: rs.range_(n).pipe(rs.map(lambda x: x), rs.batch(1)),  # the batch's QueueSubscription
}


class RaisingOnNext(StrictSubscriber):
    def __init__(self, error_type, **kw):
        super().__init__(**kw)
        self.error_type = error_type

    def on_next(self, item):
        super().on_next(item)
        raise self.error_type("raised by on_next")


class _Logged:
    """The errors rs_spark reports as dropped (its ``rs_spark.streams`` logger), read when asked."""

    def __init__(self, caplog):
        self._caplog = caplog

    def __bool__(self):
        return bool(self.messages())

    def messages(self):
        return [r.getMessage() for r in self._caplog.records if r.name == "rs_spark.streams"]


@pytest.fixture
def errors_logged(caplog):
    with caplog.at_level(logging.ERROR, logger="rs_spark.streams"):
        yield _Logged(caplog)


@pytest.mark.parametrize("fatal", FATAL)
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_fatal_error_in_on_next_propagates_out_of_the_request_that_drove_it_and_is_not_on_error(
    fatal, source, errors_logged
):
    s = RaisingOnNext(fatal)
    SOURCES[source](5).subscribe(s)
    caller = threading.current_thread()
    with pytest.raises(fatal) as info:
        s.request(3)
    assert info.value.__traceback__ is not None and threading.current_thread() is caller
    assert len(s.items) == 1  # nothing was delivered after the stop
    assert s.error is None and not s.completed  # not delivered as on_error
    assert not errors_logged  # nor reported as a dropped error
    s.assert_clean()


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_spec_2_13_plain_exception_in_on_next_still_cancels_and_is_reported_not_raised(source, errors_logged):
    s = RaisingOnNext(ValueError)
    SOURCES[source](5).subscribe(s)
    s.request(3)  # returns normally
    s.request(3)  # cancelled: nothing more arrives
    assert len(s.items) == 1
    assert s.error is None and not s.completed  # rule 2.13: no on_error to the subscriber that broke the contract
    assert any("2.13" in m for m in errors_logged.messages())


@pytest.mark.parametrize("fatal", FATAL)
def test_fatal_error_in_on_next_many_propagates_out_of_request(fatal, errors_logged):
    class Raising(ChunkSubscriber):
        def on_next_many(self, items):
            super().on_next_many(items)
            raise fatal("raised by on_next_many")

    s = Raising()
    rs.range_(100).subscribe(s)
    with pytest.raises(fatal):
        s.request(10)
    assert s.items == list(range(10)) and s.error is None and not errors_logged


@pytest.mark.parametrize("chunked", [False, True], ids=["on_next", "on_next_many"])
@pytest.mark.parametrize("fatal", FATAL)
def test_fatal_error_from_the_source_iterator_propagates_out_of_request_and_is_not_on_error(
    fatal, chunked, errors_logged
):
    def gen():
        yield 1
        raise fatal("raised by the source")

    s = ChunkSubscriber() if chunked else StrictSubscriber()
    rs.defer(gen).subscribe(s)
    with pytest.raises(fatal):
        s.request(5)
    assert s.error is None and not s.completed and not errors_logged
    if not chunked:
        assert s.items == [1]  # a chunk pulled when the stop came is not delivered: only the stop matters


def test_plain_exception_from_the_source_iterator_still_becomes_on_error():
    def gen():
        yield 1
        raise KeyError("raised by the source")

    s = StrictSubscriber()
    rs.defer(gen).subscribe(s)
    s.request(5)
    assert s.items == [1] and isinstance(s.error, KeyError)


def _fn_raising(error_type):
    def fn(x):
        raise error_type("raised by the function")

    return fn


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "stage"])
@pytest.mark.parametrize("op", [rs.map, rs.filter])
@pytest.mark.parametrize("fatal", FATAL)
def test_fatal_error_from_an_operator_function_propagates_out_of_request_and_is_not_on_error(
    fatal, op, fused, errors_logged
):
    source = rs.range_(5) if fused else _pushed(5)
    s = StrictSubscriber()
    source.pipe(op(_fn_raising(fatal))).subscribe(s)
    with pytest.raises(fatal):
        s.request(1)
    assert s.error is None and not errors_logged


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "stage"])
@pytest.mark.parametrize("op", [rs.map, rs.filter])
def test_plain_exception_from_an_operator_function_still_becomes_on_error(op, fused):
    source = rs.range_(5) if fused else _pushed(5)
    s = StrictSubscriber()
    source.pipe(op(_fn_raising(ValueError))).subscribe(s)
    s.request(1)
    assert isinstance(s.error, ValueError)


class RaisingOnSubscribe(StrictSubscriber):
    def __init__(self, error_type):
        super().__init__()
        self.error_type = error_type

    def on_subscribe(self, subscription):
        super().on_subscribe(subscription)
        raise self.error_type("raised by on_subscribe")


@pytest.mark.parametrize("fatal", FATAL)
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_fatal_error_in_on_subscribe_propagates_out_of_subscribe(fatal, source, errors_logged):
    s = RaisingOnSubscribe(fatal)
    with pytest.raises(fatal):
        SOURCES[source](3).subscribe(s)
    assert s.items == [] and s.error is None and not errors_logged


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_spec_2_13_plain_exception_in_on_subscribe_still_cancels_and_is_reported(source, errors_logged):
    s = RaisingOnSubscribe(ValueError)
    SOURCES[source](3).subscribe(s)  # returns normally
    s.request(3)  # the subscription was cancelled: a NOP
    assert s.items == [] and s.error is None
    assert any("on_subscribe" in m for m in errors_logged.messages())


class RaisingOnComplete(StrictSubscriber):
    def on_complete(self):
        super().on_complete()
        raise SystemExit("raised by on_complete")


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_fatal_error_in_on_complete_propagates_out_of_the_request_that_ended_the_stream(source, errors_logged):
    s = RaisingOnComplete()
    SOURCES[source](2).subscribe(s)
    with pytest.raises(SystemExit):
        s.request(5)
    assert s.completed and not errors_logged


def test_fatal_error_in_on_error_propagates_out_of_the_request_that_failed_the_stream(errors_logged):
    class Raising(StrictSubscriber):
        def on_error(self, error):
            super().on_error(error)
            raise KeyboardInterrupt

    s = Raising()
    rs.range_(3).pipe(rs.map(_fn_raising(ValueError))).subscribe(s)
    with pytest.raises(KeyboardInterrupt):
        s.request(1)
    assert isinstance(s.error, ValueError) and not errors_logged


@pytest.mark.parametrize("fatal", FATAL)
def test_fatal_error_in_the_create_function_propagates_out_of_subscribe_and_is_not_on_error(fatal):
    s = StrictSubscriber(initial_request=1)

    def run(em):
        em.next("a")
        raise fatal("raised by the create function")

    with pytest.raises(fatal):
        rs.create(run).subscribe(s)
    assert s.items == ["a"] and s.error is None


def test_plain_exception_in_the_create_function_still_becomes_on_error():
    s = StrictSubscriber()
    rs.create(lambda em: 1 / 0).subscribe(s)
    assert isinstance(s.error, ZeroDivisionError)


def test_fatal_error_in_create_on_drop_propagates_out_of_emitter_next(errors_logged):
    box = {}

    def on_drop(x):
        raise KeyboardInterrupt

    rs.create(lambda em: box.setdefault("em", em), "drop_newest", buffer_size=1, on_drop=on_drop).subscribe(
        StrictSubscriber()
    )
    assert box["em"].next(1)
    with pytest.raises(KeyboardInterrupt):
        box["em"].next(2)  # the buffer is full: dropped, and on_drop stops the program
    assert not errors_logged


def test_fatal_error_in_create_on_cancel_propagates_out_of_cancel(errors_logged):
    s = StrictSubscriber()

    def run(em):
        em.on_cancel(_raise_system_exit)

    rs.create(run).subscribe(s)
    with pytest.raises(SystemExit):
        s.subscription.cancel()
    assert not errors_logged


def _raise_system_exit():
    raise SystemExit("raised by an on_cancel callback")


@pytest.mark.parametrize("fatal", FATAL)
def test_fatal_error_in_a_defer_factory_propagates_out_of_subscribe_and_is_not_on_error(fatal):
    s = StrictSubscriber()

    def factory():
        raise fatal("raised by the factory")

    with pytest.raises(fatal):
        rs.defer(factory).subscribe(s)
    assert s.subscription is None and s.error is None


def test_fatal_error_closing_a_cancelled_generator_propagates_out_of_cancel(errors_logged):
    def gen():
        try:
            yield from range(10)
        finally:
            raise KeyboardInterrupt  # e.g. Ctrl-C while the generator cleans up

    s = StrictSubscriber(initial_request=1)
    rs.defer(gen).subscribe(s)
    with pytest.raises(KeyboardInterrupt):
        s.subscription.cancel()
    assert not errors_logged


def test_fatal_error_in_a_callback_subscribers_on_next_propagates_out_of_subscribe():
    def on_next(x):
        raise KeyboardInterrupt

    errors = []
    with pytest.raises(KeyboardInterrupt):
        rs.subscribe_callbacks(rs.range_(3), on_next, on_error=errors.append)
    assert errors == []


def test_fatal_error_in_a_callback_subscribers_on_complete_propagates_and_the_stream_still_ends():
    sub = rs.CallbackSubscriber(lambda x: None, on_complete=_raise_system_exit)
    with pytest.raises(SystemExit):
        rs.range_(2).subscribe(sub)
    assert sub.done  # a thread waiting in wait() is not left waiting for ever
    sub.wait(0)


# pytest reports a thread ended by an exception; for SystemExit that ending is what this test checks
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_fatal_error_in_a_scheduled_action_ends_its_thread_and_later_actions_still_run(errors_logged):
    scheduler = Scheduler(name="rs-spark-test-timer")
    stopped = []

    def stop():
        stopped.append(threading.current_thread())
        raise SystemExit("raised by a timer action")

    ran = threading.Event()
    scheduler.schedule(0, stop)
    scheduler.schedule(0, ran.set)
    assert ran.wait(5), "the action after the fatal one did not run"
    stopped[0].join(5)
    assert not stopped[0].is_alive()  # SystemExit ended the thread it was raised on
    assert not errors_logged


# -- asyncio: CancelledError means "this task is being stopped", not a stream error ----------------------


class _SignalsOnTheLoop(StrictSubscriber):
    """Runs on the loop thread here: wakes the test coroutine at the first element and at the end."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.first = asyncio.Event()
        self.ended = asyncio.Event()

    def on_next(self, item):
        super().on_next(item)
        self.first.set()

    def on_error(self, error):
        super().on_error(error)
        self.ended.set()


def _stalling(closed):
    async def gen():
        try:
            yield 0
            await asyncio.Event().wait()  # never set: only a cancellation ends this
        finally:
            closed.set()

    return gen


def test_from_async_iterable_cancelled_by_its_loop_shutting_down_tells_the_subscriber_and_closes_the_source():
    closed = threading.Event()
    s = _SignalsOnTheLoop(initial_request=5)

    async def main():
        rs.from_async_iterable(_stalling(closed)).subscribe(s)
        await s.first.wait()
        # returning: asyncio.run cancels the pump task, which is still waiting for the source

    asyncio.run(main())
    assert s.items == [0]
    assert isinstance(s.error, RuntimeError) and "was cancelled before it ended" in str(s.error)
    assert isinstance(s.error.__cause__, asyncio.CancelledError)  # chained, not delivered itself
    assert closed.is_set()
    s.assert_clean()


def test_from_async_iterable_cancelled_by_the_subscriber_ends_its_task_cancelled_without_on_error():
    closed = threading.Event()
    s = _SignalsOnTheLoop(initial_request=5)

    async def main():
        rs.from_async_iterable(_stalling(closed)).subscribe(s)
        await s.first.wait()
        (pump,) = asyncio.all_tasks() - {asyncio.current_task()}
        s.subscription.cancel()
        await asyncio.wait([pump])
        return pump

    pump = asyncio.run(main())
    assert pump.cancelled()  # the CancelledError left the task: it ended cancelled, not swallowed
    assert closed.is_set()
    assert s.error is None and not s.completed
    s.assert_clean()


def test_aiterate_cancelled_while_waiting_raises_cancelled_error_in_its_task_and_the_stream_goes_on():
    box = {}

    async def main():
        it = rs.aiterate(rs.create(lambda em: box.setdefault("em", em)), prefetch=4)
        waiting = asyncio.create_task(it.__anext__())
        await asyncio.sleep(0)  # one loop turn: the task runs until it waits for an element
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        box["em"].next("after")  # the subscription was neither cancelled nor failed by that
        return await it.__anext__()

    assert asyncio.run(main()) == "after"


class _EndsThenRaises(DrainSubscription):
    """A source with a bug: it completes the stream, then raises from the same drain pass."""

    __slots__ = ()

    def _emit(self) -> None:
        self._complete()
        raise RuntimeError("a bug after the end")


def test_an_exception_raised_after_the_stream_ended_is_logged_not_swallowed(caplog):
    """Nobody can receive it any more (the Subscriber got its terminal signal): it is logged at
    ERROR with its traceback (rule 2.13's 'in a fashion adequate for the runtime'), not dropped."""
    sub = StrictSubscriber()
    s = _EndsThenRaises(sub)
    sub.on_subscribe(s)
    with caplog.at_level(logging.ERROR, logger="rs_spark.streams"):
        s.request(1)
    assert sub.completed and sub.error is None
    assert "_EndsThenRaises: raised after the stream ended: RuntimeError: a bug after the end" in caplog.text
