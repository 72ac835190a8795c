"""One chat completion, from request to recorded call: :class:`Gateway`.

:meth:`Gateway.complete` is the whole path of a call: the episode's key, its budget, the
prompt ids (:class:`~.recording.Recorder`), the backend, the reply (tool calls parsed out of
an engine's ``<tool_call>`` blocks when the request offered tools), the record. The routes
in :mod:`.app` only translate HTTP. Errors are typed, each with the HTTP status it earns:

========================  ====  =============================================================
error                     HTTP  meaning
========================  ====  =============================================================
:class:`Unauthorized`     401   no live episode's key
:class:`BadRequest`       400   a malformed request, or a prompt too long for the model
:class:`BudgetExhausted`  429   ``max_calls``/``max_tokens`` spent: the episode ends truncated
:class:`BackendError`     502   the model could not answer: the episode is ``infra_error``
:class:`GatewayBroken`    500   the gateway failed (a bug): the episode is ``infra_error``
========================  ====  =============================================================
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envhub.engines.types import Generation, SamplingParams
from envhub.errors import EnvhubError
from envhub.tags import block_text, tag_blocks, without_blocks

from .backends import Backend, BackendError, PromptTooLong
from .episodes import Budget, BudgetExhausted, Episodes, GatewayEpisode
from .recording import CallRecord, normalized


class Unauthorized(EnvhubError):
    """The request carries no live episode's key."""


class BadRequest(EnvhubError):
    """The request cannot be served as sent (the caller's error)."""


class GatewayBroken(EnvhubError):
    """The gateway itself failed serving a call (a bug): the episode is ``infra_error``."""


class ChatMessage(BaseModel):
    """One message of a chat request (OpenAI form; unknown keys are kept and ignored)."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class ChatRequest(BaseModel):
    """The body of ``POST /v1/chat/completions`` (the fields the gateway honours).

    Other OpenAI fields are accepted and ignored; ``n`` must be 1 (one agent, one reply).
    """

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    n: int = Field(default=1, ge=1, le=1)
    stream: bool = False
    logprobs: bool = False

    def wire_messages(self) -> list[dict[str, Any]]:
        """The messages as plain dicts (``developer`` read as ``system``)."""
        out = []
        for m in self.messages:
            d = m.model_dump(exclude_none=True, exclude=set(m.model_extra or {}))
            if d["role"] == "developer":
                d["role"] = "system"
            out.append(d)
        return out


def parse_request(body: Any) -> ChatRequest:
    """The request, or :class:`BadRequest` naming the first bad field."""
    try:
        return ChatRequest.model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "body"
        raise BadRequest(f"invalid request: {where}: {err['msg']}") from None


class Gateway:
    """A backend, the live episodes, and the default per-call settings.

    Args:
        backend: The model.
        default_max_tokens: A call's ``max_tokens`` when the request gives none.
        admin_key: The bearer token of the episode routes (None: no such routes).
        sampling: When set (training), every call samples with these settings whatever the
            request asks (temperature, top-p, top-k, stop: the trainer's logprobs are those of
            this distribution), its ``max_tokens`` capped by this one's.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        default_max_tokens: int = 512,
        admin_key: str | None = None,
        sampling: SamplingParams | None = None,
    ) -> None:
        """Serve ``backend``; episodes are opened with :meth:`open` or ``POST /episodes``."""
        self.backend = backend
        self.admin_key = admin_key
        self.sampling = sampling
        if sampling is not None:
            default_max_tokens = sampling.max_tokens
        self.episodes = Episodes(backend.chat)
        self.default_max_tokens = default_max_tokens
        self.counters: dict[str, int] = {"calls": 0, "unauthorized": 0, "budget": 0}

    def open(self, episode_id: str | None = None, budget: Budget | None = None) -> GatewayEpisode:
        """A new episode (its key is ``.key``)."""
        return self.episodes.open(episode_id, budget)

    def close(self, ep: GatewayEpisode) -> None:
        """Revoke the episode's key."""
        self.episodes.close(ep)

    def authorize(self, key: str | None) -> GatewayEpisode:
        """The episode of ``key``, or :class:`Unauthorized`."""
        ep = self.episodes.get(key)
        if ep is None:
            self.counters["unauthorized"] += 1
            raise Unauthorized("no live episode has this API key (use the key envhub gave you)")
        return ep

    def check_admin(self, key: str | None) -> None:
        """:class:`Unauthorized` unless ``key`` is the admin key."""
        if self.admin_key is None or not key or not secrets.compare_digest(key, self.admin_key):
            raise Unauthorized("the episode routes need the gateway's admin key")

    async def complete(self, ep: GatewayEpisode, req: ChatRequest) -> CallRecord:
        """Serve one call of ``ep``: budget, prompt, backend, reply, record."""
        try:
            left = ep.admit()
        except BudgetExhausted:
            self.counters["budget"] += 1
            raise
        try:
            return await self._complete(ep, req, left)
        except (BadRequest, BackendError, Unauthorized):
            raise
        except Exception as e:  # the gateway's own bug: the machinery's failure, never the model's
            ep.infra_error = f"gateway: {type(e).__name__}: {e}"
            raise GatewayBroken(ep.infra_error) from e
        finally:
            ep.release()

    async def _complete(self, ep: GatewayEpisode, req: ChatRequest, left: int) -> CallRecord:
        t0 = time.perf_counter()
        messages = req.wire_messages()
        tools = req.tools or None
        try:
            prompt = ep.recorder.prompt(messages, tools)
        except (ValueError, TypeError, KeyError) as e:  # the template could not render it
            raise BadRequest(f"cannot render these messages with the chat template: {e}") from e
        params = self._params(req, left)
        try:
            gen = await self.backend.complete(prompt.ids, messages, tools, params, req.seed)
        except PromptTooLong as e:
            raise BadRequest(str(e)) from e
        except BackendError as e:
            ep.infra_error = str(e)
            raise
        reply, finish = reply_message(gen, bool(tools))
        gen.finish_reason = finish
        self.counters["calls"] += 1
        latency = time.perf_counter() - t0
        with ep.lock:  # the episode's record is final once it is closed
            if ep.closed:
                raise Unauthorized("the episode ended while this call was in flight")
            return ep.recorder.record(prompt, messages, tools, gen, reply, latency)

    async def step(self, ep: GatewayEpisode, body: Any) -> dict[str, Any]:
        """Step the episode's environment with a reply the model gave (the episode URL).

        Only the model's own replies, as the gateway returned them, step the environment, each
        at most once: an ``assistant`` message the agent wrote itself is refused (400), so an
        agent cannot answer in the model's place.
        """
        if ep.stepper is None:
            raise BadRequest("this episode has no environment behind it (no episode URL)")
        if ep.env_done:
            raise BadRequest("the environment already ended this episode")
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, dict):
            raise BadRequest('send {"message": <an assistant message the model gave>}')
        wanted = normalized(message)
        calls = [c for c in reversed(ep.recorder.calls) if c.call not in ep.stepped]
        match = next((c for c in calls if normalized(c.reply) == wanted), None)
        if match is None:
            raise BadRequest(
                "this message is not a reply the model gave in this episode (or it already "
                "stepped the environment): only the model's own replies step it"
            )
        ep.stepped.add(match.call)
        result = await ep.stepper(match.reply)
        if result.get("terminated") or result.get("truncated"):
            ep.env_done = True
        return result

    def _params(self, req: ChatRequest, left: int) -> SamplingParams:
        """The call's sampling settings: the request's, or the fixed ones (training)."""
        wanted = req.max_completion_tokens or req.max_tokens or self.default_max_tokens
        if self.sampling is not None:
            cap = min(wanted, self.sampling.max_tokens, left)
            return replace(self.sampling, max_tokens=cap, seed=None)
        stop = (req.stop,) if isinstance(req.stop, str) else tuple(req.stop or ())
        return SamplingParams(
            max_tokens=min(wanted, left), temperature=req.temperature, top_p=req.top_p, stop=stop
        )


def reply_message(gen: Generation, tools: bool) -> tuple[dict[str, Any], str | None]:
    """The assistant message returned for ``gen``, and the finish reason.

    With tools offered, each well-formed ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``
    block of an engine's text becomes an OpenAI tool call (the blocks leave the content);
    a malformed block stays in the text, for the agent (and its environment) to judge: JSON
    nested past the parser's depth, or escaping a lone surrogate (which no JSON reply can
    carry) too, never the gateway's failure.
    """
    if gen.tool_calls:
        calls = [c.model_dump() for c in gen.tool_calls]
        return {"role": "assistant", "content": gen.text or None, "tool_calls": calls}, (
            "tool_calls"
        )
    if not tools:
        return {"role": "assistant", "content": gen.text}, gen.finish_reason
    blocks = [b for b in tag_blocks(gen.text, "tool_call", ignore_case=False) if b.closed]
    calls = []
    for b in blocks:
        try:
            obj = json.loads(block_text(gen.text, b))
            name, args = obj["name"], obj.get("arguments", {})
            json.dumps(obj, ensure_ascii=False).encode()  # "\ud800": no reply could hold it
        except (ValueError, KeyError, TypeError, RecursionError):  # nested past the parser
            return {"role": "assistant", "content": gen.text}, gen.finish_reason
        if not isinstance(name, str):
            return {"role": "assistant", "content": gen.text}, gen.finish_reason
        arguments = args if isinstance(args, str) else json.dumps(args)
        calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        )
    if not calls:
        return {"role": "assistant", "content": gen.text}, gen.finish_reason
    content = without_blocks(gen.text, blocks).strip() or None
    return {"role": "assistant", "content": content, "tool_calls": calls}, "tool_calls"
