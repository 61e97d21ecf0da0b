"""Frame codec: round trips, strict validation, and fuzzed / truncated input."""

from __future__ import annotations

import socket
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol.framing import IDLE, FrameReader


def one(parts, prefixed: bool = True) -> bytes:
    return b"".join(bytes(p) for p in parts)


def dec(parts) -> F.Frame:
    raw = one(parts)
    assert int.from_bytes(raw[:3], "big") == len(raw) - 3
    return F.decode(raw[3:])


def test_request_stream_round_trip() -> None:
    f = dec(F.encode_request(F.REQUEST_STREAM, 5, 42, metadata=b"meta", data=[b"body"]))
    assert (f.stream_id, f.type, f.request_n) == (5, F.REQUEST_STREAM, 42)
    assert bytes(f.metadata) == b"meta" and bytes(f.data) == b"body"


def test_payload_flags_round_trip() -> None:
    f = dec(F.encode_payload(7, [b"x"], next=True, complete=True))
    assert f.has(F.FLAG_NEXT) and f.has(F.FLAG_COMPLETE) and not f.has(F.FLAG_METADATA)
    assert f.metadata is None and bytes(f.data) == b"x"
    f = dec(F.encode_payload(7, [b"abc"], metadata=b""))
    assert f.has(F.FLAG_METADATA) and bytes(f.metadata) == b"" and bytes(f.data) == b"abc"


def test_request_n_cancel_error_keepalive_setup_round_trip() -> None:
    assert dec(F.encode_request_n(3, F.MAX_REQUEST_N)).request_n == F.MAX_REQUEST_N
    assert dec(F.encode_cancel(3)).type == F.CANCEL
    e = dec(F.encode_error(3, F.APPLICATION_ERROR, "ValueError: bäd"))
    assert e.error_code == F.APPLICATION_ERROR and bytes(e.data).decode() == "ValueError: bäd"
    k = dec(F.encode_keepalive(True, 9, b"d"))
    assert k.has(F.FLAG_RESPOND) and bytes(k.data) == b"d"
    s = dec(
        F.encode_setup(
            2000, 10000, "message/x.rsocket.composite-metadata.v0", "application/json", metadata=b"m", data=b"d"
        )
    )
    assert (s.version, s.keepalive_ms, s.lifetime_ms) == ((1, 0), 2000, 10000)
    assert s.data_mime == "application/json" and bytes(s.metadata) == b"m" and bytes(s.data) == b"d"


def test_layout_matches_rsocket_spec_bytes() -> None:
    # REQUEST_N on stream 1 for 5: id(4) | type 0x08 << 10 (2) | n(4)
    assert one(F.encode_request_n(1, 5, prefixed=False)) == bytes.fromhex("00000001200000000005")
    assert one(F.encode_cancel(1, prefixed=False)) == bytes.fromhex("000000012400")


def test_against_the_rsocket_package_when_installed() -> None:
    rf = pytest.importorskip("rsocket.frame")
    raw = one(F.encode_request_n(9, 17, prefixed=False))
    theirs = rf.parse_or_ignore(raw) if hasattr(rf, "parse_or_ignore") else rf.Frame.parse(raw)
    assert theirs.stream_id == 9 and theirs.request_n == 17


@pytest.mark.parametrize(
    "raw, words",
    [
        (b"", "shorter than the 6-byte"),
        (bytes.fromhex("80000001200000000005"), "reserved top bit"),
        (bytes.fromhex("00000001200000000000"), "0 elements"),
        (bytes.fromhex("000000012000000005"), "shorter than 10 bytes"),
        (bytes.fromhex("0000000120000000000500"), "exactly 10"),
        (bytes.fromhex("00000000200000000005"), "stream 0"),
        (bytes.fromhex("00000001180000000000"), "initial request of 0"),
        (bytes.fromhex("000000030c00000000000000000000000000"), "only valid on stream 0"),
        (bytes.fromhex("0000000129000000ff"), "runs past the end"),
        (bytes.fromhex("000000012c0000000201ff"), "not valid UTF-8"),
        (bytes.fromhex("00000001240000"), "exactly 6"),
        (bytes.fromhex("00000001f800"), "unknown frame type"),
    ],
)
def test_malformed_frames_name_the_problem(raw: bytes, words: str) -> None:
    with pytest.raises(F.FrameError, match=words):
        F.decode(raw)


def test_encoders_refuse_bad_request_n() -> None:
    for n in (0, -1, F.MAX_REQUEST_N + 1, True):
        with pytest.raises(F.FrameError, match="1..2147483647"):
            F.encode_request_n(1, n)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64))
def test_fuzz_decode_only_raises_frame_error(raw: bytes) -> None:
    try:
        F.decode(raw)
    except F.FrameError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2**31 - 1), st.binary(max_size=40), st.one_of(st.none(), st.binary(max_size=40)), st.data())
def test_fuzz_truncated_payloads_raise_or_decode_a_prefix(sid: int, data: bytes, meta, draw) -> None:
    raw = one(F.encode_request(F.REQUEST_STREAM, sid, 1, metadata=meta, data=[data], prefixed=False))
    cut = draw.draw(st.integers(0, len(raw)))
    try:
        f = F.decode(raw[:cut])
    except F.FrameError:
        return
    # A cut that still parses can only have lost trailing data bytes, never the header or metadata.
    assert f.stream_id == sid and f.request_n == 1
    assert (f.metadata is None) == (meta is None)


def test_reader_refuses_oversized_frame_before_reading_its_body() -> None:
    a, b = socket.socketpair()
    try:
        a.sendall((1000).to_bytes(3, "big") + b"x" * 10)
        r = FrameReader(b, max_frame=999)
        with pytest.raises(F.FrameError, match="exceeds this side's limit of 999"):
            next(x for x in r.frames(0.5) if x is not IDLE)
    finally:
        a.close()
        b.close()


def test_reader_splits_a_byte_stream_into_frames() -> None:
    a, b = socket.socketpair()
    try:
        blob = one(F.encode_request_n(1, 5)) + one(F.encode_payload(1, [b"y" * 100_000])) + one(F.encode_cancel(1))
        a.sendall(blob)
        a.shutdown(socket.SHUT_WR)
        got = [F.decode(x) for x in FrameReader(b, F.MAX_FRAME_LENGTH).frames(0.5) if x is not IDLE]
        assert [g.type for g in got] == [F.REQUEST_N, F.PAYLOAD, F.CANCEL]
        assert len(got[1].data) == 100_000
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("length", [65530, 65532, 65533, 65534, 65535, 65536, 65537, 65540])
def test_frames_around_the_shared_buffers_size_arrive_whole(length: int) -> None:
    """A frame whose 3-byte prefix pushed it just past the 64 KiB shared buffer used to read as
    EOF (a read into no room returns 0): the connection closed silently on a legitimate frame."""
    a, b = socket.socketpair()
    try:
        body = bytes(range(256)) * (length // 256) + b"z" * (length % 256)
        a.sendall(length.to_bytes(3, "big") + body + (2).to_bytes(3, "big") + b"ok")
        a.shutdown(socket.SHUT_WR)
        got = [bytes(x) for x in FrameReader(b, F.MAX_FRAME_LENGTH).frames(0.5) if x is not IDLE]
        assert got == [body, b"ok"]
    finally:
        a.close()
        b.close()


def test_arrow_codec_decodes_zero_copy_across_schema_changes_and_dictionaries() -> None:
    import pyarrow as pa

    from rs_spark.net.protocol.codecs import make_codec

    enc, dec = make_codec("arrow"), make_codec("arrow")
    batches = [
        pa.record_batch({"x": pa.array([1, 2, 3], pa.int64())}),
        pa.record_batch({"x": pa.array([4], pa.int64())}),
        pa.record_batch({"s": pa.array(["a", "b"])}),  # the schema changes mid-stream
        pa.record_batch({"d": pa.array(["u", "v", "u"]).dictionary_encode()}),
        pa.record_batch({"x": pa.array([5, 6], pa.int64())}),
    ]
    for b in batches:
        wire = pa.py_buffer(b"".join(bytes(p) for p in enc.encode(b)))
        got = dec.decode(wire)
        assert got.equals(b) and got.schema.equals(b.schema)
    # Zero-copy: the decoded column's data lives inside the received buffer.
    big = pa.record_batch({"x": pa.array(range(10_000), pa.int64())})
    wire = pa.py_buffer(b"".join(bytes(p) for p in enc.encode(big)))
    col = dec.decode(wire).column(0).buffers()[1]
    assert wire.address <= col.address < wire.address + wire.size


def test_reader_hands_big_frames_out_as_arrow_buffers_without_copying_them_again() -> None:
    import pyarrow as pa

    a, b = socket.socketpair()
    try:
        blob = one(F.encode_payload(1, [b"z" * 300_000]))
        threading.Thread(target=lambda: (a.sendall(blob), a.shutdown(socket.SHUT_WR)), daemon=True).start()
        got = [x for x in FrameReader(b, F.MAX_FRAME_LENGTH).frames(0.5) if x is not IDLE]
        assert len(got) == 1 and isinstance(got[0], pa.Buffer)
        assert bytes(F.decode(got[0]).data) == b"z" * 300_000
    finally:
        a.close()
        b.close()
