"""rs_spark.read_stream serves the user's publisher on 127.0.0.1 with a token: another local user
who finds the port in /proc/net/tcp and connects without it is refused and reads nothing."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol import frames as F
from rs_spark.net.protocol import metadata as M

SETPRIV = shutil.which("setpriv")

# What the other user runs with the system's Python (no rs_spark needed): SETUP without credentials,
# REQUEST_STREAM without a route, then print the types of the frames that come back.
_ATTACKER = """
import socket, sys
port, setup, request = int(sys.argv[1]), bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(setup + request)
data = b""
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
except socket.timeout:
    pass
types = []
while len(data) >= 3 + 6:
    n = int.from_bytes(data[:3], "big")
    types.append((int.from_bytes(data[7:9], "big") >> 10) & 0x3F)
    data = data[3 + n:]
print(" ".join(map(str, types)))
"""


def _listening_ports_of_this_process():
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    with open("/proc/net/tcp") as f:
        for row in f.read().splitlines()[1:]:
            cols = row.split()
            if cols[3] == "0A" and cols[9] in inodes and cols[1].startswith("0100007F:"):
                ports.add(int(cols[1].split(":")[1], 16))
    return ports


def _raw(parts):
    return b"".join(bytes(p) for p in parts)


@pytest.mark.skipif(SETPRIV is None or os.geteuid() != 0, reason="needs root and setpriv to act as another user")
def test_another_local_user_cannot_read_a_read_stream_endpoint(spark):
    import rs_spark
    from rs_spark.spark.source.read_stream import stop_served

    before = _listening_ports_of_this_process()
    rs_spark.read_stream(spark, rs.range_(100).pipe(rs.map(lambda i: {"id": i})), schema="id LONG")
    try:
        ports = _listening_ports_of_this_process() - before  # what the attacker finds in /proc/net/tcp
        assert len(ports) == 1, ports
        setup = _raw(F.encode_setup(1000, 5000, M.COMPOSITE, "application/json"))
        request = _raw(F.encode_request(F.REQUEST_STREAM, 1, 100))
        r = subprocess.run(
            [
                SETPRIV,
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                "/usr/bin/python3",
                "-c",
                _ATTACKER,
                str(ports.pop()),
                setup.hex(),
                request.hex(),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        stop_served()
    assert r.returncode == 0, r.stderr
    types = [int(t) for t in r.stdout.split()]
    assert F.PAYLOAD not in types, f"the other user read the stream: frame types {types}"
    assert types and types[0] == F.ERROR, types


def test_serve_without_a_token_is_open_to_any_local_connection_as_documented():
    server = net.serve(rs.range_(3), name="open")
    try:
        assert rs.to_list(net.connect(server.address), timeout=10) == [0, 1, 2]
    finally:
        server.stop()
