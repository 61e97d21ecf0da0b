"""Private local files, created exclusively: the primitives every layer that writes data uses.

Folders rs_spark creates are 0700 and files 0600 whatever the process's umask; a file is created
with ``O_EXCL | O_NOFOLLOW`` (an existing file or a planted link is an error, never overwritten).
Folders that already exist keep their mode: they are the user's. Standard library only.
"""

from __future__ import annotations

import os

NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
"""Flags that create a new file and refuse an existing one or a symbolic link."""


def make_private_dirs(path: str) -> None:
    """Create ``path`` and missing parents; the ones created here are exactly 0700."""
    missing = []
    p = os.path.abspath(path)
    while not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:  # created meanwhile by another process: leave its mode alone
            continue
        os.chmod(d, 0o700)  # the umask may have taken bits away, never added: make it exact


def create_private(path: str, flags: int = 0) -> int:
    """A new file at ``path``, exactly 0600, created exclusively; returns its descriptor."""
    fd = os.open(path, NEW_FILE | flags, 0o600)
    os.fchmod(fd, 0o600)
    return fd


def write_private_atomically(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data``: a private temporary file, fsynced, renamed into place (a crash
    leaves the old or the new content, never half)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = create_private(tmp)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


__all__ = ["NEW_FILE", "make_private_dirs", "create_private", "write_private_atomically"]
