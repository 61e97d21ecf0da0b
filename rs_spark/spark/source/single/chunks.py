"""The elements the source's Intake holds: plain elements, the publisher's Arrow elements, and
:class:`Chunk` s (runs of plain elements converted ahead to one RecordBatch); taking rows out of them
and converting runs ahead."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ....arrow.convert import ElementConverter

ARROW = (pa.RecordBatch, pa.Table)


def has_arrow(items: list[Any]) -> bool:
    """Whether any element is a RecordBatch or Table (checks each distinct type once, not each element)."""
    return any(issubclass(t, ARROW) for t in set(map(type, items)))


class Chunk:
    """Plain elements already converted to one RecordBatch (one row per element) off the critical path."""

    __slots__ = ("batch",)

    def __init__(self, batch: pa.RecordBatch) -> None:
        self.batch = batch


def rows_in(e: Any) -> int:
    """Rows an element holds: a Chunk or Arrow element its rows, a plain element one."""
    if isinstance(e, Chunk):
        return int(e.batch.num_rows)
    if isinstance(e, ARROW):
        return int(e.num_rows)
    return 1


def take_from(src: collections.deque[Any], budget: int, out: list[Any]) -> tuple[int, int]:
    """Move elements holding up to ``budget`` rows from the head of ``src`` to ``out``, splitting
    the element that holds more. Returns (rows, elements) moved: a Chunk counts the elements it
    holds; a split Arrow element stays one element, counted when its last row is taken."""
    taken = elements = 0
    while taken < budget and src:
        e = src[0]
        n = rows_in(e)
        if taken + n <= budget:
            out.append(src.popleft())
            taken += n
            elements += n if isinstance(e, Chunk) else 1
            continue
        cut = budget - taken
        if isinstance(e, Chunk):
            out.append(Chunk(e.batch.slice(0, cut)))
            src[0] = Chunk(e.batch.slice(cut))
            elements += cut
        else:
            out.append(e.slice(0, cut))
            src[0] = e.slice(cut)
        taken += cut
    return taken, elements


Precompute = Callable[[list[Any]], pa.RecordBatch | None]
"""Converts plain elements to a RecordBatch with one row per element, or returns None (e.g. a
malformed element: the reader converts those itself, naming the offset)."""


def converted(items: list[Any], precompute: Precompute) -> list[Any]:
    """``items`` with each run of plain elements converted to a Chunk (Arrow elements stay as they are)."""
    if not has_arrow(items):
        return _convert_run(items, precompute)
    moved: list[Any] = []
    run: list[Any] = []
    for e in items:
        if isinstance(e, ARROW):
            moved.extend(_convert_run(run, precompute))
            run = []
            moved.append(e)
        else:
            run.append(e)
    moved.extend(_convert_run(run, precompute))
    return moved


def _convert_run(run: list[Any], precompute: Precompute) -> list[Any]:
    if not run:
        return run
    try:
        batch = precompute(run)
    except Exception:
        batch = None
    if batch is None or batch.num_rows != len(run):
        return run  # the reader converts these itself and names any malformed element's offset
    return [Chunk(batch)]


def convert_taken(
    converter: ElementConverter, elements: list[Any], first_offset: int
) -> tuple[list[pa.RecordBatch], int, int]:
    """Convert what ``Intake.take_rows`` returned: Chunks are converted already; runs of plain
    elements and runs of Arrow elements go through the converter (which names bad offsets).
    Returns (batches, malformed, dropped)."""
    out: list[pa.RecordBatch] = []
    malformed = dropped = 0
    offset = first_offset
    for run in runs(elements):
        if isinstance(run, Chunk):
            out.append(run.batch)
            offset += run.batch.num_rows
            continue
        c = converter.convert(run, offset)
        out.append(c.batch)
        malformed += c.malformed
        dropped += c.dropped
        offset += sum(x.num_rows for x in run) if isinstance(run[0], ARROW) else len(run)
    return out, malformed, dropped


def runs(elements: list[Any]) -> Iterator[Chunk | list[Any]]:
    """``elements`` in order as each Chunk alone and the longest runs of plain elements or of
    Arrow elements between them (the converter takes one kind at a time)."""
    i, n = 0, len(elements)
    while i < n:
        e = elements[i]
        if isinstance(e, Chunk):
            yield e
            i += 1
            continue
        arrow = isinstance(e, ARROW)
        j = i + 1
        while j < n and not isinstance(elements[j], Chunk) and isinstance(elements[j], ARROW) == arrow:
            j += 1
        yield elements[i:j]
        i = j


__all__ = ["ARROW", "Chunk", "Precompute", "convert_taken", "converted", "has_arrow", "rows_in", "runs", "take_from"]
