"""The episode calls both transports make: reset, step, close and state of a session.

The HTTP routes (:mod:`envhub.server.app`) and the WebSocket endpoint (:mod:`envhub.server.ws`)
are thin readers of the wire bodies around these; the state of every episode lives here, in the
:class:`~envhub.server.sessions.SessionTable`, never in a connection, so a client that reconnects
finds its episode where it left it.

Answers are JSON text, serialised once by pydantic-core: the HTTP routes send it as it is
(no second validation through a ``response_model``), the WebSocket sends it as one frame.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable

from envhub.core import Env
from envhub.errors import EpisodeStateError, NotSupported
from envhub.types import Info, Message, Status, StepResult
from envhub.wire import ResetResponse, SessionState

from .calls import Calls
from .sessions import Session, SessionTable


def too_large(size: int, limit: int) -> str:
    """The model's error for a message of ``size`` bytes over the server's body ``limit``."""
    return (
        f"the message is {size} bytes as JSON, over the {limit} bytes this server reads "
        "(max_body_bytes); answer in a shorter message"
    )


class Episodes:
    """Sessions and the calls on them; one per app."""

    def __init__(
        self, env: Env, sessions: SessionTable, calls: Calls, metrics: Counter[str]
    ) -> None:
        """Serve episodes of forks of ``env``, kept in ``sessions``, run by ``calls``."""
        self.env, self.sessions, self.calls, self.metrics = env, sessions, calls, metrics

    async def reset(
        self, seed: int | None, task_id: str | None, close_session: str | None = None
    ) -> tuple[str, str]:
        """Start an episode in a new session; returns its id and the answer as JSON.

        ``close_session`` is closed once the new episode has opened (a refused reset, an
        unknown task, leaves it running) and before its session is made (its slot is free
        for the new one); the caller has checked it is the caller's (see
        :meth:`SessionTable.authorize`). The answer carries the new session's secret.
        """
        episode_env = self.env.fork()
        try:
            result = await self.calls.reset(episode_env, seed, task_id)
            if close_session:
                self.sessions.close(close_session)
            sid = self.sessions.create(episode_env, result.info.task_id)
        except BaseException:
            episode_env.close()
            raise
        self.metrics["episodes"] += 1
        body = ResetResponse.model_construct(
            session_id=sid,
            session_secret=self.sessions.secret_of(sid),
            messages=result.messages,
            info=result.info,
        )
        return sid, body.model_dump_json()

    async def step(self, sid: str, message: Message | str, seq: int | None = None) -> str:
        """One assistant message; the answer as JSON.

        With ``seq`` (the client's count of steps, this one included) a step the server
        already applied is answered from its record, and a gap is a 409.
        """
        return await self._apply(sid, seq, lambda session: self.calls.step(session.env, message))

    async def refuse(self, sid: str, size: int, limit: int, seq: int | None = None) -> str:
        """A step whose message of ``size`` bytes is over the body ``limit``: the model's.

        The server cannot read the message, so the environment never sees it: the step is
        the model's ``invalid_action`` and ends the episode as a truncation, paid as
        :meth:`Env.finish` pays it (an env without ``finish`` pays 0). In-process, a message
        over the env's own ``max_message_chars`` is ``invalid_action`` too.
        """
        error = too_large(size, limit)
        return await self._apply(sid, seq, lambda session: self._refused(session, error))

    async def _refused(self, session: Session, error: str) -> StepResult:
        try:
            result = await self.calls.blocking(session.env.finish)
        except NotSupported:
            info = Info(task_id=session.task_id)
            result = StepResult(
                messages=[], reward=0.0, terminated=False, truncated=True, info=info
            )
        info = result.info.model_copy(update={"status": Status.INVALID_ACTION, "error": error})
        return result.model_copy(update={"info": info, "terminated": False, "truncated": True})

    async def _apply(
        self, sid: str, seq: int | None, act: Callable[[Session], Awaitable[StepResult]]
    ) -> str:
        """``act`` as the session's next step, once: see :meth:`step` for ``seq``."""
        finished = self.sessions.finished(sid)
        if finished is not None and seq is not None and seq == finished.steps and finished.last:
            return finished.last
        session = self.sessions.get(sid)
        async with session.lock:
            if seq is not None and seq == session.steps and session.last is not None:
                return session.last
            if seq is not None and seq != session.steps + 1:
                raise EpisodeStateError(
                    f"step seq {seq}, but session {sid!r} has applied {session.steps} steps; "
                    f"send seq {session.steps + 1} (or omit seq)"
                )
            try:
                result = await act(session)
            except TimeoutError:
                self.sessions.close(sid)
                raise
            session.steps += 1
            session.last = text = result.model_dump_json()
        self.metrics[f"steps_{result.info.status.value}"] += 1
        if result.terminated or result.truncated:
            self.sessions.finish(sid)
        return text

    async def finish(self, sid: str) -> str:
        """End the episode from outside (``Env.finish``): its final accounting as JSON."""
        session = self.sessions.get(sid)
        async with session.lock:
            try:
                result = await self.calls.blocking(session.env.finish)
            except TimeoutError:
                self.sessions.close(sid)
                raise
        self.sessions.finish(sid)
        return result.model_dump_json()

    def close(self, sid: str) -> bool:
        """End a session early; False if there was none."""
        return self.sessions.close(sid)

    def state(self, sid: str) -> SessionState:
        """Where the session's episode stands (a finished one included)."""
        finished = self.sessions.finished(sid)
        if finished is not None:
            return SessionState(
                session_id=sid, task_id=finished.task_id, steps=finished.steps, done=True
            )
        session = self.sessions.get(sid)
        return SessionState(
            session_id=sid, task_id=session.task_id, steps=session.steps, done=False
        )
