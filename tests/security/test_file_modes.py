"""Files rs_spark writes are private: 0600 files in 0700 folders it creates, whatever the umask,
created exclusively, and another local user cannot read them; files read back are checked."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile

import pyarrow as pa
import pytest

SETPRIV = shutil.which("setpriv")
SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def open_base():
    """A folder other users may traverse (0755), as a user's own data folder often is."""
    d = tempfile.mkdtemp(prefix="rs-sec-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def umask0():
    old = os.umask(0)
    yield
    os.umask(old)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def _write_log(root):
    from rs_spark.spark.source.single.replay_log import ReplayLog

    log = ReplayLog(root)
    seg = log.append(0, 3, [pa.record_batch([pa.array([1, 2, 3])], schema=SCHEMA)], SCHEMA)
    log.note_received(3)
    return log, seg


def _stage(root):
    from rs_spark.spark.sink.options import SinkOptions
    from rs_spark.spark.sink.staging import stage

    opts = SinkOptions.parse({"endpoint": "tcp://127.0.0.1:1/x", "stagingLocation": root, "inlineMaxBytes": "1"})
    return stage(iter([pa.record_batch([pa.array(range(1000))], schema=SCHEMA)]), opts)


def test_replay_log_folders_are_0700_and_files_0600_under_umask_0(open_base, umask0):
    root = os.path.join(open_base, "log", "q1")
    _, seg = _write_log(root)
    assert _mode(os.path.join(open_base, "log")) == 0o700 and _mode(root) == 0o700
    assert _mode(os.path.join(root, seg.name)) == 0o600
    assert _mode(os.path.join(root, "received.json")) == 0o600
    assert _mode(open_base) == 0o755  # a folder that existed keeps its mode


def test_staged_partitions_are_0600_in_a_0700_folder_under_umask_0(open_base, umask0):
    root = os.path.join(open_base, "staging")
    part = _stage(root)
    assert _mode(root) == 0o700 and _mode(part.path) == 0o600


@pytest.mark.skipif(SETPRIV is None or os.geteuid() != 0, reason="needs root and setpriv to act as another user")
def test_another_local_user_cannot_read_the_replay_log_or_staged_data(open_base):
    root = os.path.join(open_base, "log")
    _, seg = _write_log(root)
    part = _stage(os.path.join(open_base, "staging"))
    for path in (os.path.join(root, seg.name), os.path.join(root, "received.json"), part.path):
        r = subprocess.run(
            [SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "cat", path],
            capture_output=True,
            timeout=30,
        )
        assert r.returncode != 0 and b"Permission denied" in r.stderr, path


def test_a_planted_link_is_never_written_through(tmp_path):
    import pyarrow.fs as pafs

    from rs_spark.spark.files import open_new

    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    os.symlink(victim, tmp_path / "new.arrow")
    with pytest.raises(FileExistsError):
        open_new(pafs.LocalFileSystem(), str(tmp_path / "new.arrow"))
    assert victim.read_bytes() == b"precious"


@pytest.mark.parametrize("content", [b'{"received": -5}', b'{"received": "7"}', b'{"received": 1.5}', b"[]", b"\xff"])
def test_a_tampered_received_note_is_ignored_not_trusted(tmp_path, content):
    log, _ = _write_log(str(tmp_path))
    (tmp_path / "received.json").write_bytes(content)
    assert log.received() is None


@pytest.mark.parametrize(
    "content",
    ['{"batch_id": 3, "rows": 9, "total": 5}', '{"batch_id": "3", "rows": 0, "total": 0}', '{"rows": 1}', "not json"],
)
def test_a_tampered_ledger_is_a_clear_error_naming_the_file(tmp_path, content):
    from rs_spark.delivery import Ledger, SinkError

    path = tmp_path / "ledger.json"
    path.write_text(content)
    with pytest.raises(SinkError) as err:
        Ledger(str(path))
    assert str(path) in str(err.value) and "restore it or remove it" in str(err.value)


def test_a_ledger_written_by_rs_spark_reads_back(tmp_path):
    from rs_spark.delivery import Ledger

    led = Ledger(str(tmp_path / "ledger.json"))
    led.batch_id, led.rows, led.total = 4, 10, 10
    led.save()
    assert json.loads((tmp_path / "ledger.json").read_text()) == {"batch_id": 4, "rows": 10, "total": 10}
    assert Ledger(str(tmp_path / "ledger.json")).as_dict() == {"batch_id": 4, "rows": 10, "total": 10}
    assert _mode(tmp_path / "ledger.json") == 0o600
