"""OpenAI's Responses API (``POST /v1/responses``) over the gateway's chat path.

A Responses request is translated into the chat request it means, served and recorded by
:meth:`~.service.Gateway.complete` exactly as ``/v1/chat/completions`` is (the same token-exact
record), and the recorded reply is written back as a ``response`` object. Stateless: the whole
conversation comes in ``input`` each call (``previous_response_id`` is refused, since nothing
is stored), as an agent loop that resends its history does.

``input`` is a string (one user message) or a list of items: messages (``role`` and ``content``,
a string or ``input_text``/``output_text`` parts), ``function_call`` items (the model's earlier
tool calls; consecutive ones become one assistant message) and ``function_call_output`` items
(tool results). ``instructions`` is a system message in front. ``tools`` are function tools in
the Responses form (``{"type": "function", "name", "description", "parameters"}``).

With ``"stream": true`` the response goes out as server-sent events after the backend has
produced it (engines sample whole turns): ``response.created``, then per output item
``response.output_item.added``, its text as one ``response.output_text.delta`` (or its
arguments as one ``response.function_call_arguments.delta``), the matching ``.done`` events,
``response.output_item.done``, and last ``response.completed`` with the whole response.
"""

from __future__ import annotations

import json
from typing import Any

from envhub import chat_api

from .recording import CallRecord
from .service import BadRequest, ChatRequest, parse_request

_SAMPLING = ("model", "temperature", "top_p", "seed", "stream")


def chat_request(body: Any) -> ChatRequest:
    """The chat request a Responses body means, or :class:`BadRequest` naming what is wrong."""
    if not isinstance(body, dict):
        raise BadRequest("invalid request: the body must be a JSON object")
    if body.get("previous_response_id"):
        raise BadRequest(
            "previous_response_id is not supported: the gateway stores no responses; send the "
            "whole conversation in input"
        )
    system = body.get("instructions")
    messages = [{"role": "system", "content": system}] if system else []
    messages += _messages(body.get("input"))
    chat: dict[str, Any] = {k: body[k] for k in _SAMPLING if body.get(k) is not None}
    chat["messages"] = messages
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    if body.get("tools"):
        chat["tools"] = [_chat_tool(t) for t in body["tools"]]
    return parse_request(chat)


def _messages(items: Any) -> list[dict[str, Any]]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise BadRequest("invalid request: input must be a string or a non-empty list of items")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise BadRequest(f"invalid request: input.{i} is not an object")
        kind = item.get("type", "message")
        if kind == "message":
            out.append({"role": item.get("role"), "content": _text(item.get("content"), i)})
        elif kind == "function_call":
            function = {"name": item.get("name"), "arguments": item.get("arguments", "")}
            call = {"id": item.get("call_id"), "type": "function", "function": function}
            if out and out[-1]["role"] == "assistant" and "tool_calls" in out[-1]:
                out[-1]["tool_calls"].append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else json.dumps(output)
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
        else:
            raise BadRequest(f"invalid request: input.{i}: item type {kind!r} is not supported")
    return out


def _text(content: Any, i: int) -> str:
    """A message's content as text (``input_text``/``output_text`` parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        kinds = {p.get("type") for p in content} - {"input_text", "output_text", "text"}
        if not kinds:
            return "".join(str(p.get("text", "")) for p in content)
        raise BadRequest(f"invalid request: input.{i}: content parts {sorted(kinds)} are not text")
    raise BadRequest(f"invalid request: input.{i}.content must be a string or a list of parts")


def _chat_tool(tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict) or tool.get("type") != "function" or not tool.get("name"):
        raise BadRequest("invalid request: tools: only function tools with a name are supported")
    fields = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
    return {"type": "function", "function": fields}


def response(rec: CallRecord, model: str) -> dict[str, Any]:
    """The ``response`` object of a recorded call."""
    rid = f"resp_{rec.segment}_{rec.call}_{int(rec.started * 1000)}"
    output: list[dict[str, Any]] = []
    if rec.reply.get("content"):
        part = {"type": "output_text", "text": rec.reply["content"], "annotations": []}
        output.append({"type": "message", "id": f"msg_{rid}", "status": "completed",
                       "role": "assistant", "content": [part]})  # fmt: skip
    for call in rec.reply.get("tool_calls") or []:
        function = call["function"]
        output.append({"type": "function_call", "id": f"fc_{call['id']}", "call_id": call["id"],
                       "name": function["name"], "arguments": function["arguments"],
                       "status": "completed"})  # fmt: skip
    cut = rec.finish_reason == "length"
    usage = chat_api.token_usage(len(rec.prompt_ids), len(rec.sampled_ids))
    return {
        "id": rid,
        "object": "response",
        "created_at": int(rec.started),
        "status": "incomplete" if cut else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def sse(resp: dict[str, Any]) -> bytes:
    """``resp`` as the server-sent events of ``stream: true`` (module docstring)."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**resp, "status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(resp["output"]):
        events += _item_events(index, item)
    events.append({"type": "response.completed", "response": resp})
    lines = []
    for n, event in enumerate(events):
        event["sequence_number"] = n
        lines.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
    return b"".join(lines)


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    at = {"output_index": index, "item_id": item["id"]}
    empty = {**item, "status": "in_progress"}
    if item["type"] == "message":
        part = item["content"][0]
        empty["content"] = []
        text = {**at, "content_index": 0}
        inner = [
            {"type": "response.content_part.added", **text, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **text, "delta": part["text"], "logprobs": []},
            {"type": "response.output_text.done", **text, "text": part["text"], "logprobs": []},
            {"type": "response.content_part.done", **text, "part": part},
        ]
    else:
        empty["arguments"] = ""
        args = item["arguments"]
        inner = [
            {"type": "response.function_call_arguments.delta", **at, "delta": args},
            {"type": "response.function_call_arguments.done", **at, "arguments": args},
        ]
    return [
        {"type": "response.output_item.added", "output_index": index, "item": empty},
        *inner,
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]
