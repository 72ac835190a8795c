"""The Responses API (``/v1/responses``) through the real ``openai`` SDK: the same token-exact
record as chat completions, function calls both ways, streaming, and clear refusals."""

import json

import httpx
import openai
import pytest

from envhub.gateway import responses
from envhub.gateway.recording import training_sequences


def client(server, key):
    return openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0)


def test_a_response_is_recorded_token_exact_like_a_chat_call(served, spy):
    gateway, server = served
    ep = gateway.open()
    before = len(spy.samples)
    r = client(server, ep.key).responses.create(
        model="tiny", instructions="Be brief.", input="Say alpha", max_output_tokens=8
    )
    [call] = ep.recorder.calls
    prompt, sampled, _ = spy.samples[before]
    assert call.prompt_ids == prompt and call.sampled_ids == sampled
    assert call.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say alpha"},
    ]
    assert r.output_text == call.reply["content"]
    assert r.usage.output_tokens == len(sampled) and r.usage.input_tokens == len(prompt)
    assert r.status == ("incomplete" if call.finish_reason == "length" else "completed")


def test_a_resent_history_extends_the_record_token_exact(served):
    gateway, server = served
    ep = gateway.open()
    c = client(server, ep.key)
    history = [{"role": "user", "content": "Say alpha"}]
    for i in range(3):
        r = c.responses.create(model="tiny", input=history, max_output_tokens=8)
        history += [
            {"role": "assistant", "content": [{"type": "output_text", "text": r.output_text}]},
            {"role": "user", "content": f"more {i}"},
        ]
    calls = ep.recorder.calls
    assert ep.recorder.segments == 1 and ep.recorder.retokenized == 0
    for prev, nxt in zip(calls, calls[1:], strict=False):
        assert nxt.reused_prefix == len(prev.prompt_ids) + len(prev.sampled_ids)
    [seq] = training_sequences(calls)
    trained = [t for t, m in zip(seq.tokens, seq.loss_mask, strict=True) if m]
    assert trained == [t for c_ in calls for t in c_.sampled_ids]


def test_function_calls_come_back_as_items_and_go_back_as_tool_messages(served, monkeypatch):
    gateway, server = served
    text = '<tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>'
    monkeypatch.setattr(gateway.backend, "complete", _saying(gateway.backend.complete, text))
    ep = gateway.open()
    c = client(server, ep.key)
    tools = [{"type": "function", "name": "search", "parameters": {"type": "object"}}]
    r = c.responses.create(model="tiny", input="Find x", tools=tools)
    [item] = r.output
    assert item.type == "function_call" and item.name == "search"
    assert json.loads(item.arguments) == {"q": "x"}
    follow = [
        {"role": "user", "content": "Find x"},
        {"type": "function_call", "call_id": item.call_id, "name": "search",
         "arguments": item.arguments},
        {"type": "function_call_output", "call_id": item.call_id, "output": "x is 3"},
    ]  # fmt: skip
    c.responses.create(model="tiny", input=follow, tools=tools)
    second = ep.recorder.calls[1]
    assert second.messages[1]["tool_calls"][0]["id"] == item.call_id
    assert second.messages[2] == {"role": "tool", "tool_call_id": item.call_id, "content": "x is 3"}
    assert second.reused_prefix > 0 and ep.recorder.segments == 1


def _saying(complete, text):
    """The backend's ``complete``, its reply's text replaced by ``text`` (ids kept)."""

    async def replaced(*args, **kwargs):
        gen = await complete(*args, **kwargs)
        gen.text = text
        return gen

    return replaced


def test_streaming_sends_the_recorded_reply_as_events(served):
    gateway, server = served
    ep = gateway.open()
    stream = client(server, ep.key).responses.create(
        model="tiny", input="Say alpha", max_output_tokens=8, stream=True
    )
    events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == ep.recorder.calls[0].reply["content"]
    assert events[-1].response.output_text == text
    assert [e.sequence_number for e in events] == list(range(len(events)))


@pytest.mark.parametrize(
    "body,fragment",
    [
        ({"input": []}, "input must be"),
        ({"input": "x", "previous_response_id": "resp_1"}, "previous_response_id"),
        ({"input": [{"type": "image_generation_call"}]}, "not supported"),
        ({"input": [{"role": "user", "content": [{"type": "input_image"}]}]}, "not text"),
        ({"input": "x", "tools": [{"type": "web_search"}]}, "function tools"),
        ({"input": [{"role": "robot", "content": "x"}]}, "messages.0.role"),
    ],
)
def test_bad_requests_get_a_400_naming_what_is_wrong(served, body, fragment):
    gateway, server = served
    ep = gateway.open()
    r = httpx.post(
        server.base_url + "/responses", json=body, headers={"Authorization": f"Bearer {ep.key}"}
    )
    assert r.status_code == 400 and fragment in r.json()["error"]["message"], r.text
    assert ep.recorder.calls == []


def test_a_response_needs_a_live_episodes_key(served):
    _, server = served
    r = httpx.post(server.base_url + "/responses", json={"input": "x"})
    assert r.status_code == 401


def test_the_sse_events_carry_each_item_whole():
    resp = {
        "id": "resp_1",
        "output": [
            {"type": "message", "id": "m", "content": [{"type": "output_text", "text": "hi"}]},
            {"type": "function_call", "id": "f", "call_id": "c", "name": "n", "arguments": "{}"},
        ],
    }
    events = [
        json.loads(block.split("data: ", 1)[1])
        for block in responses.sse(resp).decode().strip().split("\n\n")
    ]
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done == resp["output"]
    assert events[-1] == {"type": "response.completed", "response": resp, "sequence_number": 11}
