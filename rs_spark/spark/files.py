"""Files the connector writes: any pyarrow file system; on local disk private and created exclusively.

Replay-log segments, the received-records note and staged sink partitions hold the stream's data,
so on a local file system every folder rs_spark creates for them is 0700 and every file 0600,
created with ``O_EXCL | O_NOFOLLOW`` (an existing file or a planted link is an error, never
overwritten), whatever the process's umask. Folders that already exist keep their mode: they are
the user's. On remote file systems (``s3://``, ``hdfs://``, ...) permissions are the store's.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from ..private_files import create_private, make_private_dirs


def open_fs(uri: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow file system of ``uri`` (a local path or any pyarrow URI) and the path within it."""
    if "://" not in uri:
        return pafs.LocalFileSystem(), os.path.abspath(uri)
    return pafs.FileSystem.from_uri(uri)


def is_local(fs: pafs.FileSystem) -> bool:
    return isinstance(fs, pafs.LocalFileSystem)


def make_dirs(fs: pafs.FileSystem, path: str) -> None:
    """Create ``path`` and missing parents; on local disk the ones created here are 0700."""
    if not is_local(fs):
        fs.create_dir(path, recursive=True)
        return
    make_private_dirs(path)


def open_new(fs: pafs.FileSystem, path: str) -> Any:
    """A new file for writing (pyarrow output stream): on local disk 0600, created exclusively."""
    if not is_local(fs):
        return fs.open_output_stream(path)
    return pa.PythonFile(os.fdopen(create_private(path), "wb"), mode="w")


__all__ = ["open_fs", "is_local", "make_dirs", "open_new"]
