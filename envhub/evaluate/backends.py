"""Model backends for ``envhub eval``: an OpenAI-compatible endpoint, or a local model.

Every backend answers one chat (plus the environment's tools) with one assistant
:class:`~envhub.types.Message` and the token counts it cost. A failure to generate (endpoint
down, time-out, server error after retries) raises :class:`ModelError`; the episode loop
records it as ``infra_error``, never as a wrong answer.

* :class:`OpenAIEndpoint` posts to ``{base_url}/chat/completions`` with one pooled client
  (aiohttp, or httpx where aiohttp is missing) whose pool and an ``asyncio.Semaphore`` are
  both sized by ``concurrency``. Retries 429/5xx/connection errors with back-off; every
  request has a finite deadline.
* :class:`BatchingBackend` serves concurrent episodes from a local generation engine (vLLM, or
  the trainer's transformers engine, see :mod:`envhub.evaluate.local`): requests that arrive
  together are generated as one batch in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..engines.types import Generation, SamplingParams
from ..errors import EnvhubError, context_overflow
from ..types import FunctionCall, Message, ToolCall
from .transport import Transport, make_transport


class ModelError(EnvhubError):
    """The model could not produce an answer (infrastructure, not the model's skill)."""


class ContextExhausted(EnvhubError):
    """The conversation no longer fits the model's context window.

    Not a failure of the machinery: a multi-turn episode grows with what the model writes, so
    the episode loop ends it there (truncated, the environment's final accounting), as the
    trainer ends one at its token budget. Only an opening prompt that cannot fit is the
    environment's (``env_error``).
    """


class ModelBackend(Protocol):
    """What the episode loop needs from a model."""

    name: str
    """Model id written into every episode record."""

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: list[dict[str, Any]] | None,
        params: SamplingParams,
        seed: int | None = None,
    ) -> Generation:
        """Answer the chat with one assistant message."""
        ...

    async def aclose(self) -> None:
        """Release connections, engines and threads."""
        ...


def openai_tools(tools: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Tool definitions in OpenAI form: ``{"type": "function", "function": {...}}``.

    Environments may give the bare function schema (``name``, ``description``,
    ``parameters``); it is wrapped.
    """
    if not tools:
        return None
    out = []
    for tool in tools:
        out.append(tool if "function" in tool else {"type": "function", "function": dict(tool)})
    return out


def message_to_wire(message: Message) -> dict[str, Any]:
    """A message as the OpenAI chat API expects it."""
    data = message.model_dump(exclude_none=True)
    if message.role == "assistant" and message.tool_calls and not message.content:
        data["content"] = None
    return data


def message_from_wire(data: dict[str, Any]) -> Message:
    """The assistant message of an OpenAI chat completion; unknown fields are dropped."""
    calls = None
    if data.get("tool_calls"):
        calls = []
        for i, call in enumerate(data["tool_calls"]):
            fn = call.get("function") or {}
            args = fn.get("arguments", "{}")
            if not isinstance(args, str):
                args = json.dumps(args)
            calls.append(
                ToolCall(
                    id=call.get("id") or f"call_{i}",
                    function=FunctionCall(name=fn.get("name", ""), arguments=args),
                )
            )
    return Message(role="assistant", content=data.get("content") or "", tool_calls=calls)


class OpenAIEndpoint:
    """Any OpenAI-compatible chat endpoint (vLLM, SGLang, llama.cpp, OpenAI itself).

    Args:
        base_url: Root of the API, e.g. ``http://127.0.0.1:8000/v1``.
        model: Served model name; ``None`` asks ``GET /models`` and takes the first.
        api_key: Sent as a bearer token when given.
        concurrency: Requests in flight at most (also the connection-pool size).
        timeout: Seconds allowed for one request.
        max_retries: Extra attempts after a 429, a 5xx or a connection error.
        transport: ``auto`` (aiohttp where installed, else httpx), ``aiohttp`` or ``httpx``;
            see :mod:`envhub.evaluate.transport` for why.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        concurrency: int = 32,
        timeout: float = 300.0,
        max_retries: int = 3,
        transport: str = "auto",
    ) -> None:
        """Configure the client; connections open on first use."""
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.base_url = base_url.rstrip("/")
        self.name = model or ""
        self.api_key = api_key
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.transport = transport
        self._client: Transport | None = None
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _ensure_client(self) -> Transport:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # pools belong to one event loop
            self._loop = loop
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = make_transport(self.transport, headers, self.timeout, self.concurrency)
            self._sem = asyncio.Semaphore(self.concurrency)
        return self._client

    async def resolve_name(self) -> str:
        """The model name to send: the one given, else the first of ``GET /models``."""
        if self.name:
            return self.name
        data = await self._request("GET", "/models", None)
        models = data.get("data") or []
        if not models:
            raise ModelError(f"{self.base_url}/models lists no model; pass --model NAME")
        self.name = str(models[0]["id"])
        return self.name

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: list[dict[str, Any]] | None,
        params: SamplingParams,
        seed: int | None = None,
    ) -> Generation:
        """Post one chat completion and parse the assistant message and ``usage``."""
        body: dict[str, Any] = {
            "model": await self.resolve_name(),
            "messages": [message_to_wire(m) for m in messages],
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "n": 1,
        }
        if params.top_p != 1.0:
            body["top_p"] = params.top_p
        if seed is not None:
            body["seed"] = seed
        wire_tools = openai_tools(tools)
        if wire_tools:
            body["tools"] = wire_tools
        data = await self._request("POST", "/chat/completions", body)
        try:
            choice = data["choices"][0]
            message = message_from_wire(choice["message"])
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise ModelError(f"malformed chat completion from {self.base_url}: {e!r}") from e
        usage = data.get("usage") or {}
        return Generation(
            text=message.content or "",
            tool_calls=message.tool_calls,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            finish_reason=choice.get("finish_reason"),
        )

    async def _request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        client = self._ensure_client()
        assert self._sem is not None
        delay = 0.5
        last = ""
        for attempt in range(self.max_retries + 1):
            try:
                async with self._sem:
                    status, raw = await client.request(method, self.base_url + path, body)
            except client.errors as e:
                last = f"{type(e).__name__}: {e}"
            else:
                if status < 400:
                    try:
                        return json.loads(raw)
                    except ValueError as e:
                        raise ModelError(f"{self.base_url}{path} sent invalid JSON: {e}") from e
                text = raw.decode(errors="replace")
                last = f"HTTP {status}: {text[:300]}"
                if context_overflow(status, text):
                    raise ContextExhausted(last)
                if status != 429 and status < 500:
                    break  # a client error will not heal by retrying
            if attempt < self.max_retries:
                await asyncio.sleep(delay)
                delay *= 2
        raise ModelError(f"{method} {self.base_url}{path} failed: {last}")

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


# ---------------------------------------------------------------- local engines

BatchFn = Callable[
    [list[list[dict[str, Any]]], list[dict[str, Any]] | None, SamplingParams, list[int] | None],
    list[Generation | ContextExhausted],
]
"""Generate for a batch of chats (wire dicts) sharing tools and params, with one seed per chat
(or None: unseeded); returns one :class:`~envhub.engines.types.Generation` per chat, in order,
or :class:`ContextExhausted` for a chat that does not fit the model (that chat alone fails)."""


async def in_daemon_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` in a daemon thread and await its result.

    Unlike ``asyncio.to_thread``, an interrupted run does not wait for it: ``asyncio.run``
    joins the default executor's threads on the way out, which after Ctrl-C would hold the
    exit until a whole local-engine batch (minutes on a CPU) had finished.
    """
    loop = asyncio.get_running_loop()
    fut: asyncio.Future = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if not fut.done():
            fut.set_result(value) if ok else fut.set_exception(value)

    def target() -> None:
        try:
            result: tuple[bool, Any] = (True, fn(*args))
        except BaseException as e:  # noqa: BLE001 (handed to the awaiting coroutine, which raises it)
            result = (False, e)
        try:
            loop.call_soon_threadsafe(deliver, *result)
        except RuntimeError:  # the loop is gone (interrupted): nobody waits any more
            pass

    threading.Thread(target=target, daemon=True, name="envhub-eval-engine").start()
    return await fut


ENGINE_FAILURES: tuple[type[Exception], ...] = (RuntimeError, OSError, MemoryError, EnvhubError)
"""What a local engine raises when it fails (a dead vLLM engine and CUDA/torch errors are
``RuntimeError``s, out-of-memory a ``RuntimeError`` or ``MemoryError``): the episodes it
was generating for end as the model's ``infra_error``, and the run goes on."""


def _engine_failure(exc: Exception) -> Exception:
    """What the episodes waiting on a failed batch raise.

    A :class:`ModelError` for an engine failure (:data:`ENGINE_FAILURES`); anything else (a
    ``KeyError``, a ``TypeError``) is a bug and reaches them as it is, so it stops the run
    instead of hiding as failed episodes.
    """
    if isinstance(exc, ModelError) or not isinstance(exc, ENGINE_FAILURES):
        return exc
    return ModelError(f"{type(exc).__name__}: {exc}")


@dataclass
class _Pending:
    chat: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    params: SamplingParams
    seed: int | None
    future: asyncio.Future


class BatchingBackend:
    """Serve concurrent episodes from a synchronous batch-generation function.

    Requests are queued; a background task takes up to ``max_batch`` that share tools and
    sampling settings (waiting ``max_wait`` seconds for more to arrive) and generates them
    together in a worker thread, so a local engine sees batches, not single prompts. Each
    request's ``seed`` goes with it as its prompt's own seed (the engines' per-prompt
    ``seeds``), so what a request samples does not depend on the batch it lands in; a batch
    with an unseeded request is generated unseeded.
    """

    def __init__(
        self, name: str, batch_fn: BatchFn, *, max_batch: int = 16, max_wait: float = 0.02
    ) -> None:
        """Wrap ``batch_fn``; the model id recorded in episodes is ``name``."""
        self.name = name
        self._batch_fn = batch_fn
        self.max_batch = max_batch
        self.max_wait = max_wait
        self._queue: asyncio.Queue[_Pending] | None = None
        self._worker: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.on_close: Callable[[], None] | None = None

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: list[dict[str, Any]] | None,
        params: SamplingParams,
        seed: int | None = None,
    ) -> Generation:
        """Queue one chat and wait for its batch."""
        loop = asyncio.get_running_loop()
        if self._queue is None or self._loop is not loop:  # a new asyncio.run: a new worker
            self._loop = loop
            self._queue = asyncio.Queue()
            self._worker = loop.create_task(self._serve())
        fut = asyncio.get_running_loop().create_future()
        chat = [message_to_wire(m) for m in messages]
        await self._queue.put(_Pending(chat, openai_tools(tools), params, seed, fut))
        # Tool calls stay in the text (``<tool_call>`` blocks): environments parse that form
        # themselves (envhub.tools) and answer in a form every chat template renders.
        return await fut

    async def _serve(self) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            deadline = asyncio.get_running_loop().time() + self.max_wait
            while len(batch) < self.max_batch:
                left = deadline - asyncio.get_running_loop().time()
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), max(left, 0)))
                except asyncio.TimeoutError:
                    break
            await self._run(batch)

    async def _run(self, batch: list[_Pending]) -> None:
        groups: dict[str, list[_Pending]] = {}
        for item in batch:
            key = json.dumps([item.tools, item.params.__dict__], sort_keys=True)
            groups.setdefault(key, []).append(item)
        for items in groups.values():
            seeds = [i.seed for i in items]
            try:
                outs = await in_daemon_thread(
                    self._batch_fn,
                    [i.chat for i in items],
                    items[0].tools,
                    items[0].params,
                    None if None in seeds else seeds,
                )
                if len(outs) != len(items):
                    raise ModelError(f"engine returned {len(outs)} outputs for {len(items)}")
            except Exception as e:  # noqa: BLE001 (handed to the waiting episodes, see _engine_failure)
                err = _engine_failure(e)
                for item in items:
                    if not item.future.done():
                        item.future.set_exception(err)
                continue
            for item, out in zip(items, outs, strict=True):
                if item.future.done():
                    continue
                if isinstance(out, ContextExhausted):
                    item.future.set_exception(out)
                else:
                    item.future.set_result(out)

    async def aclose(self) -> None:
        """Stop the batching task and release the engine."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        if self.on_close is not None:
            self.on_close()
