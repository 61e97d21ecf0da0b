"""Planned micro-batches as private local files, so executors on this host read them without the
reader process (no replay log; the rows executors would otherwise fetch over TCP).

Fetching a micro-batch from the reader process (:mod:`.batch_fetch`) makes that
process serialize and send every row while its publisher builds the next micro-batch there: both
need its one interpreter, so the fetch waits for the publisher. Instead the reader writes each
planned micro-batch once, before it asks the publisher for more, as an Arrow IPC file in a folder
of its own (0700, on /dev/shm when there is one, files 0600 created exclusively) and keeps the
rows as a memory map of that file (no second copy in memory). An executor on the same host maps
the file and validates every batch before any row of it is read (:mod:`.replay_log`); one that
cannot open it fetches the rows over TCP as before. A file is deleted when its micro-batch
commits, and the folder when the reader stops; folders of reader processes that died are removed
by the next reader process of the same user.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.ipc as ipc

from ....private_files import create_private

log = logging.getLogger("rs_spark.source")

_PREFIX = "rs-spark-batches-"


def _base_dir() -> str:
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else tempfile.gettempdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(base: str) -> None:
    """Folders left by this user's reader processes that are gone (a SIGKILL skips ``close``)."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        pid = name[len(_PREFIX) :].split("-", 1)[0]
        if not name.startswith(_PREFIX) or not pid.isdigit() or _alive(int(pid)):
            continue
        path = os.path.join(base, name)
        try:
            if os.lstat(path).st_uid == os.getuid():
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue


class LocalHandoff:
    """Private files of planned micro-batches, named by their first offset."""

    def __init__(self) -> None:
        self._dir: str | None = None
        self._failed = False
        self._written: set[int] = set()

    @property
    def folder(self) -> str | None:
        """The private folder (None until the first file, or after a failure to write one)."""
        return self._dir

    def _folder(self) -> str:
        if self._dir is None:
            base = _base_dir()
            _remove_stale(base)
            self._dir = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=base)  # 0700
        return self._dir

    @staticmethod
    def name(start: int) -> str:
        return f"{start}.arrow"

    def file_of(self, start: int) -> tuple[str, str] | None:
        """(folder, name) of the file of ``start``, if it was written."""
        name = self.name(start)
        return (self._dir, name) if start in self._written and self._dir is not None else None

    def put(self, start: int, batches: Sequence[pa.RecordBatch], schema: pa.Schema) -> pa.Table | None:
        """Write ``batches`` to the file of ``start``; the rows as a memory map of it, or None when the
        file could not be written (the caller keeps the rows in memory: nothing is lost)."""
        if self._failed:
            return None
        self.drop(start)  # planned again (a replay): the new rows replace the old file
        path = ""
        try:
            path = os.path.join(self._folder(), self.name(start))
            fd = create_private(path)  # 0600, exclusive, no link followed: an existing file stays as it is
        except OSError as exc:
            self._give_up(path, exc)
            return None
        try:
            with pa.PythonFile(os.fdopen(fd, "wb"), mode="w") as out, ipc.new_file(out, schema) as writer:
                for b in batches:
                    writer.write_batch(b)
            table = ipc.open_file(pa.memory_map(path)).read_all()
        except (OSError, pa.ArrowException) as exc:  # e.g. a small /dev/shm
            os.unlink(path)
            self._give_up(path, exc)
            return None
        self._written.add(start)
        return table

    def _give_up(self, path: str, exc: BaseException) -> None:
        """Keep micro-batches in memory from now on (the TCP fetch serves them): nothing is lost."""
        self._failed = True
        log.info("format('reactive'): micro-batches stay in memory (cannot write %s: %s)", path, exc)

    def drop(self, start: int) -> None:
        """Delete the file of ``start`` (its micro-batch committed)."""
        if start not in self._written or self._dir is None:
            return  # never unlink a file this process did not write
        self._written.discard(start)
        try:
            os.unlink(os.path.join(self._dir, self.name(start)))
        except FileNotFoundError:
            pass

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            self._written.clear()


__all__ = ["LocalHandoff"]
