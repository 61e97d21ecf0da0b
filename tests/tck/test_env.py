"""The kit's own machinery: timeouts, async errors from other threads, Latch, Promise, Receptacle."""

from __future__ import annotations

import threading
import time

import pytest

from rs_spark.tck import PublisherVerification
from rs_spark.tck.env import (
    END,
    BufferOverflow,
    Latch,
    ManualSubscriber,
    Promise,
    Receptacle,
    TCKFailure,
    TestEnvironment,
    Timeouts,
)

FAST = Timeouts(default=0.2, no_signals=0.05, poll=0.01, gc=0.2)


def _later(delay, fn, *args):
    t = threading.Timer(delay, fn, args)
    t.start()
    return t


def test_timeouts_default_to_the_jvm_values(monkeypatch):
    for v in (
        "RS_TCK_DEFAULT_TIMEOUT_MS",
        "RS_TCK_NO_SIGNALS_TIMEOUT_MS",
        "RS_TCK_POLL_TIMEOUT_MS",
        "RS_TCK_GC_TIMEOUT_MS",
    ):
        monkeypatch.delenv(v, raising=False)
    t = Timeouts()
    assert (t.default, t.no_signals, t.poll, t.gc) == (0.1, 0.1, 0.1, 0.3)


def test_timeouts_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("RS_TCK_DEFAULT_TIMEOUT_MS", "250")
    monkeypatch.setenv("RS_TCK_NO_SIGNALS_TIMEOUT_MS", "40")
    monkeypatch.setenv("RS_TCK_POLL_TIMEOUT_MS", "5")
    monkeypatch.setenv("RS_TCK_GC_TIMEOUT_MS", "700")
    t = Timeouts()
    assert (t.default, t.no_signals, t.poll, t.gc) == (0.25, 0.04, 0.005, 0.7)
    monkeypatch.delenv("RS_TCK_NO_SIGNALS_TIMEOUT_MS")
    assert Timeouts().no_signals == 0.25  # N defaults to T, as in the JVM


def test_bad_environment_value_is_reported(monkeypatch):
    monkeypatch.setenv("RS_TCK_DEFAULT_TIMEOUT_MS", "soon")
    with pytest.raises(ValueError, match="RS_TCK_DEFAULT_TIMEOUT_MS"):
        Timeouts()


def test_class_attributes_override_the_environment(monkeypatch):
    monkeypatch.setenv("RS_TCK_DEFAULT_TIMEOUT_MS", "250")
    monkeypatch.setenv("RS_TCK_GC_TIMEOUT_MS", "900")

    class V(PublisherVerification):
        __test__ = False
        default_timeout_ms = 70
        no_signals_timeout_ms = 20

    t = V()._timeouts()
    assert (t.default, t.no_signals, t.poll, t.gc) == (0.07, 0.02, 0.07, 0.9)


def test_base_verification_is_not_collected_but_subclasses_are():
    assert PublisherVerification.__test__ is False

    class Mine(PublisherVerification):
        pass

    assert Mine.__test__ is True


def test_expect_error_sees_an_error_recorded_on_another_thread():
    env = TestEnvironment(FAST)
    _later(0.02, env.record_error, ValueError("rule 3.9"))
    err = env.expect_error(ValueError, "request(0)")
    assert "3.9" in str(err)
    env.verify_no_async_errors(delay=False)


def test_expect_error_times_out_and_checks_the_type():
    env = TestEnvironment(FAST)
    t0 = time.monotonic()
    with pytest.raises(TCKFailure, match="no ValueError"):
        env.expect_error(ValueError, "x")
    assert time.monotonic() - t0 >= 0.15  # it waited (about) its default timeout before failing
    env.record_error(KeyError("k"))
    with pytest.raises(TCKFailure, match="expected ValueError, got KeyError"):
        env.expect_error(ValueError, "x")


def test_flop_from_a_thread_fails_verify():
    env = TestEnvironment(FAST)
    threading.Thread(target=env.flop, args=("rule 1.7: boom",)).start()
    with pytest.raises(TCKFailure, match="rule 1.7"):
        env.verify_no_async_errors()
    assert isinstance(env.drop_async_error(), TCKFailure)
    env.record_error(RuntimeError("odd"))
    with pytest.raises(TCKFailure, match="async error during the test: RuntimeError"):
        env.verify_no_async_errors(delay=False)


def test_latch_and_promise():
    env = TestEnvironment(FAST)
    latch = Latch(env)
    latch.assert_open("open")
    _later(0.02, latch.close)
    assert latch.expect_close("closed")
    latch.reopen()
    assert not latch.expect_close("closed again")
    assert "within" in str(env.drop_async_error())
    p: Promise[int] = Promise(env)
    _later(0.02, p.complete, 7)
    assert p.expect_completion("value") == 7
    p.complete(8)
    assert "more than once" in str(env.drop_async_error())
    assert p.value() == 7


def test_receptacle_deadlines_and_end_of_stream():
    env = TestEnvironment(FAST)
    r = Receptacle(env, capacity=4)
    _later(0.02, r.add, 1)
    assert r.next() == 1
    for x in (2, 3, 4):
        r.add(x)
    assert r.next_n(3) == [2, 3, 4]
    with pytest.raises(TCKFailure, match="received 0 of 2"):
        r.next_n(2)
    r.complete()
    with pytest.raises(TCKFailure, match="end-of-stream"):
        r.next()
    r.add(5)  # after completion: flopped
    r.complete()  # twice: flopped
    msgs = [str(e) for e in env.async_errors]
    assert any("after the stream completed" in m for m in msgs) and any("additional" in m for m in msgs)
    r2 = Receptacle(TestEnvironment(FAST), capacity=2)
    r2.add(1)
    r2.add(2)
    with pytest.raises(BufferOverflow):
        r2.add(3)


def test_receptacle_expect_none_wakes_early_on_a_stray_signal():
    env = TestEnvironment(Timeouts(default=0.2, no_signals=600.0, poll=0.01, gc=0.2))
    r = Receptacle(env)
    waiting = threading.Thread(target=r.expect_none, args=("quiet",), daemon=True)
    waiting.start()
    _later(0.02, r.complete)  # usually while it waits; before would do too (it checks first)
    waiting.join(60)
    assert not waiting.is_alive(), "expect_none kept waiting out its 600 s window after a signal came"
    assert "unexpected on_complete" in str(env.async_errors[0])


def test_manual_subscriber_flags_signals_before_on_subscribe():
    env = TestEnvironment(FAST)
    s = ManualSubscriber(env)
    s.on_next(1)
    with pytest.raises(TCKFailure, match="before on_subscribe"):
        env.verify_no_async_errors(delay=False)
    s.on_complete()
    assert s.expect_next() == 1
    assert s.received.take(0.1) is END


def test_processor_verification_passes_its_timeouts_to_the_inner_verifications():
    from rs_spark.tck import IdentityProcessorVerification

    class P(IdentityProcessorVerification):
        __test__ = False
        default_timeout_ms = 70
        gc_timeout_ms = 40
        stochastic_iterations = 5

    p = P()
    inner = p._as_publisher()
    assert inner._timeouts().default == 0.07 and inner._timeouts().gc == 0.04
    assert inner.stochastic_iterations == 5
    assert p._as_subscriber()._timeouts().default == 0.07
