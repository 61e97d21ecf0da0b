"""rs_spark.net.zero_loss.retention: the log a resumable stream keeps until its reader acknowledges."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rs_spark.net.protocol.send_queue import SendQueue
from rs_spark.net.zero_loss.retention import ResumeError, RetainedLog, Retention


def _split(batch, rows):
    return batch.slice(0, rows), batch.slice(rows)


def _batch(lo, hi):
    return pa.record_batch([pa.array(range(lo, hi), pa.int64())], names=["v"])


def _rows(item):
    return item.column(0).to_pylist()


def test_sent_rows_stay_until_acknowledged_then_are_freed():
    log = RetainedLog(Retention())
    for i in range(5):
        log.queue.append(f"e{i}", 1, 10)
    got = [log.queue.next_to_send(10) for _ in range(3)]
    assert [g[0] for g in got] == ["e0", "e1", "e2"]
    assert (log.queue.first, log.queue.cursor, log.queue.end, log.queue.records, log.queue.bytes) == (0, 3, 5, 5, 50)
    assert log.free_until(2) == 2
    assert (log.queue.first, log.queue.records, log.queue.bytes) == (2, 3, 30)
    assert log.free_until(1) == 0  # an older acknowledgement changes nothing


def test_an_acknowledgement_beyond_what_was_sent_is_refused():
    log = RetainedLog(Retention())
    log.queue.append("a", 1, 1)
    with pytest.raises(ResumeError, match="beyond the 0 rows this stream sent"):
        log.free_until(1)


def test_a_send_queue_forgets_what_it_sent():
    log = SendQueue()
    log.append("a", 1, 4)
    log.append("b", 1, 4)
    assert log.next_to_send(5) == ("a", 1)
    assert (log.records, log.first, log.cursor) == (1, 1, 1)


def test_record_batches_are_cut_to_the_credit_and_acknowledged_inside_a_batch():
    log = RetainedLog(Retention(), split=_split)
    log.queue.append(_batch(0, 10), 10, _batch(0, 10).nbytes)
    item, rows = log.queue.next_to_send(4)
    assert (_rows(item), rows) == ([0, 1, 2, 3], 4)
    item, rows = log.queue.next_to_send(100)
    assert (_rows(item), rows) == (list(range(4, 10)), 6)
    assert log.free_until(7) == 7
    assert log.queue.records == 3 and log.queue.first == 7


def test_resume_sends_again_from_the_position_and_keeps_what_is_not_acknowledged():
    log = RetainedLog(Retention(), split=_split)
    log.queue.append(_batch(0, 10), 10, 80)
    log.queue.next_to_send(10)
    log.free_until(3)
    assert log.rewind(5) == 5  # rows 5..9 go again; 3..4 stay kept until acknowledged
    item, rows = log.queue.next_to_send(100)
    assert _rows(item) == [5, 6, 7, 8, 9]
    assert log.queue.first == 3 and log.queue.records == 7
    assert log.rewind(3) == 7


def test_resume_before_the_first_kept_row_says_what_is_kept():
    log = RetainedLog(Retention())
    for i in range(4):
        log.queue.append(i, 1, 1)
        log.queue.next_to_send(1)
    log.free_until(2)
    with pytest.raises(ResumeError, match=r"rows sent and kept are \[2, 4\) \(earlier rows were acknowledged"):
        log.rewind(1)
    with pytest.raises(ResumeError, match="cannot resume at position 5"):
        log.rewind(5)


def test_room_counts_rows_asked_and_bytes():
    log = RetainedLog(Retention(max_records=3, max_bytes=100))
    log.queue.append("a", 1, 10)
    assert log.queue.room(1) == 1 and log.queue.room(2) == 0
    log.queue.append("b", 1, 95)
    assert log.queue.room(0) == 0  # bytes at the bound


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "send", "ack", "rewind"]), st.integers(1, 7)), max_size=60))
def test_the_log_always_holds_exactly_the_rows_from_the_last_acknowledgement(ops):
    """Model check: whatever the order of appends, sends (any credit), acknowledgements and
    resumptions, the rows kept are exactly [acked, appended) and rows are sent in order."""
    log = RetainedLog(Retention(), split=_split)
    appended = acked = 0
    sent_order: list[int] = []
    for op, k in ops:
        if op == "append":
            log.queue.append(_batch(appended, appended + k), k, 8 * k)
            appended += k
        elif op == "send":
            got = log.queue.next_to_send(k)
            if got is not None:
                sent_order.extend(_rows(got[0]))
        elif op == "ack":
            target = min(log.queue.cursor, acked + k)
            log.free_until(target)
            acked = max(acked, target)
        else:
            target = min(log.queue.cursor, acked + k // 2)
            log.rewind(target)
            sent_order = [r for r in sent_order if r < target]
        assert log.queue.records == appended - acked
        assert log.queue.first == acked and log.queue.end == appended
        assert sent_order == list(range(len(sent_order)))
        assert log.queue.bytes == 8 * (appended - acked)
