"""Spill: a resumable stream's kept rows also on local disk, so they survive a restart of the
serving process (``Retention(spill=folder)``).

Each stream has a private folder (0700) under ``folder``, named by a hash of its resume token,
holding ``meta.json`` (what is needed to serve it again: endpoint, MIME types, keepalive, window,
the acknowledged position) and segment files (0600, created exclusively) of records
``position (8 bytes) | rows (4) | length (4) | payload``: the payload as it goes on the wire (an
Arrow IPC stream for the arrow codec). A row is written before it is sent; acknowledged segments
are deleted. A restarted server finds a stream when its reader resumes, and sends the kept rows
again; new rows then come from the publisher served under the same name.

Files on disk are input like any other: a spilled stream is read back with every length checked
against its file and the frame limit, positions checked to follow each other, and Arrow payloads
validated by the codec before a reader sees them. A stream that cannot be read back is refused
(``REJECTED_RESUME``) saying which file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...private_files import create_private, make_private_dirs, write_private_atomically

log = logging.getLogger("rs_spark.net")

_HEAD = struct.Struct(">QII")
_SEGMENT_BYTES = 8 * 1024 * 1024  # a new segment file after this many bytes: acknowledged ones are deleted whole
_META = "meta.json"
_MAX_META = 64 * 1024


class SpillError(ValueError):
    """A spilled stream's files cannot be read back."""


def _folder_of(root: str, token: bytes) -> str:
    return os.path.join(root, hashlib.sha256(b"rs_spark spill|" + token).hexdigest()[:32])


@dataclass
class SpilledStream:
    """A stream read back from disk: its metadata and its kept rows (position, rows, payload)."""

    meta: dict[str, Any]
    entries: list[tuple[int, int, bytes]]
    folder: str


class Spill:
    """Write-ahead copy of one stream's kept rows."""

    def __init__(self, root: str, token: bytes, meta: dict[str, Any], start: int = 0) -> None:
        self.folder = _folder_of(root, token)
        make_private_dirs(self.folder)
        self._meta = dict(meta, version=1, token=token.hex(), acked=start)
        self._fd: int | None = None
        self._segment_start = -1
        self._segment_bytes = 0
        self._segments: list[tuple[int, str]] = []  # (first position, path), oldest first
        write_private_atomically(os.path.join(self.folder, _META), json.dumps(self._meta).encode())

    @classmethod
    def adopt(cls, spilled: SpilledStream) -> Spill:
        """Keep writing a stream read back after a restart (its old segments stay until acknowledged)."""
        self = cls.__new__(cls)
        self.folder = spilled.folder
        self._meta = spilled.meta
        self._fd = None
        self._segment_start = -1
        self._segment_bytes = 0
        self._segments = [(first, path) for first, path in _segment_files(spilled.folder)]
        return self

    def append(self, position: int, rows: int, payload: bytes) -> None:
        """Write one entry before it is sent."""
        if self._fd is None or self._segment_bytes >= _SEGMENT_BYTES:
            self._roll(position)
        assert self._fd is not None
        os.write(self._fd, _HEAD.pack(position, rows, len(payload)) + payload)
        self._segment_bytes += _HEAD.size + len(payload)

    def _roll(self, position: int) -> None:
        if self._fd is not None:
            os.close(self._fd)
        path = os.path.join(self.folder, f"segment-{position:020d}.spill")
        self._fd = create_private(path, os.O_APPEND)
        self._segments.append((position, path))
        self._segment_bytes = 0

    def acknowledge(self, position: int) -> None:
        """Rows before ``position`` are no longer needed: note it, delete whole segments below it."""
        self._meta["acked"] = position
        write_private_atomically(os.path.join(self.folder, _META), json.dumps(self._meta).encode())
        while len(self._segments) > 1 and self._segments[1][0] <= position:
            _, path = self._segments.pop(0)
            _remove(path)

    def close(self) -> None:
        """Stop writing; the files stay."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        """The stream ended: its files go."""
        self.close()
        for _, path in self._segments:
            _remove(path)
        _remove(os.path.join(self.folder, _META))
        try:
            os.rmdir(self.folder)
        except OSError:
            pass


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _segment_files(folder: str) -> Iterator[tuple[int, str]]:
    names = sorted(n for n in os.listdir(folder) if n.startswith("segment-") and n.endswith(".spill"))
    for n in names:
        try:
            first = int(n[len("segment-") : -len(".spill")])
        except ValueError as exc:
            raise SpillError(f"{os.path.join(folder, n)} is not a spill segment name") from exc
        yield first, os.path.join(folder, n)


def find(root: str, token: bytes, max_payload: int) -> SpilledStream | None:
    """The stream spilled under ``root`` for ``token``, read back and checked; None if there is none.
    Raises :class:`SpillError` naming the file when its content is not what rs_spark wrote."""
    folder = _folder_of(root, token)
    meta_path = os.path.join(folder, _META)
    if not os.path.exists(meta_path):
        return None
    meta = _read_meta(meta_path, token)
    acked = meta["acked"]
    entries: list[tuple[int, int, bytes]] = []
    expect: int | None = None
    for _, path in _segment_files(folder):
        for pos, rows, payload in _read_segment(path, max_payload):
            if expect is not None and pos != expect:
                raise SpillError(
                    f"{path}: the entry after position {expect} starts at position {pos}: "
                    "the file was changed, or rows are missing"
                )
            expect = pos + rows
            if pos + rows > acked:
                entries.append((pos, rows, payload))
    if entries and entries[0][0] > acked:
        raise SpillError(f"{folder}: rows from position {acked} are missing (the first kept is {entries[0][0]})")
    return SpilledStream(meta, entries, folder)


def _read_meta(path: str, token: bytes) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            meta = json.loads(f.read(_MAX_META))
    except (OSError, ValueError) as exc:
        raise SpillError(f"{path} cannot be read: {exc}") from exc
    need = {"version": int, "token": str, "endpoint": str, "data_mime": str, "metadata_mime": str, "acked": int}
    if not isinstance(meta, dict) or any(not isinstance(meta.get(k), t) for k, t in need.items()):
        raise SpillError(f"{path} is not a spill description written by rs_spark")
    if meta["token"] != token.hex() or meta["acked"] < 0:
        raise SpillError(f"{path} describes another stream, or a negative position")
    return meta


def _read_segment(path: str, max_payload: int) -> Iterator[tuple[int, int, bytes]]:
    with open(path, "rb") as f:
        data = f.read()
    pos, n = 0, len(data)
    while pos < n:
        if pos + _HEAD.size > n:
            log.warning("rs_spark.net: %s ends with a partial entry (the server stopped mid-write): ignored", path)
            return  # the last write of a process that died: it was never sent
        position, rows, length = _HEAD.unpack_from(data, pos)
        if length > max_payload or rows < 1 or position >= 2**63:
            raise SpillError(f"{path}: an entry at byte {pos} claims {rows} rows and {length} bytes")
        if pos + _HEAD.size + length > n:
            log.warning("rs_spark.net: %s ends with a partial entry (the server stopped mid-write): ignored", path)
            return
        yield position, rows, data[pos + _HEAD.size : pos + _HEAD.size + length]
        pos += _HEAD.size + length


def expired(root: str, window: float) -> list[str]:
    """Stream folders under ``root`` not written for longer than ``window`` seconds."""
    if not os.path.isdir(root):
        return []
    now = time.time()
    out = []
    for name in os.listdir(root):
        folder = os.path.join(root, name)
        try:
            newest = max(os.stat(os.path.join(folder, f)).st_mtime for f in os.listdir(folder))
        except (OSError, ValueError):  # gone meanwhile, or empty
            continue
        if now - newest > window:
            out.append(folder)
    return out


__all__ = ["Spill", "SpilledStream", "SpillError", "find", "expired"]
