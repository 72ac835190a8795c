"""OpenEnv's protocol at the server's root: ``envhub serve NAME --openenv``.

An unmodified openenv-core client (``GenericEnvClient``) plays episodes of any envhub
environment. Its WebSocket ``/ws`` carries one episode per connection: the client sends
``{"type": "reset" | "step" | "state" | "close", "data": {...}}`` and gets back
``{"type": "observation", "data": {"observation": {...}, "reward": R, "done": D}}`` (or
``"state"``, or ``"error"`` with OpenEnv's error codes). The action is ``{"message": TEXT}``;
the observation carries the environment's reply messages, its task id, status and reward
components. ``reset`` takes ``seed`` and envhub's ``task_id``.

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
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Body, FastAPI, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envhub.errors import EnvhubError
from envhub.server.episodes import Episodes
from envhub.server.errors import error_response
from envhub.server.sessions import SessionError
from envhub.types import Message, Status

from . import tasks

PATHS = frozenset({"/ws", "/reset", "/step", "/state", "/health", "/schema", "/metadata"})
"""The paths this dialect answers; envhub's own routes at these paths are not mounted."""


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


def _from_step(text: str) -> dict[str, Any]:
    body = json.loads(text)
    return _observation(body, body["reward"], body["terminated"] or body["truncated"])


def _error(message: str, code: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})


class _Connection:
    """One WebSocket connection: at most one episode (session) at a time."""

    def __init__(self, episodes: Episodes, max_bytes: int) -> None:
        self.episodes, self.max_bytes = episodes, max_bytes
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
        return json.dumps({"type": "observation", "data": _from_step(text)})

    async def state(self, data: dict[str, Any]) -> str:
        state = OpenEnvState()
        if self.sid is not None:
            s = self.episodes.state(self.sid)
            state = OpenEnvState(
                episode_id=s.session_id, step_count=s.steps, task_id=s.task_id, done=s.done
            )
        return json.dumps({"type": "state", "data": state.model_dump()})

    async def answer(self, raw: str | bytes) -> str | None:
        """The frame answering ``raw``; ``None`` when the client closes the episode."""
        if isinstance(raw, bytes):
            return _error("binary frames are not read: send the JSON as a text frame",
                          "INVALID_JSON")  # fmt: skip
        if len(raw) > self.max_bytes:
            return _error(f"the frame is {len(raw)} bytes, over this server's {self.max_bytes}; "
                          "send a shorter message", "VALIDATION_ERROR")  # fmt: skip
        try:
            frame = json.loads(raw)
        except json.JSONDecodeError as e:
            return _error(f"Invalid JSON: {e}", "INVALID_JSON")
        kind = frame.get("type", "") if isinstance(frame, dict) else ""
        if kind == "close":
            return None
        if kind not in self.ops:
            return _error(f"Unknown message type: {kind!r}; send reset, step, state or close",
                          "UNKNOWN_TYPE")  # fmt: skip
        try:
            return await self.ops[kind](frame.get("data") or {})
        except ValidationError as e:
            return _error(f"Invalid message: {_fields(e)}", "VALIDATION_ERROR")
        except SessionError as e:  # expired or closed: the server's doing, not the action's
            return _error(str(e) or type(e).__name__, "SESSION_ERROR")
        except (EnvhubError, ValueError, TimeoutError) as e:
            return _error(str(e) or type(e).__name__, "EXECUTION_ERROR")

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
        conn = _Connection(episodes, server.settings.max_body_bytes)
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
