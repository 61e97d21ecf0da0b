"""Resumable streams on one server, by token: :class:`Session` (one stream, where it is served, its
window) and :class:`Sessions` (the registry; a detached stream is expired when its window ends, and
an expired one is remembered so it is never opened again as new)."""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections import OrderedDict
from typing import Any

from ..protocol.errors import ResumeRejected
from .retaining_stream import RetainingStream

log = logging.getLogger("rs_spark.net")


class Session:
    """One resumable stream on a server: the stream, where it is served, and its window."""

    def __init__(self, token: bytes, window: float, setup: dict[str, Any], positions: bool = False) -> None:
        self.token = token
        self.positions = positions  # rows are kept for fetching by position, not sent on the stream
        self.window = window
        self.setup = setup  # metadata_mime, data_mime, keepalive, lifetime of the first SETUP
        self.stream: RetainingStream | None = None
        self.endpoint = ""
        self.detached_at: float | None = None


class Sessions:
    """Resumable streams by token; a detached one is expired when its window ends."""

    def __init__(self, where: str) -> None:
        self._where = where
        self._lock = threading.Condition(threading.Lock())
        self._by_token: dict[bytes, Session] = {}
        self._reaper: threading.Thread | None = None
        self._stopped = False
        self.expired = 0  # streams expired
        self.lost_records = 0  # rows kept by streams expired while a reader might still need them
        self.discarded_records = 0  # rows kept by streams without a reader when the server stopped
        # Tokens of expired streams (the newest 4096): a reader resuming one is told it expired, and
        # none is opened again as new (its rows are gone; a new stream would hide that).
        self._tombstones: OrderedDict[bytes, str] = OrderedDict()

    def add(self, session: Session) -> None:
        with self._lock:
            if session.token in self._by_token:
                raise ResumeRejected(f"{self._where}: this resume token is in use; resume the stream with RESUME")
            why = self._tombstones.get(session.token)
            if why is not None:
                raise ResumeRejected(f"{self._where}: this stream expired ({why}); open a stream with a new key")
            self._by_token[session.token] = session

    def expired_why(self, token: bytes) -> str | None:
        """Why the stream of ``token`` expired, if it did (and is still remembered)."""
        with self._lock:
            return self._tombstones.get(token)

    def find(self, token: bytes) -> Session | None:
        with self._lock:
            s = self._by_token.get(token)
        if s is None or not hmac.compare_digest(s.token, token):
            return None
        return s

    def remove(self, session: Session) -> None:
        with self._lock:
            if self._by_token.get(session.token) is session:
                del self._by_token[session.token]

    def detached(self, session: Session) -> None:
        """The stream's connection dropped: its window starts now."""
        with self._lock:
            session.detached_at = time.monotonic()
            if self._reaper is None and not self._stopped:
                self._reaper = threading.Thread(target=self._reap, name=f"rs-net-resume {self._where}", daemon=True)
                self._reaper.start()
            self._lock.notify_all()

    def attached(self, session: Session) -> None:
        with self._lock:
            session.detached_at = None

    def all(self) -> list[Session]:
        with self._lock:
            return list(self._by_token.values())

    def readerless(self) -> set[bytes]:
        """The tokens of the streams no reader is on now (see :meth:`stop`)."""
        with self._lock:
            sessions = list(self._by_token.values())
        return {s.token for s in sessions if s.stream is not None and s.stream.reader_gone}

    def stop(self, why: str, keep_spilled: bool, readerless: set[bytes] | None = None) -> None:
        """The server stops: every stream is expired now (a spilled one keeps its files). The
        streams in ``readerless`` (:meth:`readerless`, taken before the server closed its
        connections) had no reader: their kept rows are discarded, not lost (see :meth:`_discard`)."""
        readerless = self.readerless() if readerless is None else readerless
        with self._lock:
            self._stopped = True
            sessions = list(self._by_token.values())
            self._by_token.clear()
            self._lock.notify_all()
        for s in sessions:
            if keep_spilled and s.stream is not None:
                s.stream.shutdown(why)
            elif s.token in readerless:
                self._discard(s, why)
            else:
                self._expire(s, why)

    def _reap(self) -> None:
        while True:
            with self._lock:
                if self._stopped:
                    return
                due, wait = self._due_locked()
                if not due:
                    self._lock.wait(wait)
                    continue
                for s in due:
                    del self._by_token[s.token]
            for s in due:
                self._expire(s, f"no reader resumed it within its {s.window:g} s window")

    def _due_locked(self) -> tuple[list[Session], float | None]:
        now = time.monotonic()
        due: list[Session] = []
        wait: float | None = None
        for s in self._by_token.values():
            if s.detached_at is None:
                continue
            left = s.detached_at + s.window - now
            if left <= 0:
                due.append(s)
            else:
                wait = left if wait is None else min(wait, left)
        return due, wait

    def _expire(self, s: Session, why: str) -> None:
        """A reader that may still need the stream loses it: connected when the server stops, or
        not back within its window. Its kept rows are lost to it: a warning."""
        lost = self._end(s, why)
        if lost is None:
            return
        self.lost_records += lost
        log.warning(
            "rs_spark.net: %s: the resumable stream of '%s' was cancelled: %s; %d rows it kept for its reader are lost",
            self._where,
            s.endpoint,
            why,
            lost,
        )

    def _discard(self, s: Session, why: str) -> None:
        """The server stops while the stream has no reader: it detached (its query ended, or its
        reader stopped) and nobody resumed it. Its kept rows were never acknowledged: prefetched
        beyond the reader's last commit, or in a last micro-batch it committed without an
        acknowledgement. For a query that ended that is no loss: said at INFO level."""
        discarded = self._end(s, why)
        if discarded is None:
            return
        self.discarded_records += discarded
        log.info(
            "rs_spark.net: %s: %s while the resumable stream of '%s' had no reader (it left: its query ended "
            "or its reader stopped); %d rows sent to it and not acknowledged (prefetched beyond its last "
            "commit, or committed without an acknowledgement) were discarded; a query restarted from its "
            "checkpoint cannot resume this stream",
            self._where,
            why,
            s.endpoint,
            discarded,
        )

    def _end(self, s: Session, why: str) -> int | None:
        """Expire ``s`` (its token remembered as expired); the rows its stream kept, None without one."""
        with self._lock:
            self._tombstones[s.token] = why
            while len(self._tombstones) > 4096:
                self._tombstones.popitem(last=False)
        if s.stream is None:
            return None
        kept = s.stream.expire(why)
        self.expired += 1
        return kept


__all__ = ["Session", "Sessions"]
