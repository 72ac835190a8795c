"""An OpenEnv environment as an envhub environment: ``envhub.interop.openenv:OpenEnvEnv``.

A catalog entry points at a running OpenEnv server (``options.base_url``), or names an image
of one (``options.image``) that envhub starts, and plays it over OpenEnv's WebSocket protocol,
one connection per episode::

    - name: word-guess
      entry_point: envhub.interop.openenv:OpenEnvEnv
      max_turns: 4
      dataset: {size: 50}            # tasks are OpenEnv seeds 0..49
      options:
        base_url: http://127.0.0.1:8001
        action_field: word            # the model's text fills this field of the action
        template: "Feedback: {feedback}"

With ``options.image`` (instead of ``base_url``) envhub's Docker runner starts the image's own
server (:func:`envhub.docker.run_image`): the
container's ``port`` (default 8000, OpenEnv's) is reached on 127.0.0.1 only, ``environment``
sets its variables, and envhub waits up to ``start_timeout_s`` (default 120) for its
``/health``, on the first ``reset`` (or ``warmup``). It runs under the policy of envhub's own
containers (the entry's ``docker:`` limits and network; a read-only root with a ``/tmp``
tmpfs; no capabilities), is removed on ``close`` (and at exit, or by the next sweep if this
process dies), and one that dies is replaced at the next ``reset``. Nothing is pulled or
built: an image missing from the engine is an ``InfraError`` saying how to build or pull it::

    options:
      image: guess-env:latest         # `openenv build` in the environment's folder makes one
      environment: {LEVEL: hard}
      action_field: word

With ``options.catalog`` and ``options.card`` (instead of ``base_url``) the environment is a
card of an OpenEnv 0.10 discovery catalog (a file, a folder holding ``catalog.json``, or a URL;
its digest checked): envhub fetches the card's source commit and runs its server
(:mod:`.source`; ``options.python``: a Python with its dependencies, else a venv made for it)::

    options:
      catalog: https://example.org/openenv/catalog.json
      card: guess                     # the card's name or identifier (`envhub catalog list`)
      action_field: word

Without ``action_field`` the model's message is parsed as the action's JSON. Each observation
(the one ``reset`` returns included) becomes the next user message through ``template``, a
format string over the observation's fields plus ``{observation}``, the whole observation as
JSON. OpenEnv's reward of a step is its ``reward`` component (the primary one).

Statuses: an action the OpenEnv server refuses (a validation error, or an error raised while
executing it) is the model's ``invalid_action``, as is a message that is not the action's JSON
and one whose frame the server closes the connection on as too big (close code 1009: the
episode ends there);
an OpenEnv server that cannot be reached, drops the connection or refuses a reset (an expired
session included) is ``infra_error`` (so is an image's container that cannot start: no Docker
engine, no such image, or no ``/health`` in time; and a card's source that cannot be fetched,
installed or started); one that answers with no JSON object (a
proxy's error page), a binary frame, or fields of the wrong type (``done`` the string
``"false"``, a reward that is no number) is ``env_error``; one that does not answer within
``timeout_s`` (the whole message: a trickle too) is ``infra_error``: a remote that does not
answer in time is the machinery's fault, and envhub cannot tell a slow remote from one that
works on a hard action (a remote whose steps run the model's work must put its own deadline
on it and say so in its answer). None of these is the model's ``invalid_action``.

Its steps are async (:attr:`~envhub.core.Env.async_steps`): a server awaits each episode's
WebSocket on its event loop (``websockets``' asyncio client), holding no thread while the
OpenEnv server thinks; the sync API (``reset``, ``step``) plays over a blocking connection
(``websockets``' sync client), the same protocol and statuses, one definition of each.

The wire is spoken with ``websockets`` (a core dependency), not openenv-core's client: that
client turns every server error into a bare ``RuntimeError``, losing the error code the
statuses above are read from, and importing it loads gradio (0.3's async ``EnvClient``
also sets ``NO_PROXY`` in the process's environment around each connect).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import math
from collections.abc import Iterator
from typing import Any, ClassVar

from websockets.asyncio.client import connect as aconnect
from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.sync.client import connect

from envhub.core import Episode, Feedback, TaskEnv
from envhub.errors import ConfigError, EpisodeError, InfraError
from envhub.spec import EnvSpec, fill_template
from envhub.types import Message, Status, Task

from ..replies import json_object
from .image import ImageServer
from .source import SourceServer

REFUSED = frozenset({"VALIDATION_ERROR", "EXECUTION_ERROR", "INVALID_JSON"})
"""OpenEnv error codes that answer the action itself: the model's ``invalid_action``."""


class OpenEnvRefused(Exception):
    """The OpenEnv server answered a step with an error about the action."""

    ends = False
    """Whether the episode is over with it (its connection is gone)."""


class OpenEnvTooBig(OpenEnvRefused):
    """The OpenEnv server closed the connection on a step's frame as too big (close code 1009).

    The action's size, which the model chose: its ``invalid_action``, ending the episode (the
    server dropped the connection), never the machinery's ``infra_error``.
    """

    ends = True


MESSAGE_TOO_BIG = 1009
"""The WebSocket close code a peer sends for a frame over its bound (``websockets``: 1 MiB)."""


_CLOSING: set[asyncio.Task[None]] = set()
"""Closes of asyncio connections under way (a task is kept until it ends)."""


class OpenEnvSession:
    """One episode's WebSocket connection to an OpenEnv server, blocking or asyncio.

    The constructor connects blocking (:meth:`call`); :meth:`aopen` connects on the running
    event loop (:meth:`acall`, on that loop only). Both send the same frames and read the
    answers the same way (:meth:`_answer`, :meth:`_wire`).
    """

    def __init__(self, base_url: str, timeout_s: float, *, connection: Any = None) -> None:
        """Connect to ``base_url``'s ``/ws``; an unreachable server is an :class:`InfraError`.

        ``connection``: an asyncio connection to it, made by :meth:`aopen` on the running loop.
        """
        self.url = base_url.rstrip("/").replace("http", "ws", 1) + "/ws"
        self.timeout_s = timeout_s
        self.loop: asyncio.AbstractEventLoop | None = None
        """The event loop of an asyncio connection; ``None`` for a blocking one."""
        if connection is not None:
            self.loop = asyncio.get_running_loop()
        else:
            try:
                connection = connect(self.url, open_timeout=timeout_s)
            except (OSError, WebSocketException, TimeoutError) as e:
                raise self._unreachable(e) from e
        self.ws: Any = connection

    @classmethod
    async def aopen(cls, base_url: str, timeout_s: float) -> OpenEnvSession:
        """A session over an asyncio connection, made on the running loop."""
        url = base_url.rstrip("/").replace("http", "ws", 1) + "/ws"
        try:
            connection = await aconnect(url, open_timeout=timeout_s)
        except (OSError, WebSocketException, TimeoutError, asyncio.TimeoutError) as e:
            raise InfraError(f"cannot reach the OpenEnv server at {url}: {e}") from e
        return cls(base_url, timeout_s, connection=connection)

    def _unreachable(self, e: BaseException) -> InfraError:
        return InfraError(f"cannot reach the OpenEnv server at {self.url}: {e}")

    def call(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """Send one message; the answer's ``data`` (observation, reward, done)."""
        if self.loop is not None:
            raise RuntimeError("this episode's connection is asyncio's: await acall()")
        with self._wire(kind):
            self.ws.send(_frame(kind, data))
            raw = self.ws.recv(timeout=self.timeout_s)
        return self._answer(kind, raw)

    async def acall(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """Async :meth:`call`, on the loop that opened the connection."""
        if self.loop is not asyncio.get_running_loop():
            raise RuntimeError(
                "this episode's connection belongs to another event loop (or is a blocking "
                "one): play an episode on one loop, or with the sync reset() and step()"
            )
        with self._wire(kind):
            await self.ws.send(_frame(kind, data))
            raw = await asyncio.wait_for(self.ws.recv(), self.timeout_s)
        return self._answer(kind, raw)

    @contextlib.contextmanager
    def _wire(self, kind: str) -> Iterator[None]:
        """The statuses of a call's failures on the wire (see the module docstring)."""
        try:
            yield
        except (TimeoutError, asyncio.TimeoutError) as e:  # the remote's delay, not the model's
            raise InfraError(
                f"the OpenEnv server at {self.url} did not answer {kind} within "
                f"{self.timeout_s:g} s (options.timeout_s)"
            ) from e
        except ConnectionClosed as e:
            if kind == "step" and e.rcvd is not None and e.rcvd.code == MESSAGE_TOO_BIG:
                raise OpenEnvTooBig(f"the action is too big for the OpenEnv server: {e}") from e
            raise InfraError(f"the OpenEnv server at {self.url} went away: {e}") from e
        except (OSError, WebSocketException) as e:
            raise InfraError(f"the OpenEnv server at {self.url} went away: {e}") from e

    def _answer(self, kind: str, raw: str | bytes) -> dict[str, Any]:
        """The answer's checked ``data``; an error frame raised as its status says.

        A reset or a step is answered by an ``observation`` frame whose ``data`` is an object;
        any other frame (no ``type``, a ``state`` frame, ``data`` null, false or 0) is the
        server's fault (``env_error``), never an empty observation that would pay.
        """
        answer = _json_object(kind, raw)
        if answer.get("type") == "error":
            error = answer.get("data")
            if not isinstance(error, dict):
                kind_ = type(error).__name__
                raise EpisodeError(f"the OpenEnv server's {kind} error frame holds a {kind_}, "
                                   "not an object")  # fmt: skip
            code = error.get("code", "UNKNOWN")
            if not isinstance(code, str):
                raise EpisodeError(f"the OpenEnv server's {kind} error frame has code "
                                   f"{repr(code)[:80]}, not a string")  # fmt: skip
            message = f"{code}: {error.get('message', '')}"[:500]
            message += _field_errors(error.get("errors"))
            if kind == "step" and code in REFUSED:
                raise OpenEnvRefused(message)
            raise InfraError(f"the OpenEnv server refused {kind}: {message}")
        if answer.get("type") != "observation":
            said = repr(answer.get("type"))[:80]
            raise EpisodeError(f"the OpenEnv server answered {kind} with a frame of type "
                               f"{said}, not an observation")  # fmt: skip
        return _checked(kind, answer.get("data"))

    def close(self) -> None:
        """Say goodbye and close the connection (best effort: the server may be gone).

        An asyncio connection is closed on its own loop: by a task if that loop runs here,
        else handed to it and waited for (at most ``timeout_s``); one whose loop has closed is
        left to the garbage collector.
        """
        if self.loop is None:
            try:
                self.ws.send(_frame("close"))
            except (OSError, WebSocketException):
                pass
            self.ws.close()
            return
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            if here is self.loop:
                task = here.create_task(self.aclose())
                _CLOSING.add(task)
                task.add_done_callback(_CLOSING.discard)
            elif not self.loop.is_closed():
                closing = asyncio.run_coroutine_threadsafe(self.aclose(), self.loop)
                with contextlib.suppress(TimeoutError, concurrent.futures.TimeoutError,
                                         concurrent.futures.CancelledError):  # fmt: skip
                    closing.result(self.timeout_s)

    async def aclose(self) -> None:
        """Async :meth:`close` of an asyncio connection, on its loop."""
        with contextlib.suppress(OSError, WebSocketException):
            await self.ws.send(_frame("close"))
        await self.ws.close()


class OpenEnvEnv(TaskEnv):
    """An OpenEnv server's environment; tasks are its seeds (``dataset.size`` of them)."""

    components = frozenset({"reward"})
    primary_component = "reward"
    sync_hooks: ClassVar[bool] = True
    """The sync API plays over a blocking connection (an episode's connection outlives a call,
    so it cannot be one event loop's per call)."""

    def __init__(
        self,
        spec: EnvSpec,
        *,
        base_url: str | None = None,
        image: str | None = None,
        catalog: str | None = None,
        card: str | None = None,
        python: str | None = None,
        port: int = 8000,
        environment: dict[str, Any] | None = None,
        start_timeout_s: float = 120.0,
        action_field: str | None = None,
        template: str = "{observation}",
        timeout_s: float = 30.0,
    ) -> None:
        """Play the OpenEnv server at ``base_url``, in ``image``, or of a ``catalog``'s ``card``.

        See the module docstring.
        """
        super().__init__(spec)
        if [base_url, image, catalog].count(None) != 2 or (catalog is None) != (card is None):
            raise ConfigError(
                f"{spec.name}: give one of options.base_url (a running OpenEnv server), "
                "options.image (an image of one that envhub starts) or options.catalog with "
                "options.card (a card of an OpenEnv catalog, whose source envhub runs)"
            )
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{spec.name}: options.base_url must be http(s)://HOST:PORT")
        self.action_field, self.template, self.timeout_s = action_field, template, timeout_s
        self._session: OpenEnvSession | None = None
        self._owner = True
        self._base_url = base_url or ""
        self._server: ImageServer | SourceServer | None = None
        if image is not None:
            self._server = ImageServer(spec, image, port, environment or {}, start_timeout_s)
        if catalog is not None and card is not None:
            self._server = SourceServer(spec, catalog, card, python, start_timeout_s)

    @property
    def base_url(self) -> str:
        """The OpenEnv server's URL (with ``options.image``: its container's, started now)."""
        return self._server.url() if self._server is not None else self._base_url

    def warmup(self) -> None:
        """Load the tasks and start the image's container (``options.image``)."""
        super().warmup()
        if self._server is not None:
            self._server.url()

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """One task per OpenEnv seed; the test split's seeds follow the train split's."""
        n = size or 100
        first = seed + (n if split == "test" else 0)
        return [
            Task(task_id=f"seed-{s}", prompt="", metadata={"seed": s})
            for s in range(first, first + n)
        ]

    def opening_messages(self, task: Task) -> list[Message]:
        """The system prompt only: the first user message is OpenEnv's reset observation."""
        prompt = self.spec.system_prompt
        return [Message(role="system", content=prompt)] if prompt else []

    def init_state(self, episode: Episode) -> OpenEnvSession:
        """Open the episode's connection and reset the OpenEnv environment with its seed.

        With ``options.image``, a container found dead is replaced and the reset retried.
        """
        self._drop_session()
        seed = episode.task.metadata["seed"]
        generation = self._server.generation if self._server is not None else 0
        try:
            session, data = self._reset(seed)
        except InfraError:
            if self._server is None or not self._server.revived(generation):
                raise
            session, data = self._reset(seed)
        return self._connected(episode, session, data)

    async def ainit_state(self, episode: Episode) -> OpenEnvSession:
        """:meth:`init_state` over an asyncio connection (a container is managed on a thread)."""
        self._drop_session()
        seed = episode.task.metadata["seed"]
        generation = self._server.generation if self._server is not None else 0
        try:
            session, data = await self._areset(seed)
        except InfraError:
            server = self._server
            if server is None or not await asyncio.to_thread(server.revived, generation):
                raise
            session, data = await self._areset(seed)
        return self._connected(episode, session, data)

    def _reset(self, seed: int) -> tuple[OpenEnvSession, dict[str, Any]]:
        session = OpenEnvSession(self.base_url, self.timeout_s)
        try:
            return session, session.call("reset", {"seed": seed})
        except BaseException:
            session.close()
            raise

    async def _areset(self, seed: int) -> tuple[OpenEnvSession, dict[str, Any]]:
        url = self._base_url if self._server is None else await asyncio.to_thread(self._server.url)
        session = await OpenEnvSession.aopen(url, self.timeout_s)
        try:
            return session, await session.acall("reset", {"seed": seed})
        except BaseException:
            session.close()
            raise

    def _connected(self, episode: Episode, session: OpenEnvSession, data: dict[str, Any]) -> Any:
        self._session = session
        episode.messages.append(self._user_message(data))
        return session

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Send the model's action; OpenEnv's observation, reward and done come back."""
        try:
            data = episode.state.call("step", self._action(message.content))
        except (OpenEnvRefused, ValueError) as e:
            return _refused(str(e), ends=getattr(e, "ends", False))
        return self._feedback(data)

    async def aenv_response(self, episode: Episode, message: Message) -> Feedback:
        """:meth:`env_response`, awaiting the OpenEnv server's answer."""
        try:
            data = await episode.state.acall("step", self._action(message.content))
        except (OpenEnvRefused, ValueError) as e:
            return _refused(str(e), ends=getattr(e, "ends", False))
        return self._feedback(data)

    def _feedback(self, data: dict[str, Any]) -> Feedback:
        reward = data.get("reward")
        return Feedback(
            messages=[self._user_message(data)],
            done=data.get("done") is True,
            components=None if reward is None else {"reward": float(reward)},
            info={"observation": data.get("observation", {})},
        )

    def _action(self, text: str) -> dict[str, Any]:
        """The action the model's text stands for (``ValueError``: it stands for none)."""
        if self.action_field:
            return {self.action_field: text}
        try:
            action = json.loads(text)
        except (ValueError, RecursionError) as e:  # nested past the parser's depth: the model's
            raise ValueError(f"the message is not the action's JSON ({str(e)[:200]})") from e
        if not isinstance(action, dict):
            raise ValueError("the action must be a JSON object of the action's fields")
        return action

    def _user_message(self, data: dict[str, Any]) -> Message:
        observation = data.get("observation") or {}
        whole = json.dumps(observation, sort_keys=True)
        fields = {**observation, "observation": whole}
        where = f"{self.spec.name}: options.template"
        text = fill_template(self.template, fields, where, "the OpenEnv observation")
        return Message(role="user", content=text)

    def fork(self) -> OpenEnvEnv:
        """A handle with its own episode (and, once reset, its own connection)."""
        clone: OpenEnvEnv = super().fork()  # type: ignore[assignment]
        clone._session = None
        clone._owner = False  # the container, if any, is this env's to remove
        return clone

    def _drop_session(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def close(self) -> None:
        """Close the running episode's connection; remove the container this env started."""
        self._drop_session()
        if self._owner and self._server is not None:
            self._server.close()


def _frame(kind: str, data: dict[str, Any] | None = None) -> str:
    """One message of OpenEnv's WebSocket protocol (``close`` carries no data)."""
    return json.dumps({"type": kind} if data is None else {"type": kind, "data": data})


def _json_object(kind: str, raw: str | bytes) -> dict[str, Any]:
    """The server's answer as a JSON object; anything else is the server's fault."""
    if not isinstance(raw, str):
        raise EpisodeError(f"the OpenEnv server answered {kind} with a binary frame")
    return json_object(f"the OpenEnv server ({kind})", raw)


def _field_errors(errors: Any) -> str:
    """OpenEnv 0.10's ``errors`` of a ``VALIDATION_ERROR`` (pydantic's, by field), as text.

    0.10 says only "Invalid message" and lists the fields in ``errors``; 0.3 put them in the
    message. The model reads this in its ``Invalid action`` feedback, so it names the fields.
    """
    if not isinstance(errors, list):
        return ""
    said = []
    for e in errors[:10]:
        if isinstance(e, dict):
            loc = ".".join(map(str, e.get("loc") or [])) if isinstance(e.get("loc"), list) else ""
            said.append(f"{loc or 'action'}: {e.get('msg', '')}"[:200])
    return f" ({'; '.join(said)})" if said else ""


def _checked(kind: str, data: Any) -> dict[str, Any]:
    """An answer's ``data``, checked against OpenEnv's types.

    ``done`` a bool, ``reward`` a finite number or null, ``observation`` an object: another
    type is the server's fault, never the model's.
    """
    if not isinstance(data, dict):
        said = "null" if data is None else f"{type(data).__name__} {repr(data)[:40]}"
        raise EpisodeError(f"the OpenEnv server's {kind} data is {said}, not an object")
    done, reward = data.get("done", False), data.get("reward")
    if not isinstance(done, bool):
        raise EpisodeError(f"the OpenEnv server's {kind} says done={done!r}, not true or false")
    if reward is not None and not _finite(reward):
        said = repr(reward)[:40]
        raise EpisodeError(f"the OpenEnv server's {kind} says reward={said}, not a number")
    if not isinstance(data.get("observation", {}), dict):
        raise EpisodeError(f"the OpenEnv server's {kind} observation is not an object")
    return data


def _finite(value: Any) -> bool:
    """A finite number that fits a float (not a bool; an int of 400 digits does not fit)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _refused(error: str, ends: bool = False) -> Feedback:
    """The model's action was refused: say so, and let the episode go on (unless it ``ends``)."""
    return Feedback(
        messages=[Message(role="user", content=f"Invalid action: {error}")],
        done=ends,
        status=Status.INVALID_ACTION,
        error=error,
    )
