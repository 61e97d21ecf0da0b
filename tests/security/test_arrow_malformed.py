"""Malformed Arrow from a socket, a file or the JVM, sent as an attacker sends it. Each decode path
runs in a victim process: it must refuse with an error naming the source, deliver nothing, never
return neighbouring heap, never crash, and stay within a memory bound."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading

import pyarrow as pa
import pytest

from rs_spark.arrow.validate import MalformedArrow
from rs_spark.net.protocol import frames as F

from .arrow_attacks import out_of_range_binary_ipc, zstd_bomb_ipc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RSS_BOUND_MB = 400  # a victim that decompressed the bomb holds > 1 GiB


def _victim(args, stdin=b""):
    r = subprocess.run(
        [sys.executable, "-m", "tests.security.victim", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert r.returncode == 0, f"the victim process died (exit {r.returncode}): {r.stderr.decode()[-2000:]}"
    return json.loads(r.stdout.decode().strip().splitlines()[-1])


@pytest.mark.parametrize("path", ["codec", "from_ipc", "jvm_handoff"])
@pytest.mark.parametrize("kind", [pa.binary(), pa.string()], ids=["binary", "string"])
def test_offsets_outside_the_data_buffer_are_refused_not_read(path, kind):
    out = _victim([path], out_of_range_binary_ipc(kind))
    assert out["delivered"] == 0, out
    assert "malformed Arrow IPC from" in out["error"] and "out of bounds" in out["error"], out


@pytest.mark.parametrize("path", ["codec", "from_ipc", "jvm_handoff"])
def test_a_zstd_decompression_bomb_is_refused_before_it_expands(path):
    out = _victim([path], zstd_bomb_ipc())
    assert out["delivered"] == 0, out
    assert "compressed body" in out["error"], out
    assert out["max_rss_mb"] < RSS_BOUND_MB, out


class _MaliciousServer:
    """An RSocket responder on 127.0.0.1 that answers REQUEST_STREAM with one hostile Arrow payload."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _frames(self, conn):
        buf = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                return
            buf += chunk
            while len(buf) >= 3:
                n = int.from_bytes(buf[:3], "big")
                if len(buf) < 3 + n:
                    break
                yield F.decode(buf[3 : 3 + n])
                buf = buf[3 + n :]

    def _serve(self):
        try:
            conn, _ = self.sock.accept()
        except OSError:  # closed before the victim connected: the victim's own result says why
            return
        with conn:
            try:
                self._answer(conn)
            except ConnectionError:
                pass  # the victim refused the payload and dropped the connection: the expected end

    def _answer(self, conn):
        for f in self._frames(conn):
            if f.type == F.REQUEST_STREAM:
                conn.sendall(b"".join(bytes(p) for p in F.encode_payload(f.stream_id, [self.payload])))
                conn.sendall(b"".join(bytes(p) for p in F.encode_payload(f.stream_id, next=False, complete=True)))
            if f.type == F.CANCEL:
                return

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes a thread still in accept()
        except OSError:
            pass
        self.sock.close()
        self.thread.join(10)


@pytest.mark.parametrize("payload", [out_of_range_binary_ipc(), zstd_bomb_ipc()], ids=["offsets", "zstd-bomb"])
def test_a_malicious_server_cannot_crash_or_leak_into_the_client_reading_it(payload):
    server = _MaliciousServer(payload)
    try:
        out = _victim(["client", f"tcp://127.0.0.1:{server.port}/feed"])
    finally:
        server.close()
    assert out["delivered"] == 0, out
    assert "malformed Arrow IPC" in out["error"], out
    assert out["max_rss_mb"] < RSS_BOUND_MB, out


def test_a_tampered_replay_log_segment_is_refused_naming_the_file(tmp_path):
    from rs_spark.spark.source.single.replay_log import ReplayLog, read_segment_slice

    schema = pa.schema([("payload", pa.binary())])
    log = ReplayLog(str(tmp_path))
    log.append(0, 3, [pa.record_batch([pa.array([b"ab", b"cd", b"ef"])], schema=schema)], schema)
    seg = log.segments()[0]
    path = tmp_path / seg.name
    data = path.read_bytes()
    import struct

    good = struct.pack("<4i", 0, 2, 4, 6)
    assert data.count(good) == 1
    path.write_bytes(data.replace(good, struct.pack("<4i", 0, 2, 4, 4096)))  # what an attacker with write access does
    with pytest.raises(MalformedArrow) as err:
        read_segment_slice(str(tmp_path), seg.name, 0, 3)
    assert str(path) in str(err.value) and "out of bounds" in str(err.value)


def test_a_tampered_staged_partition_is_refused_naming_the_file(tmp_path):
    from rs_spark.spark.sink.options import SinkOptions
    from rs_spark.spark.sink.staging import StagedPartition, read_staged

    staged = tmp_path / "part-x.arrow"
    staged.write_bytes(out_of_range_binary_ipc())
    opts = SinkOptions.parse({"endpoint": "tcp://127.0.0.1:1/x", "stagingLocation": str(tmp_path)})
    with pytest.raises(MalformedArrow) as err:
        list(read_staged(StagedPartition(3, path=str(staged)), opts))
    assert str(staged) in str(err.value)
