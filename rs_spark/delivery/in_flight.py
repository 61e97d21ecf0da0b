"""The commits in flight at the delivery hub: which commit delivers which partition, and what they queued.

No lock of its own: the hub's lock guards it, with the ledger and the hub's end, because the three
change together (a commit attaches only while the hub has not ended; the end drops every commit).
"""

from __future__ import annotations

import threading

from .commit_channel import CommitChannel
from .errors import SinkError
from .queued import Pending


class InFlight:
    """The commits in flight in the order they attached, each partition's lane (the commit delivering it)
    and their record batches queued for the Subscriber (:attr:`pending`); used under ``lock``."""

    __slots__ = ("channels", "pending", "idle", "write_batch_id", "_lanes")

    def __init__(self, lock: threading.Lock) -> None:
        self.channels: list[CommitChannel] = []
        self.pending = Pending()
        self.idle = threading.Condition(lock)  # notified whenever a commit stops being in flight
        self.write_batch_id: int | None = None  # the number given to the active commit of a batch write
        self._lanes: dict[int, CommitChannel] = {}  # partition -> the commit delivering it

    def __contains__(self, ch: CommitChannel) -> bool:
        return ch in self.channels

    def __bool__(self) -> bool:
        return bool(self.channels)

    def add(self, ch: CommitChannel) -> None:
        self.channels.append(ch)

    def take_lane(self, ch: CommitChannel, partition: int, sink: str) -> CommitChannel | None:
        """``ch`` delivers ``partition``; returns an older commit it supersedes (dropped here)."""
        holder = self._lanes.get(partition)
        if holder is ch:
            return None
        if ch.partition is not None:
            raise SinkError(
                f"sink '{sink}': a commit sent partition {partition} after partition {ch.partition}; "
                "one channel carries one partition"
            )
        if holder is not None:
            self.drop(holder)
        self._lanes[partition] = ch
        ch.partition = partition
        if partition == 0:
            self.write_batch_id = None
        return holder

    def drop(self, ch: CommitChannel) -> None:
        """Let go of commit ``ch`` and what it queued."""
        if ch in self.channels:
            self.channels.remove(ch)
        if ch.partition is not None and self._lanes.get(ch.partition) is ch:
            del self._lanes[ch.partition]
            self.pending.drop(ch.partition)
        self.idle.notify_all()

    def drop_all(self) -> list[CommitChannel]:
        """Let go of every commit in flight and what they queued; return them."""
        active, self.channels = self.channels, []
        self._lanes.clear()
        self.pending.drop_all()
        self.idle.notify_all()
        return active

    def answered(self, ch: CommitChannel) -> None:
        """``ch`` sent everything and was delivered: it leaves (what it queued was taken)."""
        self.channels.remove(ch)
        if ch.partition is not None and self._lanes.get(ch.partition) is ch:
            del self._lanes[ch.partition]
        self.idle.notify_all()

    def owes_rows(self, ch: CommitChannel) -> bool:
        """Whether rows ``ch`` sent are still queued (it is answered after they are taken)."""
        return ch.partition is not None and self.pending.has(ch.partition)


__all__ = ["InFlight"]
