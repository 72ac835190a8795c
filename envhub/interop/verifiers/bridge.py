"""envhub's steps as the model of a verifiers (v1) environment's episodes.

In verifiers 0.4 a multi-turn environment does not call a model itself: its ``run`` asks an
agent for turns, and the agent's harness launches a chat program that sends each turn to an
OpenAI-style endpoint (through verifiers' interception server). envhub plays the other way
round: ``reset`` asks for the first turn and ``step`` gives the model's message. The
:class:`Bridge` joins the two. It keeps the environment serving in an event loop of its own
(a daemon thread) and answers its model requests at a loopback endpoint. One episode is a
:class:`Play`: each request for a turn waits there until envhub's ``step`` answers it, and the
finished episode comes back with its traces and rewards.

A play is found by the model name it gives the run (``envhub-play-<id>``), and the endpoint
takes only requests bearing the bridge's secret key.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import secrets
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from aiohttp import web
from verifiers.v1.clients import ModelContext
from verifiers.v1.configs.client import EvalClientConfig

from envhub import chat_api
from envhub.errors import InfraError

KEY_VAR = "ENVHUB_VERIFIERS_BRIDGE_KEY"
"""Prefix of the variable verifiers' client reads a bridge's key from (one per bridge, set in
this process only)."""
PLAY_PREFIX = "envhub-play-"


@dataclass
class Turn:
    """A model request of a play: the conversation so far, waiting for the model's reply."""

    messages: list[dict[str, Any]]
    reply: asyncio.Future[str]


class Play:
    """One episode in flight. Its methods are called from envhub's threads, not the loop."""

    def __init__(self, bridge: Bridge, play_id: str) -> None:
        self.bridge = bridge
        self.model = PLAY_PREFIX + play_id
        self.events: asyncio.Queue[Turn | vf.Episode] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.pending: Turn | None = None
        self.seen = 0
        """How many messages of the conversation envhub has been given."""

    def next(self, timeout: float) -> Turn | vf.Episode:
        """The next model request, or the finished episode; ``TimeoutError`` past ``timeout``."""
        got = asyncio.run_coroutine_threadsafe(self.events.get(), self.bridge.loop)
        try:
            event = got.result(timeout)
        except TimeoutError:
            got.cancel()
            raise
        self.pending = event if isinstance(event, Turn) else None
        return event

    def answer(self, text: str) -> None:
        """Give the pending request the model's reply."""
        turn, self.pending = self.pending, None
        if turn is None:
            raise RuntimeError("no model request is waiting for an answer")
        self.bridge.loop.call_soon_threadsafe(_settle, turn.reply, text)

    def abandon(self) -> None:
        """Stop the episode: its waiting request fails and its run is cancelled."""
        self.bridge.plays.pop(self.model, None)
        if self.task is not None and not self.bridge.loop.is_closed():
            self.bridge.loop.call_soon_threadsafe(self.task.cancel)
        if self.pending is not None and not self.bridge.loop.is_closed():
            abandoned = ConnectionAbortedError("envhub abandoned this episode")
            self.bridge.loop.call_soon_threadsafe(_settle, self.pending.reply, abandoned)
        self.pending = None


def _settle(future: asyncio.Future[str], outcome: str | BaseException) -> None:
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


class Bridge:
    """A verifiers environment serving in a background event loop, envhub answering its turns.

    Started by :meth:`open`, stopped by :meth:`close`.
    """

    def __init__(self, vf_env: vf.Env) -> None:
        self.vf_env = vf_env
        self.loop = asyncio.new_event_loop()
        self.plays: dict[str, Play] = {}
        self.key = secrets.token_hex(16)
        self.key_var = f"{KEY_VAR}_{secrets.token_hex(4).upper()}"
        self._stack = contextlib.AsyncExitStack()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.url = ""

    def open(self, timeout: float) -> None:
        """Start the loop, the environment's serving resources and the endpoint."""
        _put_uv_on_path()
        os.environ[self.key_var] = self.key
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._open(), self.loop).result(timeout)

    def play(self, task: vf.Task) -> Play:
        """Start an episode of ``task``; its first request arrives through :meth:`Play.next`."""
        play = Play(self, secrets.token_hex(8))
        self.plays[play.model] = play
        client = EvalClientConfig(base_url=f"{self.url}/v1", api_key_var=self.key_var)
        ctx = ModelContext(model=play.model, client=client)

        def launch() -> None:
            play.task = self.loop.create_task(self._run(play, task, ctx))

        self.loop.call_soon_threadsafe(launch)
        return play

    def close(self) -> None:
        """Abandon every play, stop serving and end the loop."""
        for play in list(self.plays.values()):
            play.abandon()
        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(30)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()

    # ------------------------------------------------------------------ in the loop

    async def _open(self) -> None:
        await self._stack.enter_async_context(self.vf_env.serving())
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        self._stack.push_async_callback(runner.cleanup)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"

    async def _shutdown(self) -> None:
        """Cancel the episodes in flight and leave the serving resources, on the loop."""
        runs = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in runs:
            task.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        await self._stack.aclose()
        gc.collect()  # finished programs' transports close while their loop still runs

    async def _run(self, play: Play, task: vf.Task, ctx: ModelContext) -> None:
        try:
            episode = await self.vf_env.run_episode(task, ctx)
        except Exception as exc:  # noqa: BLE001 (reported to the waiting step, never lost)
            episode = vf.Episode(task=vf.TraceTask(type=type(task).__name__, data=task.data))
            episode.errors.append(vf.Error(type=type(exc).__name__, message=str(exc)))
        self.plays.pop(play.model, None)  # no more requests: its model name is done
        await play.events.put(episode)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            return _error(401, "wrong or missing key")
        body = await request.json()
        play = self.plays.get(str(body.get("model", "")))
        if play is None:
            return _error(404, f"no episode in flight for model {body.get('model')!r}")
        turn = Turn(messages=list(body.get("messages") or []), reply=self.loop.create_future())
        await play.events.put(turn)
        try:
            text = await turn.reply
        except ConnectionAbortedError as e:
            return _error(503, str(e))
        if body.get("stream"):
            return await _stream(request, body["model"], text)
        return web.json_response(_completion(body["model"], text))


def _completion(model: str, text: str) -> dict[str, Any]:
    return chat_api.completion({"content": text}, model=model, id="envhub", created=0)


async def _stream(request: web.Request, model: str, text: str) -> web.StreamResponse:
    """The reply as OpenAI's server-sent chunks (verifiers' chat program streams)."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(chat_api.sse(_completion(model, text)))
    await response.write_eof()
    return response


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"message": message, "type": "envhub_bridge"}}
    return web.json_response(body, status=status)


def _put_uv_on_path() -> None:
    """Find ``uv`` (verifiers launches its chat program with it); else the one beside Python."""
    here = Path(sys.executable).parent
    if shutil.which("uv") is None and (here / "uv").exists():
        os.environ["PATH"] = f"{here}{os.pathsep}{os.environ.get('PATH', '')}"
    if shutil.which("uv") is None:
        raise InfraError(
            "verifiers' chat program needs `uv`, which is not on PATH: `pip install uv` in "
            f"the Python that runs the environment ({sys.executable})"
        )


def prepare_chat_program() -> None:
    """Make the environment of verifiers' chat program now, so no episode waits for it.

    As its runtime does at an episode's first turn: ``uv`` downloads the program's packages.
    """
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE
    from verifiers.v1.runtimes.subprocess import SubprocessConfig, SubprocessRuntime

    _put_uv_on_path()

    async def prepare() -> None:
        runtime = SubprocessRuntime(SubprocessConfig())
        await runtime.start()
        try:
            await runtime.prepare_uv_script(CHAT_PROGRAM_SOURCE, {})
        finally:
            await runtime.teardown()

    asyncio.run(prepare())


if __name__ == "__main__":
    prepare_chat_program()
