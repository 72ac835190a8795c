"""OpenAI's chat-completion shapes, as every endpoint envhub runs writes them.

A completion (``object: chat.completion``) and the same completion as the server-sent events
of ``stream: true`` (one delta with the whole message, one with the finish reason, one with
the usage, then ``[DONE]``). Written once here for the scripted endpoint of ``envhub eval``
(:mod:`envhub.evaluate.scripted`), the model endpoint the verifiers bridge plays
(:mod:`envhub.interop.verifiers.bridge`) and the recording gateway (:mod:`envhub.gateway.app`).
"""

from __future__ import annotations

import json
import time
from typing import Any


def token_usage(prompt_tokens: int = 0, completion_tokens: int = 0) -> dict[str, int]:
    """A completion's ``usage``."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def completion(
    message: dict[str, Any],
    *,
    model: str,
    usage: dict[str, int] | None = None,
    finish_reason: str | None = None,
    id: str = "chatcmpl-envhub",
    created: int | None = None,
) -> dict[str, Any]:
    """A chat completion of one choice carrying ``message`` (an assistant message's fields).

    The finish reason defaults to ``tool_calls`` when the message calls tools, else ``stop``.
    """
    if finish_reason is None:
        finish_reason = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": id,
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, **message},
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage or token_usage(),
    }


def sse(response: dict[str, Any]) -> bytes:
    """``response`` (a :func:`completion`) as the server-sent events of ``stream: true``."""
    choice = response["choices"][0]
    base = {k: response[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    delta = {k: v for k, v in choice["message"].items() if v is not None}
    if delta.get("tool_calls"):
        delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(delta["tool_calls"])]
    first: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
    if choice.get("logprobs"):  # the sampled tokens' logprobs travel with the content
        first["logprobs"] = choice["logprobs"]
    chunks = [
        {**base, "choices": [first]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        {**base, "choices": [], "usage": response["usage"]},
    ]
    events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return events + b"data: [DONE]\n\n"
