"""rs_spark.spark.source.single.batch_fetch: rows served from one process, fetched by another's partition."""

from __future__ import annotations

import pickle
import socket

import pyarrow as pa
import pytest

from rs_spark.arrow import ElementConverter
from rs_spark.spark.source.single.batch_fetch import BatchServer, FetchError, fetch

TABLE = pa.table({"id": pa.array(range(10_000), pa.int64()), "s": pa.array([str(i) for i in range(10_000)])})


@pytest.fixture
def server():
    def lookup(key, lo, hi):
        if key != 7:
            raise LookupError(f"nothing planned at {key}")
        return TABLE.schema, TABLE.slice(lo, hi - lo).to_batches()

    s = BatchServer(lookup)
    yield s
    s.close()


def test_fetch_returns_exactly_the_requested_rows(server):
    grant = pickle.loads(pickle.dumps(server.grant(7, 1234, 5678)))  # as it travels inside a partition
    got = pa.Table.from_batches(fetch(grant, 7, 1234, 5678))
    assert got.equals(TABLE.slice(1234, 5678 - 1234))


def test_fetch_reports_the_servers_error(server):
    with pytest.raises(FetchError, match="LookupError: nothing planned at 8"):
        fetch(server.grant(8, 0, 1), 8, 0, 1)


def test_a_wrong_credential_gets_nothing(server):
    with socket.create_connection(("127.0.0.1", server.address.port), timeout=5) as c:
        req = b'{"key": 7, "lo": 0, "hi": 10, "mac": "' + b"00" * 32 + b'"}'
        c.sendall(len(req).to_bytes(4, "big") + req)
        c.settimeout(5)
        try:
            answer = c.recv(10)
        except ConnectionResetError:
            answer = b""
        assert answer == b""  # closed without an answer


def test_a_grants_repr_hides_the_credential(server):
    granted = server.grant(7, 0, 10)
    assert granted.secret.hex() not in repr(granted)


def test_fetch_from_a_closed_server_says_it_cannot_connect(server):
    grant = server.grant(7, 0, 1)
    server.close()
    with pytest.raises(FetchError, match="cannot connect"):
        fetch(grant, 7, 0, 1, connect_timeout=2)


def test_try_bulk_converts_clean_plain_elements_and_declines_the_rest():
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    c = ElementConverter(schema)
    assert c.try_bulk([{"id": 1, "name": "a"}, (2, "b")]) is None  # mixed kinds: the slow path decides
    assert c.try_bulk([{"id": 1, "name": "a"}, {"id": "x", "name": "b"}]) is None
    assert c.try_bulk([pa.record_batch([[1], ["a"]], schema=schema)]) is None
    b = c.try_bulk([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
    assert b.to_pylist() == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
