"""The ``reactive`` source's offsets: what Spark's checkpoint keeps of where a query stands.

Two kinds, one per reader, each with one :meth:`json` (the JSON object Spark writes into its offset
log) and one :meth:`parse`:

* :class:`StreamOffset` (one reader process, :mod:`.reader`): ``offset`` counts the records read
  since the query began; ``position`` (and ``stream``, an endpoint stream's key) say where a
  publisher that can replay is asked again after a restart (:mod:`.upstream`).
* :class:`PartitionedOffset` (executors fetch from several endpoints, :mod:`.partitioned`): the
  position and stream key of each partition.

``release`` (omitted when 0) counts micro-batches planned without rows so that Spark commits the
one before them (Spark calls ``commit`` only once it plans another batch; until then the publisher
keeps those rows, which can leave an endpoint at its retention bound with nothing to send): see
docs/guarantees.md, "Acknowledgements".

Field ``v`` is the version (:data:`VERSION`); offsets written before versions existed have none and
are version 0, with the same fields. An offset of a newer version, or of no known shape, is
refused with :class:`OffsetError` saying what to do.
"""

from __future__ import annotations

import dataclasses
import json as _json
from collections.abc import Mapping
from typing import Any

VERSION = 1
"""The offset version this release writes; it reads versions 0 to this one."""

_SHOWN = 300  # characters of an offset quoted in an error


class OffsetError(ValueError):
    """A checkpoint's offset this release cannot continue from."""


def _show(d: Any) -> str:
    text = _json.dumps(d, sort_keys=True, default=str) if isinstance(d, dict) else repr(d)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def _refuse(d: Any, why: str) -> OffsetError:
    return OffsetError(
        f"format('reactive'): the checkpoint's offset {_show(d)} {why}. Start the query with the "
        "checkpointLocation it was written with by format('reactive'), or with a new checkpointLocation "
        "(it then starts from the publisher's current position)"
    )


def _version(d: Any) -> int:
    if not isinstance(d, dict):
        raise _refuse(d, "is not a JSON object")
    v = d.get("v", 0)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _refuse(d, f"has version {v!r}, not a whole number")
    if v > VERSION:
        raise OffsetError(
            f"format('reactive'): the checkpoint's offset {_show(d)} has version {v}, written by a newer rs_spark; "
            f"this release reads offset versions 0 to {VERSION}. Run the query with that rs_spark release or a "
            "newer one, or start it with a new checkpointLocation"
        )
    return v


def _count(d: Any, value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _refuse(d, f"has {what} {value!r}, not a count >= 0")
    return value


def _key(d: Any, value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise _refuse(d, f"has {what} {value!r}, not a stream key")
    return value


def _only(d: dict[str, Any], allowed: set[str], kind: str) -> None:
    extra = sorted(set(d) - allowed - {"v"})
    if extra:
        raise _refuse(d, f"has fields {', '.join(extra)} that a {kind} offset does not have")


@dataclasses.dataclass(frozen=True)
class StreamOffset:
    """One reader process's offset: records read, and where a replayable publisher resumes."""

    offset: int
    stream: str | None = None
    position: int | None = None
    release: int = 0

    def json(self) -> dict[str, Any]:
        """The JSON object Spark keeps in its offset log."""
        d: dict[str, Any] = {"v": VERSION, "offset": self.offset}
        if self.stream is not None:
            d["stream"] = self.stream
        if self.position is not None:
            d["position"] = self.position
        if self.release:
            d["release"] = self.release
        return d

    @classmethod
    def parse(cls, d: Any) -> StreamOffset:
        """The offset Spark gives back (any version up to :data:`VERSION`)."""
        _version(d)
        if "offset" not in d:
            raise _refuse(d, "has no field offset (records read), so it is not a one-reader offset")
        _only(d, {"offset", "stream", "position", "release"}, "one-reader")
        stream = _key(d, d["stream"], "stream") if "stream" in d else None
        position = _count(d, d["position"], "position") if "position" in d else None
        if stream is not None and position is None:
            raise _refuse(d, "names a stream but no position in it")
        release = _count(d, d.get("release", 0), "release")
        return cls(_count(d, d["offset"], "offset"), stream, position, release)


@dataclasses.dataclass(frozen=True)
class PartitionedOffset:
    """The partitioned reader's offset: position and stream key per partition id."""

    positions: Mapping[str, int] = dataclasses.field(default_factory=dict)
    streams: Mapping[str, str] = dataclasses.field(default_factory=dict)
    release: int = 0

    def json(self) -> dict[str, Any]:
        """The JSON object Spark keeps in its offset log."""
        d: dict[str, Any] = {"v": VERSION, "positions": dict(self.positions), "streams": dict(self.streams)}
        if self.release:
            d["release"] = self.release
        return d

    @classmethod
    def parse(cls, d: Any) -> PartitionedOffset:
        """The offset Spark gives back (any version up to :data:`VERSION`)."""
        _version(d)
        if "positions" not in d:
            raise _refuse(d, "has no field positions, so it is not a partitioned offset")
        _only(d, {"positions", "streams", "release"}, "partitioned")
        positions, streams = d["positions"], d.get("streams", {})
        if not isinstance(positions, dict) or not isinstance(streams, dict):
            raise _refuse(d, "has positions or streams that are not objects keyed by partition id")
        missing = sorted(set(positions) - set(streams))
        if missing:
            raise _refuse(d, f"has positions without a stream for partitions {', '.join(missing)}")
        return cls(
            {pid: _count(d, p, f"partition {pid!r} position") for pid, p in positions.items()},
            {pid: _key(d, k, f"partition {pid!r} stream") for pid, k in streams.items()},
            _count(d, d.get("release", 0), "release"),
        )


def parse(d: Any) -> StreamOffset | PartitionedOffset:
    """Either kind, by its fields (a checkpoint written by the other reader)."""
    _version(d)
    if "positions" in d:
        return PartitionedOffset.parse(d)
    if "offset" in d:
        return StreamOffset.parse(d)
    raise _refuse(d, "is not an offset of format('reactive') (it has neither field offset nor positions)")


__all__ = ["VERSION", "OffsetError", "PartitionedOffset", "StreamOffset", "parse"]
