"""checked()'s faster string validation accepts and refuses exactly what Arrow's full validation
does (rs_spark/arrow/validate.py: offsets by Arrow as binary, UTF-8 at once for ASCII data)."""

from __future__ import annotations

import array

import pyarrow as pa
import pytest

from rs_spark.arrow.validate import MalformedArrow, checked


def _with_data(kind: pa.DataType, offsets: list[int], data: bytes) -> pa.RecordBatch:
    """A string column built from raw buffers (what a hostile peer can send; offsets past the
    data are refused by Arrow's own structural check: tests/security/test_arrow_malformed.py)."""
    width = "q" if kind == pa.large_string() else "i"
    arr = pa.Array.from_buffers(
        kind, len(offsets) - 1, [None, pa.py_buffer(array.array(width, offsets).tobytes()), pa.py_buffer(data)]
    )
    return pa.RecordBatch.from_arrays([arr], names=["s"])


def _arrow_says(batch: pa.RecordBatch) -> str | None:
    try:
        batch.validate(full=True)
    except pa.ArrowException as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()], ids=["string", "large_string"])
@pytest.mark.parametrize(
    "offsets, data",
    [
        ([0, 1, 3], b"abc"),  # ASCII
        ([0, 2, 5], "éa€".encode()),  # valid multi-byte UTF-8
        ([0, 1, 2], b"a\xff"),  # an invalid byte
        ([0, 1, 3], "a€".encode()[:3]),  # a sequence cut short
        ([0, 2, 4], "€a".encode()),  # an offset inside a character
        ([0, 5, 3], b"abcde"),  # offsets going back
    ],
    ids=["ascii", "utf8", "bad-byte", "cut-short", "split-char", "backwards"],
)
def test_checked_refuses_exactly_what_arrow_refuses_with_arrows_message(kind, offsets, data):
    batch = _with_data(kind, offsets, data)
    expected = _arrow_says(batch)
    if expected is None:
        assert checked(batch, "a test") is batch
    else:
        with pytest.raises(MalformedArrow) as ei:
            checked(batch, "a test")
        assert expected in str(ei.value)


def test_a_slice_is_judged_by_its_own_values_as_arrow_does():
    batch = _with_data(pa.string(), [0, 1, 2, 3], b"a\xffb")
    ok = batch.slice(2, 1)  # only "b": the invalid byte lies outside the slice
    assert _arrow_says(ok) is None and checked(ok, "a test") is ok
    with pytest.raises(MalformedArrow, match="UTF8|utf-8|Invalid"):
        checked(batch.slice(1, 1), "a test")


def test_nested_and_other_columns_keep_arrows_full_validation():
    good = pa.RecordBatch.from_pydict(
        {"l": [["a", "é"], []], "n": [1, 2], "d": pa.array(["x", "y"]).dictionary_encode()}
    )
    assert checked(good, "a test") is good
