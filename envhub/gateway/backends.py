"""The model behind the gateway: :class:`EngineBackend` (token level) or :class:`UpstreamBackend`.

* :class:`EngineBackend` serves prompts (token ids) from an envhub
  :class:`~envhub.engines.types.GenerationEngine` (transformers or vLLM, local or the
  trainer's). Calls that arrive together are generated as one batch in one worker thread, each
  with its own seed, so what a call samples does not depend on its batch. Its chat formatter
  makes the gateway token-exact.
* :class:`UpstreamBackend` forwards the messages to an OpenAI-compatible URL. It records the
  messages, the text and the logprobs the upstream returns, but no token ids: an upstream's
  traces are for evaluation, not training.

A backend that cannot answer raises :class:`BackendError`: the machinery's failure
(``infra_error``), never the model's.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass
from typing import Any, Protocol

from envhub.engines.chat import ChatFormatter
from envhub.engines.types import Generation, GenerationEngine, SamplingParams
from envhub.errors import EnvhubError


class BackendError(EnvhubError):
    """The backend could not produce a completion (engine lost, upstream down)."""


class PromptTooLong(EnvhubError):
    """The prompt leaves no room for a completion in the model's context."""


class Backend(Protocol):
    """What the gateway needs from a model."""

    name: str
    """The model id served at ``/v1/models``."""
    chat: ChatFormatter | None
    """The formatter that makes calls token-exact (None: messages only)."""

    async def complete(
        self,
        prompt_ids: list[int],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        params: SamplingParams,
        seed: int | None,
    ) -> Generation:
        """One completion of the prompt (ids for an engine, messages for an upstream)."""
        ...

    async def aclose(self) -> None:
        """Release threads and connections."""
        ...


@dataclass
class _Pending:
    ids: list[int]
    params: SamplingParams
    seed: int | None
    future: asyncio.Future


class EngineBackend:
    """A generation engine behind the gateway, with batching (see the module docstring).

    Args:
        engine: The engine; it is called from one worker thread at a time.
        name: The model id served.
        max_batch: Most prompts per engine call.
        max_wait: Seconds to wait for more calls before generating a batch.
        weights_version: The version recorded when the engine reports none.
        call_timeout_s: Seconds one call may wait for its generation (queued and generated);
            past it the call fails as the machinery's (:class:`BackendError`). None: no limit.
    """

    def __init__(
        self,
        engine: GenerationEngine,
        name: str,
        *,
        max_batch: int = 64,
        max_wait: float = 0.01,
        weights_version: int | None = 0,
        call_timeout_s: float | None = 600.0,
    ) -> None:
        """Wrap ``engine``; nothing runs until the first call."""
        self.engine = engine
        self.name = name
        self.chat: ChatFormatter | None = ChatFormatter(engine.tokenizer)
        self.max_batch = max_batch
        self.max_wait = max_wait
        self.weights_version = weights_version
        """Recorded with calls whose engine does not report its own version (the trainer
        passes None: an unversioned engine's samples are never counted stale)."""
        self.call_timeout_s = call_timeout_s
        self._queue: asyncio.Queue[_Pending] | None = None
        self._worker: asyncio.Task | None = None

    async def complete(
        self,
        prompt_ids: list[int],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        params: SamplingParams,
        seed: int | None,
    ) -> Generation:
        """Queue the prompt and wait for its batch."""
        limit = self.engine.max_model_len
        if limit is not None:
            room = limit - len(prompt_ids)
            if room < 1:
                raise PromptTooLong(
                    f"the prompt is {len(prompt_ids)} tokens; the model's context is {limit}"
                )
            if params.max_tokens > room:
                params = SamplingParams(**{**params.__dict__, "max_tokens": room})
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._worker = asyncio.get_running_loop().create_task(self._serve())
        fut = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(prompt_ids, params, seed, fut))
        try:
            return await asyncio.wait_for(fut, self.call_timeout_s)
        except asyncio.TimeoutError:
            raise BackendError(
                f"the engine did not answer this call within {self.call_timeout_s:g} s "
                "(queued and generating); set EngineBackend's call_timeout_s for a slower engine"
            ) from None

    async def _serve(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            deadline = loop.time() + self.max_wait
            while len(batch) < self.max_batch:
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), deadline - loop.time()))
                except asyncio.TimeoutError:
                    break
            groups: dict[SamplingParams, list[_Pending]] = {}
            for item in batch:
                groups.setdefault(item.params, []).append(item)
            for params, items in groups.items():
                await self._run(params, items)

    async def _run(self, params: SamplingParams, items: list[_Pending]) -> None:
        seeds = [p.seed if p.seed is not None else secrets.randbits(31) for p in items]
        try:
            gens = await asyncio.to_thread(
                self.engine.generate, [p.ids for p in items], params, seeds
            )
        except Exception as e:  # noqa: BLE001 - any engine failure is the machinery's
            for p in items:
                if not p.future.done():
                    p.future.set_exception(BackendError(f"the engine failed: {e!r}"))
            return
        for p, gen in zip(items, gens, strict=True):
            if isinstance(gen, Exception):  # one prompt's engine was lost (a trainer group)
                if not p.future.done():
                    p.future.set_exception(BackendError(f"generation failed: {gen!r}"))
                continue
            if gen.weight_version is None:
                gen.weight_version = self.weights_version
            if not p.future.done():
                p.future.set_result(gen)

    async def aclose(self) -> None:
        """Stop the batching task (the engine stays the caller's)."""
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None
            self._queue = None


class GenerateFnEngine:
    """A trainer's ``generate(prompts, params)`` as an engine for :class:`EngineBackend`.

    The trainer's engine group samples (Ray actors, refit between steps); its answers may hold
    an exception in place of a completion whose engine was lost (that call is then a
    :class:`BackendError`: ``infra_error``). Seeds are not passed on: the group seeds its own.
    """

    def __init__(self, generate: Any, tokenizer: Any, max_model_len: int | None = None) -> None:
        """Wrap ``generate`` with the policy's tokenizer."""
        self._generate = generate
        self.tokenizer = tokenizer
        self.max_model_len = max_model_len

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, seeds: list[int] | None = None
    ) -> list[Any]:
        """Sample through the trainer's function (seeds unused, see the class docstring)."""
        return self._generate(prompts, params)


class UpstreamBackend:
    """An OpenAI-compatible URL behind the gateway (messages in, message out; no ids).

    Args:
        base_url: The upstream API root, e.g. ``http://127.0.0.1:8000/v1``.
        model: The upstream model name.
        api_key: Sent as a bearer token when given.
        timeout: Seconds per request.
    """

    chat = None

    def __init__(
        self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 300.0
    ) -> None:
        """Configure the client; it connects on first use."""
        import httpx

        self.base_url = base_url.rstrip("/")
        self.name = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(headers=headers, timeout=timeout)

    async def complete(
        self,
        prompt_ids: list[int],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        params: SamplingParams,
        seed: int | None,
    ) -> Generation:
        """Post the messages upstream and read back one choice."""
        import httpx

        body: dict[str, Any] = {
            "model": self.name,
            "messages": messages,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "logprobs": True,
        }
        if params.top_p != 1.0:
            body["top_p"] = params.top_p
        if seed is not None:
            body["seed"] = seed
        if tools:
            body["tools"] = tools
        try:
            resp = await self._client.post(f"{self.base_url}/chat/completions", json=body)
            resp.raise_for_status()
            choice = resp.json()["choices"][0]
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as e:
            raise BackendError(f"upstream {self.base_url}: {e!r}") from e
        return _upstream_generation(choice)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()


def _upstream_generation(choice: dict[str, Any]) -> Generation:
    msg = choice.get("message") or {}
    content = (choice.get("logprobs") or {}).get("content") or []
    from envhub.types import FunctionCall, ToolCall

    calls = [
        ToolCall(
            id=c.get("id", ""),
            function=FunctionCall(
                name=(c.get("function") or {}).get("name", ""),
                arguments=_as_json((c.get("function") or {}).get("arguments", "{}")),
            ),
        )
        for c in msg.get("tool_calls") or []
    ]
    return Generation(
        text=msg.get("content") or "",
        finish_reason=choice.get("finish_reason"),
        logprobs=[float(t.get("logprob", 0.0)) for t in content],
        tool_calls=calls or None,
    )


def _as_json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
