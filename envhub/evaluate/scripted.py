"""A scripted OpenAI-compatible endpoint on loopback, for tests, benchmarks and smoke runs.

It is a real HTTP server (uvicorn serving a bare ASGI app) that answers
``POST /v1/chat/completions`` with whatever a Python *responder* says, at once, so rewards
are known exactly and a benchmark measures the client, not a model::

    with ScriptedEndpoint(answer_table({"2 + 3": "#### 5"})) as ep:
        envhub eval --base-url ep.base_url ...

A responder takes the request body (dict) and returns the assistant message as a dict
(``content`` and optionally ``tool_calls``), or raises :class:`ScriptedHTTPError` to answer
with an HTTP error. ``usage`` counts whitespace-separated words. ``stream: true`` requests get
the same answer as server-sent events (one delta chunk, a finish chunk, a usage chunk).
uvicorn is imported when a server starts (the ``server`` extra).

From a shell, to try ``envhub eval`` with no model and no network::

    python -m envhub.evaluate.scripted --port 8001 --answers-from gsm8k
    envhub eval --base-url http://127.0.0.1:8001/v1 --env gsm8k --limit 20

``--answers-from ENV`` answers every task of ENV, in every split it has, with its gold answer
written as the environment writes it (or put in ``--template``): a perfect model.
``--reply TEXT`` answers everything with TEXT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from envhub import chat_api
from envhub.lifetime import stop_signals

Responder = Callable[[dict[str, Any]], dict[str, Any]]
DEFAULT_TEMPLATE = "The answer is \\boxed{{{answer}}}."
"""How ``--answers-from`` writes a gold answer where the environment has no reference action."""


class ScriptedHTTPError(Exception):
    """Raised by a responder to make the endpoint answer ``status`` with ``text``."""

    def __init__(self, status: int, text: str = "scripted failure") -> None:
        """Answer with HTTP ``status`` and body ``text``."""
        super().__init__(text)
        self.status = status
        self.text = text


def last_user_text(body: dict[str, Any]) -> str:
    """Content of the last user message of a chat-completion request."""
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            return m.get("content") or ""
    return ""


def answer_table(table: dict[str, str], default: str = "I do not know.") -> Responder:
    """A responder that answers with ``table[key]`` for the first key in the last user turn."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        text = last_user_text(body)
        for key, answer in table.items():
            if key in text:
                return {"content": answer}
        return {"content": default}

    return respond


def _words(value: Any) -> int:
    return len(str(value or "").split())


def completion(body: dict[str, Any], message: dict[str, Any], model: str) -> dict[str, Any]:
    """A chat-completion response carrying ``message``, with word-count ``usage``.

    A ``finish_reason`` key in ``message`` sets the choice's finish reason (e.g. ``length``).
    """
    message = dict(message)
    finish = message.pop("finish_reason", None)
    prompt = sum(_words(m.get("content")) for m in body.get("messages", []))
    out = _words(message.get("content")) + sum(
        _words(c["function"].get("arguments")) for c in message.get("tool_calls") or []
    )
    return chat_api.completion(
        message,
        model=body.get("model") or model,
        usage=chat_api.token_usage(prompt, out),
        finish_reason=finish,
        id="chatcmpl-scripted",
    )


class ScriptedEndpoint:
    """Serve a responder as an OpenAI-compatible endpoint on ``127.0.0.1`` in a thread.

    Args:
        responder: Request body -> assistant message dict.
        model: Model id listed at ``/v1/models``.
        delay: Seconds to wait before each answer (to test interruption and concurrency).
    """

    def __init__(self, responder: Responder, *, model: str = "scripted", delay: float = 0.0):
        """Configure; :meth:`start` (or ``with``) opens the port."""
        self.responder = responder
        self.model = model
        self.delay = delay
        self.requests = 0
        """Chat completions answered so far."""
        self.bodies: list[dict[str, Any]] = []
        """Every chat-completion request body received, in order."""
        self.authorizations: set[str] = set()
        """Every ``Authorization`` header value received."""
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    async def _app(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        raw = b""
        more = True
        while more:
            msg = await receive()
            raw += msg.get("body", b"")
            more = msg.get("more_body", False)
        for key, value in scope.get("headers", []):
            if key == b"authorization":
                self.authorizations.add(value.decode())
        status, payload = self._handle(scope["method"], scope["path"], raw)
        if self.delay and status == 200 and scope["path"].endswith("/chat/completions"):
            await asyncio.sleep(self.delay)
        if status == 200 and isinstance(payload, dict) and payload.pop("_stream", False):
            data, kind = chat_api.sse(payload), b"text/event-stream"
        else:
            data, kind = json.dumps(payload).encode(), b"application/json"
        headers = [(b"content-type", kind), (b"content-length", b"%d" % len(data))]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    def _handle(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {method} {path}"}}
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as e:
            return 400, {"error": {"message": f"bad JSON: {e}"}}
        self.bodies.append(body)
        try:
            message = self.responder(body)
        except ScriptedHTTPError as e:
            return e.status, {"error": {"message": e.text}}
        self.requests += 1
        return 200, {**completion(body, message, self.model), "_stream": bool(body.get("stream"))}

    def start(self, port: int = 0) -> ScriptedEndpoint:
        """Start serving on loopback ``port`` (0: a free one); returns self once it answers."""
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as e:
            sock.close()
            raise OSError(
                f"cannot listen on 127.0.0.1:{port}: {e.strerror}; pick another --port"
            ) from e
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app, log_level="error", lifespan="on", access_log=False, interface="asgi3"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the scripted endpoint did not start within 10 s")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop the server and wait for its thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> ScriptedEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def gold_responder(env_name: str, template: str | None = None) -> Responder:
    """A responder that answers every task of ``env_name``, in every split, with its gold.

    The gold is written as the environment writes it (its ``reference_action``: ``#### 42``
    for gsm8k, a fenced program for code), or through ``template`` (``{answer}`` is the task's
    answer) when one is given or the environment has no single-turn reference.
    """
    import envhub

    table: dict[str, str] = {}
    with envhub.make(env_name) as env:
        for task in _every_split(env):
            prompt = env.opening_messages(task)[-1].content
            table[prompt] = _gold_text(env, task, template)
    return answer_table(table)


def _every_split(env: Any) -> list[Any]:
    """The tasks of the spec's split, ``train`` and ``test``: those of them the data has."""
    from ..errors import ConfigError

    tasks = []
    for split in dict.fromkeys((env.spec.split, "train", "test")):
        try:
            tasks.extend(env.tasks(split))
        except ConfigError:  # a split this dataset does not have
            continue
    return tasks


def _gold_text(env: Any, task: Any, template: str | None) -> str:
    """The gold answer to ``task``: ``template`` filled in, or the env's reference action."""
    from ..core import Episode

    if template is None and env.spec.max_turns == 1:
        opening = env.opening_messages(task)
        episode = Episode(task=task, seed=0, rng=random.Random(0), messages=opening)
        action = env.reference_action(episode)
        if action is not None and action.content:
            return action.content
    return (template or DEFAULT_TEMPLATE).format(answer=task.answer)


def main(argv: list[str] | None = None) -> None:
    """``python -m envhub.evaluate.scripted``: serve a scripted endpoint until SIGINT/SIGTERM.

    Both signals stop it (exit 0) whatever it inherited: a background job of a script starts
    with SIGINT ignored, and uvicorn, serving in a thread here, installs no handlers.
    """
    parser = argparse.ArgumentParser(
        prog="python -m envhub.evaluate.scripted",
        description="A scripted OpenAI-compatible endpoint on 127.0.0.1, for envhub eval offline.",
    )
    parser.add_argument("--port", type=int, default=8001, help="TCP port (default 8001).")
    parser.add_argument("--model", default="scripted", help="Model id it lists and answers as.")
    answer = parser.add_mutually_exclusive_group()
    answer.add_argument("--reply", default="I do not know.", help="Answer every request so.")
    answer.add_argument("--answers-from", metavar="ENV", help="Answer ENV's tasks with their gold.")
    parser.add_argument(
        "--template",
        default=None,
        help="With --answers-from: how to write the gold, {answer} standing for the task's "
        "answer (default: as the environment writes it, e.g. '#### 42' for gsm8k).",
    )
    args = parser.parse_args(argv)
    with stop_signals():
        try:
            _serve(parser, args)
        except KeyboardInterrupt:
            pass  # stopping on request is success


def _serve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Build the responder, serve it, and wait; the caller catches the stop."""
    if args.answers_from:
        responder = gold_responder(args.answers_from, args.template)
    else:
        responder = answer_table({}, default=args.reply)
    endpoint = ScriptedEndpoint(responder, model=args.model)
    try:
        endpoint.start(args.port)
    except OSError as e:
        parser.exit(1, f"error: {e}\n")
    try:
        print(
            f"scripted endpoint at {endpoint.base_url} (model {args.model!r}); try:\n"
            f"  envhub eval --base-url {endpoint.base_url} --env {args.answers_from or 'gsm8k'} "
            "--limit 20\nCtrl-C stops it.",
            flush=True,
        )
        while endpoint._thread is not None and endpoint._thread.is_alive():
            time.sleep(0.5)
    finally:
        endpoint.stop()


if __name__ == "__main__":
    main()
