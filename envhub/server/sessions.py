"""The session table of the HTTP server: bounded, with idle expiry.

Each session is a fork of the served environment holding one episode. The table is bounded
(``max_sessions``); idle sessions expire after ``ttl`` seconds. The ids of recently expired
or finished sessions are remembered for a while so a late client gets "expired" or "episode is
over", not "unknown".
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from envhub.core import Env


class SessionError(Exception):
    """A session lookup failed; ``code`` is the HTTP status to answer."""

    def __init__(self, code: int, kind: str, message: str) -> None:
        """Record the HTTP code, the error kind and the message."""
        super().__init__(message)
        self.code = code
        self.kind = kind


@dataclass
class Session:
    """One episode's environment and its bookkeeping."""

    env: Env
    task_id: str = ""
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    """Given only to the opener (``session_secret``): resuming, stepping or closing needs it."""
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    steps: int = 0
    """Steps applied so far; a client's ``seq`` is checked against it."""
    last: str | None = None
    """The last step's answer as JSON, for a step sent again after a dropped connection."""


@dataclass(frozen=True)
class Finished:
    """What is remembered of a session whose episode ended: its last answer, for a resend."""

    task_id: str
    steps: int
    last: str | None
    secret: str


class SessionTable:
    """Sessions by id, bounded in number, expiring when idle."""

    def __init__(self, max_sessions: int, ttl: float, remember_expired: int = 10_000) -> None:
        """Create an empty table."""
        self.max_sessions = max_sessions
        self.ttl = ttl
        self._sessions: dict[str, Session] = {}
        self._expired: OrderedDict[str, str | Finished] = OrderedDict()
        self._remember = remember_expired

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, env: Env, task_id: str = "") -> str:
        """Add a session; raises ``SessionError(503)`` when the table is full.

        Its secret (``secret_of``) goes to the opener alone: an id is not a credential (it is
        logged, and shown in errors), so a guessed or leaked id cannot drive the session.
        """
        if len(self._sessions) >= self.max_sessions:
            self.reap()  # only when full: idle sessions are otherwise reaped in the background
        if len(self._sessions) >= self.max_sessions:
            raise SessionError(
                503, "sessions_full", f"all {self.max_sessions} sessions are in use; retry later"
            )
        sid = secrets.token_urlsafe(12)
        self._sessions[sid] = Session(env, task_id)
        return sid

    def get(self, sid: str) -> Session:
        """The live session ``sid``; 410 if it expired, 404 if it never existed."""
        session = self._sessions.get(sid)
        if session is not None and time.monotonic() - session.last_used > self.ttl:
            self._expire(sid)
            session = None
        if session is None:
            if isinstance(self._expired.get(sid), Finished):
                raise SessionError(
                    409, "episode_state", "the episode is over; call reset() to start another"
                )
            if sid in self._expired:
                raise SessionError(
                    410, "session_expired",
                    f"session {sid!r} expired after {self.ttl:g} s idle; call /reset",
                )  # fmt: skip
            raise SessionError(404, "unknown_session", f"unknown session {sid!r}; call /reset")
        session.last_used = time.monotonic()
        return session

    def secret_of(self, sid: str) -> str:
        """The secret of the live session ``sid``."""
        return self._sessions[sid].secret

    def authorize(self, sid: str, secret: str | None) -> None:
        """Raise ``SessionError(403)`` unless ``secret`` is the one ``sid`` was opened with.

        A session that expired or never existed passes here, to be answered by :meth:`get`
        (410, 404): those answers hold nothing of the episode.
        """
        record = self._sessions.get(sid) or self._expired.get(sid)
        expected = getattr(record, "secret", None)
        if expected is not None and not hmac.compare_digest(expected, secret or ""):
            raise SessionError(
                403, "forbidden",
                f"wrong session_secret for session {sid!r}: send the session_secret that "
                "reset answered with this session_id (an id alone drives no session)",
            )  # fmt: skip

    def close(self, sid: str) -> bool:
        """Close and drop a session; False if there was none."""
        session = self._sessions.pop(sid, None)
        if session is None:
            return False
        session.env.close()
        return True

    def live(self, sid: str) -> bool:
        """Whether ``sid`` is a running episode (not idle past the ttl); touches nothing."""
        session = self._sessions.get(sid)
        return session is not None and time.monotonic() - session.last_used <= self.ttl

    def finished(self, sid: str) -> Finished | None:
        """The record of ``sid`` if its episode ended (None if live, expired or unknown)."""
        record = self._expired.get(sid)
        return record if isinstance(record, Finished) else None

    def finish(self, sid: str) -> None:
        """Release a session whose episode ended; later steps get "episode is over"."""
        session = self._sessions.get(sid)
        if session is not None:
            record = Finished(session.task_id, session.steps, session.last, session.secret)
            self._expire(sid, record)

    def _expire(self, sid: str, why: str | Finished = "expired") -> None:
        session = self._sessions.pop(sid, None)
        if session is not None:
            session.env.close()
        self._expired[sid] = why
        while len(self._expired) > self._remember:
            self._expired.popitem(last=False)

    def reap(self) -> int:
        """Expire every session idle for longer than the ttl; returns how many."""
        now = time.monotonic()
        stale = [
            sid
            for sid, s in self._sessions.items()
            if now - s.last_used > self.ttl and not s.lock.locked()
        ]
        for sid in stale:
            self._expire(sid)
        return len(stale)

    def close_all(self) -> None:
        """Close every session (server shutdown)."""
        for sid in list(self._sessions):
            self.close(sid)
