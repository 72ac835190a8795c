"""OpenEnv's protocol at the server's root: ``envhub serve NAME --openenv``.

An unmodified openenv-core client (``GenericEnvClient``) plays episodes of any envhub
environment. Its WebSocket ``/ws`` carries one episode per connection: the client sends
``{"type": "reset" | "step" | "state" | "close", "data": {...}}`` and gets back
``{"type": "observation", "data": {"observation": {...}, "reward": R, "done": D}}`` (or
``"state"``, or ``"error"`` with OpenEnv's error codes). The action is ``{"message": TEXT}``;
the observation carries the environment's reply messages, its task id, status and reward
components. ``reset`` takes ``seed`` and envhub's ``task_id``.

Every frame is answered, and a malformed one (not JSON, nested past the parser's depth, not
an object, a ``type`` that is no known string, ``data`` that is no object, fields of the wrong
type) gets an error frame and leaves the connection and its episode as they were, as envhub's
own ``/ws`` does. Whose fault an error is, is said in OpenEnv's codes (:func:`_error_for`):
the frame's or the action's (``INVALID_JSON``, ``UNKNOWN_TYPE``, ``VALIDATION_ERROR``; a
request envhub refuses, such as an unknown task, ``EXECUTION_ERROR``), or envhub's machinery
(``SESSION_ERROR``, ``CAPACITY_REACHED``), which OpenEnv clients (envhub's ``OpenEnvEnv``
among them) must not charge to the action: the server's own deadline, a full server, a
step whose status is ``infra_error``/``env_error`` (never a reward of 0 that a trainer would
train on, as ``--nemo-gym`` answers 503), a bug.

HTTP, where OpenEnv has it: ``/health``, ``/metadata``, ``/schema``, ``/state`` and
``/reset`` answer as OpenEnv's do, and so does OpenEnv 0.10's Task API (:mod:`.tasks`).
OpenEnv's HTTP ``/step`` runs a fresh environment with no episode; an envhub episode holds
state, so ``/step`` answers 409 and points at ``/ws``.
envhub's own ``/reset``, ``/step``, ``/health`` and ``/ws`` give way to these; the rest of its
API stays, ``/verify`` and ``/tasks`` only with ``--answers`` (``ServerSettings.answers``).

The bodies are written here from OpenEnv's protocol, not imported from openenv-core: importing
its types loads gradio and fastmcp (2,300 modules, 19 s cold), which a server must not pay.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Body, FastAPI, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envhub.errors import EpisodeError, status_for
from envhub.server.episodes import Episodes
from envhub.server.errors import CLIENT_ERRORS, error_response
from envhub.server.sessions import SessionError
from envhub.server.workers import Overloaded
from envhub.types import Message, Status

from . import tasks

PATHS = frozenset({"/ws", "/reset", "/step", "/state", "/health", "/schema", "/metadata"})
"""The paths this dialect answers; envhub's own routes at these paths are not mounted."""

MACHINERY = frozenset({Status.INFRA_ERROR, Status.ENV_ERROR})
"""Statuses of envhub's machinery: answered ``SESSION_ERROR``, never charged to the action."""

log = logging.getLogger("envhub.server")


class BadFrame(Exception):
    """A frame that is no OpenEnv message; ``code`` is the OpenEnv error code to answer."""

    def __init__(self, code: str, message: str) -> None:
        """Record the code and the message."""
        super().__init__(message)
        self.code = code


class OpenEnvAction(BaseModel):
    """The action of every envhub environment served over OpenEnv: one assistant message."""

    model_config = ConfigDict(extra="forbid")

    message: str
    """The assistant's text."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """OpenEnv's action metadata (ignored)."""


class OpenEnvReset(BaseModel):
    """``reset``'s data: OpenEnv's ``seed`` and ``episode_id``, and envhub's ``task_id``."""

    model_config = ConfigDict(extra="forbid")

    seed: int | None = None
    episode_id: str | None = None
    """Accepted for OpenEnv's clients; envhub names its own sessions."""
    task_id: str | None = None
    """Play this task of the environment instead of one drawn with ``seed``."""


class OpenEnvObservation(BaseModel):
    """The observation: what the environment said, and the episode's accounting."""

    messages: list[dict[str, Any]]
    """The environment's messages (the opening system/user messages at reset)."""
    task_id: str
    status: Status = Status.OK
    components: dict[str, float] = Field(default_factory=dict)
    """The step's reward by component."""
    error: str | None = None


class OpenEnvState(BaseModel):
    """``state``: OpenEnv's ``episode_id`` and ``step_count``, plus the task and its end."""

    episode_id: str | None = None
    step_count: int = 0
    task_id: str | None = None
    done: bool = False


def _observation(body: dict[str, Any], reward: float | None, done: bool) -> dict[str, Any]:
    """OpenEnv's serialised observation from an envhub reset or step answer."""
    info = body["info"]
    obs = OpenEnvObservation(
        messages=body["messages"],
        task_id=info["task_id"],
        status=info.get("status", Status.OK),
        components=info.get("components", {}),
        error=info.get("error"),
    )
    return {"observation": obs.model_dump(mode="json"), "reward": reward, "done": done}


def _from_step(text: str) -> str:
    """The frame answering a step: its observation, or a machinery status as an error frame."""
    body = json.loads(text)
    info = body["info"]
    if info.get("status") in MACHINERY:
        return _error(f"envhub could not play this step ({info['status']}: {info.get('error')}); "
                      "the episode is over: reset", "SESSION_ERROR")  # fmt: skip
    data = _observation(body, body["reward"], body["terminated"] or body["truncated"])
    return json.dumps({"type": "observation", "data": data})


def _error(message: str, code: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})


def _parse(raw: str) -> tuple[str, dict[str, Any]]:
    """A text frame's ``type`` and ``data`` (``{}`` when absent or null).

    Raises:
        BadFrame: Not JSON (or nested past the parser's depth), not an object, a ``type``
            that is not one of OpenEnv's message types, or ``data`` that is no object.
    """
    try:
        frame = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise BadFrame("INVALID_JSON", f"Invalid JSON: {str(e)[:200]}") from None
    if not isinstance(frame, dict):
        shape = '{"type": ..., "data": {...}}'
        said = f"Invalid message: a frame is a JSON object {shape}, not a {type(frame).__name__}"
        raise BadFrame("VALIDATION_ERROR", said)
    kind, data = frame.get("type", ""), frame.get("data")
    if not isinstance(kind, str) or kind not in TYPES:
        raise BadFrame("UNKNOWN_TYPE", f"Unknown message type: {repr(kind)[:80]}; send "
                       "reset, step, state or close")  # fmt: skip
    if data is not None and not isinstance(data, dict):
        said = f"Invalid message: data: a {type(data).__name__}, not an object"
        raise BadFrame("VALIDATION_ERROR", said)
    return kind, data or {}


TYPES = frozenset({"reset", "step", "state", "close"})
"""OpenEnv's message types that envhub answers (``mcp`` is OpenEnv's own tools, not served)."""


def _error_for(exc: Exception, deadline_s: float, metrics: Counter[str]) -> str:
    """The error frame answering ``exc``, with the code that says whose fault it is.

    The action's or the frame's: ``VALIDATION_ERROR``; a request envhub refuses (an unknown
    task, a step after the episode's end): ``EXECUTION_ERROR``; the session gone (expired,
    closed, never reset): ``SESSION_ERROR``; envhub's machinery: ``CAPACITY_REACHED`` (full:
    sessions or workers) or ``SESSION_ERROR`` (its deadline, a wedged pool, an environment's
    own failure, a bug: logged with its traceback). OpenEnv's clients charge
    ``VALIDATION_ERROR`` and ``EXECUTION_ERROR`` on a step to the action, so no machinery
    failure may answer with them.
    """
    if isinstance(exc, BadFrame):
        return _error(str(exc), exc.code)
    if isinstance(exc, ValidationError):
        return _error(f"Invalid message: {_fields(exc)}", "VALIDATION_ERROR")
    if isinstance(exc, SessionError):
        return _error(str(exc), "CAPACITY_REACHED" if exc.code == 503 else "SESSION_ERROR")
    if isinstance(exc, Overloaded):
        metrics["refused_overloaded"] += 1
        return _error(f"envhub is at capacity: {exc}; retry later", "CAPACITY_REACHED")
    if isinstance(exc, EpisodeError) and status_for(exc) in MACHINERY:
        return _error(f"envhub failed ({status_for(exc).value}): {exc}", "SESSION_ERROR")
    if isinstance(exc, TimeoutError):
        metrics["deadline_exceeded"] += 1
        said = f"the call ran past envhub's deadline of {deadline_s:g} s (the server's, not the "
        return _error(said + "action's); the session is closed: reset", "SESSION_ERROR")
    if isinstance(exc, tuple(CLIENT_ERRORS)):
        return _error(str(exc) or type(exc).__name__, "EXECUTION_ERROR")
    metrics["internal_errors"] += 1
    log.error("bug in the OpenEnv /ws", exc_info=exc)
    return _error(f"envhub failed (internal error {type(exc).__name__}: {str(exc)[:200]})",
                  "SESSION_ERROR")  # fmt: skip


class _Connection:
    """One WebSocket connection: at most one episode (session) at a time."""

    def __init__(self, episodes: Episodes, settings: Any, metrics: Counter[str]) -> None:
        self.episodes, self.max_bytes = episodes, settings.max_body_bytes
        self.deadline_s, self.metrics = settings.request_timeout_s, metrics
        self.sid: str | None = None
        self.ops: dict[str, Callable[[dict[str, Any]], Awaitable[str]]] = {
            "reset": self.reset,
            "step": self.step,
            "state": self.state,
        }

    async def reset(self, data: dict[str, Any]) -> str:
        req = OpenEnvReset.model_validate(data)
        self.sid, text = await self.episodes.reset(req.seed, req.task_id, self.sid)
        return json.dumps(
            {"type": "observation", "data": _observation(json.loads(text), None, False)}
        )

    async def step(self, data: dict[str, Any]) -> str:
        action = OpenEnvAction.model_validate(data)
        if self.sid is None:
            raise SessionError(
                409, "episode_state", "no episode on this connection: send reset first"
            )
        text = await self.episodes.step(self.sid, Message(role="assistant", content=action.message))
        return _from_step(text)

    async def state(self, data: dict[str, Any]) -> str:
        state = OpenEnvState()
        if self.sid is not None:
            s = self.episodes.state(self.sid)
            state = OpenEnvState(
                episode_id=s.session_id, step_count=s.steps, task_id=s.task_id, done=s.done
            )
        return json.dumps({"type": "state", "data": state.model_dump()})

    async def answer(self, raw: str | bytes) -> str | None:
        """The frame answering ``raw``; ``None`` when the client closes the episode.

        Every frame gets an answer and none ends the connection or its episode: a malformed
        one or a failed call is an error frame (:func:`_error_for`).
        """
        if isinstance(raw, bytes):
            return _error("binary frames are not read: send the JSON as a text frame",
                          "INVALID_JSON")  # fmt: skip
        if len(raw) > self.max_bytes:
            return _error(f"the frame is {len(raw)} bytes, over this server's {self.max_bytes}; "
                          "send a shorter message", "VALIDATION_ERROR")  # fmt: skip
        try:
            kind, data = _parse(raw)
            if kind == "close":
                return None
            return await self.ops[kind](data)
        except Exception as e:  # noqa: BLE001 - each answered by whose fault it is; a bug logged
            return _error_for(e, self.deadline_s, self.metrics)

    def close(self) -> None:
        if self.sid is not None:
            self.episodes.close(self.sid)
            self.sid = None


async def _receive(websocket: WebSocket) -> str | bytes:
    """The next frame, text or binary (``receive_text`` fails on a binary one, unanswered)."""
    frame = await websocket.receive()
    if frame["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(frame.get("code", 1000))
    text = frame.get("text")
    return text if text is not None else frame.get("bytes") or b""


def _fields(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, x['loc'])) or 'data'}: {x['msg']}" for x in e.errors())


def install(app: FastAPI, server: Any) -> frozenset[str]:
    """Mount OpenEnv's routes on ``app`` for ``server`` (an :class:`~.app.Server`)."""
    episodes: Episodes = server.episodes
    spec = server.env.spec

    @app.websocket("/ws")
    async def session(websocket: WebSocket) -> None:
        await websocket.accept()
        conn = _Connection(episodes, server.settings, server.metrics)
        try:
            while (reply := await conn.answer(await _receive(websocket))) is not None:
                await websocket.send_text(reply)
        except WebSocketDisconnect:
            pass
        finally:
            conn.close()

    async def reset(body: OpenEnvReset = Body(default_factory=OpenEnvReset)) -> dict[str, Any]:  # noqa: B008
        sid, text = await episodes.reset(body.seed, body.task_id)
        episodes.close(sid)  # OpenEnv's HTTP holds no episode
        return _observation(json.loads(text), None, False)

    async def step() -> Any:
        return error_response(409, "episode_state", "envhub episodes hold state, which OpenEnv's "
                              "HTTP /step does not keep: play over the WebSocket /ws "
                              "(openenv-core's clients do)")  # fmt: skip

    routes: dict[str, tuple[str, Callable[..., Any]]] = {
        "/health": ("GET", lambda: {"status": "healthy"}),
        "/metadata": (
            "GET",
            lambda: {
                "name": spec.id,
                "description": spec.description,
                "version": str(spec.version),
            },
        ),  # fmt: skip
        "/schema": ("GET", lambda: _SCHEMA),
        "/state": ("GET", lambda: OpenEnvState().model_dump()),
        "/reset": ("POST", reset),
        "/step": ("POST", step),
    }
    for path, (method, fn) in routes.items():
        app.add_api_route(path, fn, methods=[method])
    tasks.install(app, server)  # OpenEnv 0.10's Task API
    return PATHS


_SCHEMA = {
    "action": OpenEnvAction.model_json_schema(),
    "observation": OpenEnvObservation.model_json_schema(),
    "state": OpenEnvState.model_json_schema(),
}
"""OpenEnv's ``/schema``: the action, observation and state as JSON schemas."""
