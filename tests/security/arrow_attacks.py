"""Malformed Arrow IPC as an attacker writes it: payloads that decode but lie about their buffers,
compressed bodies that expand without bound, and seeded random mutations of valid messages."""

from __future__ import annotations

import random
import struct

import pyarrow as pa


def _ipc_stream(batch: pa.RecordBatch, **write_options) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema, options=pa.ipc.IpcWriteOptions(**write_options)) as w:
        w.write_batch(batch)
    return sink.getvalue().to_pybytes()


def out_of_range_binary_ipc(kind: pa.DataType | None = None) -> bytes:
    """Three values of ``kind`` (binary unless given; string works too) whose last offset, patched
    into the serialized body, points 4096 bytes past a 6-byte data buffer: a reader that trusts it
    returns neighbouring heap (or crashes)."""
    kind = pa.binary() if kind is None else kind
    good = _ipc_stream(pa.RecordBatch.from_arrays([pa.array([b"ab", b"cd", b"ef"], kind)], names=["payload"]))
    offsets = struct.pack("<4i", 0, 2, 4, 6)
    assert good.count(offsets) == 1
    return good.replace(offsets, struct.pack("<4i", 0, 2, 4, 4096))


def zstd_bomb_ipc(rows: int = 128 * 1024 * 1024) -> bytes:
    """A zstd-compressed stream of ``rows`` zero int64s: 1 GiB once decompressed, a few KB on the wire."""
    zeros = pa.Array.from_buffers(pa.int64(), rows, [None, pa.py_buffer(bytes(8 * rows))])
    return _ipc_stream(pa.RecordBatch.from_arrays([zeros], names=["x"]), compression="zstd")


def valid_ipc_samples() -> list[bytes]:
    """Valid single-batch streams of the shapes rs_spark carries (the fuzz's seeds)."""
    n = 64
    batches = [
        pa.record_batch([pa.array(range(n), pa.int64())], names=["id"]),
        pa.record_batch(
            [pa.array([f"s{i}" for i in range(n)]), pa.array([float(i) for i in range(n)])], names=["name", "price"]
        ),
        pa.record_batch([pa.array([bytes([i]) * (i % 7) for i in range(n)], pa.binary())], names=["b"]),
        pa.record_batch([pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32()))], names=["l"]),
        pa.record_batch([pa.array([f"k{i % 4}" for i in range(n)]).dictionary_encode()], names=["d"]),
        pa.record_batch([pa.array([{"a": i, "b": f"x{i}"} for i in range(n)])], names=["st"]),
    ]
    return [_ipc_stream(b) for b in batches]


def mutations(seed: int, count: int):
    """``count`` seeded mutations: bit flips, overwritten int32/int64 fields (offsets, lengths, ids,
    type codes, the compression field), truncations and splices of the valid samples."""
    rnd = random.Random(seed)
    samples = valid_ipc_samples()
    for i in range(count):
        data = bytearray(rnd.choice(samples))
        op = rnd.randrange(5)
        if op == 0:
            for _ in range(rnd.randint(1, 8)):
                pos = rnd.randrange(len(data))
                data[pos] ^= 1 << rnd.randrange(8)
        elif op == 1:
            pos = rnd.randrange(0, len(data) - 4) & ~3
            data[pos : pos + 4] = struct.pack(
                "<i", rnd.choice([-1, 0, 1, 7, 255, 4096, 2**31 - 1, -(2**31), rnd.randint(-(2**31), 2**31 - 1)])
            )
        elif op == 2:
            pos = rnd.randrange(0, len(data) - 8) & ~7
            data[pos : pos + 8] = struct.pack(
                "<q", rnd.choice([-1, 0, 1, 2**40, 2**62, rnd.randint(-(2**63), 2**63 - 1)])
            )
        elif op == 3:
            data = data[: rnd.randrange(len(data))]
        else:
            other = rnd.choice(samples)
            cut = rnd.randrange(min(len(data), len(other)))
            data = data[:cut] + other[cut:]
        yield i, bytes(data)
