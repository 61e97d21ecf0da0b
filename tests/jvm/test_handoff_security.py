"""The JVM -> Python hand-off files, attacked as another local user would: they live in a private
folder, each batch file is created exclusively and private, and a planted link is never followed."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

import pytest

from rs_spark.jvm.publisher import _remove_transfer_file, _transfer_file

SETPRIV = shutil.which("setpriv")


def _bridge(jvm, n=1000):
    b = jvm.rsspark.jvm.Shim.pull(jvm.rsspark.jvm.Sources.submissionLongs(n), "value:int64")
    b.start()
    b.request(n)
    return b


def _as_nobody(*cmd):
    return subprocess.run(
        [SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", *cmd],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_the_hand_off_folder_is_private_and_each_batch_file_is_0600(jvm):
    path = _transfer_file()
    old = os.umask(0)  # the most permissive umask: the modes must not depend on it
    try:
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
        b = _bridge(jvm)
        assert b.pollInto(path, 100, 5000, 2) > 0
        st = os.lstat(path)
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        b.close()
    finally:
        os.umask(old)
        _remove_transfer_file(path)
    assert not os.path.exists(os.path.dirname(path))


def test_a_link_planted_at_the_batch_path_is_not_followed(jvm, tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    victim.chmod(0o600)
    path = _transfer_file()
    try:
        os.symlink(victim, path)  # what an attacker who could write there would plant
        b = _bridge(jvm)
        with pytest.raises(Exception) as err:
            b.pollInto(path, 100, 5000, 2)
        assert "FileAlreadyExists" in str(err.value)
        b.close()
    finally:
        _remove_transfer_file(path)
    assert victim.read_bytes() == b"precious"


@pytest.mark.skipif(SETPRIV is None or os.geteuid() != 0, reason="needs root and setpriv to act as another user")
def test_another_local_user_cannot_read_a_batch(jvm):
    path = _transfer_file()
    try:
        b = _bridge(jvm)
        assert b.pollInto(path, 100, 5000, 2) > 0
        read = _as_nobody("cat", path)
        listing = _as_nobody("ls", os.path.dirname(path))
        b.close()
    finally:
        _remove_transfer_file(path)
    assert read.returncode != 0 and "Permission denied" in read.stderr
    assert listing.returncode != 0 and "Permission denied" in listing.stderr
