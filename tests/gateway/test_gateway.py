"""The gateway's HTTP face and its token-exact recording, through the real ``openai`` SDK."""

import httpx
import openai
import pytest

from envhub.gateway.recording import training_sequences

MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say alpha"}]


def client(server, key):
    return openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0)


def test_models_and_a_completion_are_recorded_token_exact(served, spy):
    gateway, server = served
    ep = gateway.open()
    c = client(server, ep.key)
    assert [m.id for m in c.models.list().data] == ["tiny"]
    before = len(spy.samples)
    r = c.chat.completions.create(model="tiny", messages=MSGS, logprobs=True, seed=3)
    [call] = ep.recorder.calls
    prompt, sampled, logprobs = spy.samples[before]
    assert call.prompt_ids == prompt and call.sampled_ids == sampled and call.logprobs == logprobs
    assert r.usage.completion_tokens == len(sampled)
    assert [t.logprob for t in r.choices[0].logprobs.content] == logprobs
    assert call.weights_version == 0 and call.finish_reason == r.choices[0].finish_reason
    assert call.messages == MSGS and r.choices[0].message.content == call.reply["content"]


def test_a_call_extending_the_last_reuses_its_ids(served, spy):
    gateway, server = served
    ep = gateway.open()
    c = client(server, ep.key)
    msgs = list(MSGS)
    for i in range(3):
        r = c.chat.completions.create(model="tiny", messages=msgs)
        msgs += [
            r.choices[0].message.model_dump(exclude_none=True),
            {"role": "user", "content": f"more {i}"},
        ]
    calls = ep.recorder.calls
    for prev, nxt in zip(calls, calls[1:], strict=False):
        assert (
            nxt.prompt_ids[: len(prev.prompt_ids) + len(prev.sampled_ids)]
            == prev.prompt_ids + prev.sampled_ids
        )
        assert nxt.reused_prefix == len(prev.prompt_ids) + len(prev.sampled_ids)
    assert ep.recorder.segments == 1 and ep.recorder.retokenized == 0
    [seq] = training_sequences(calls)
    trained = [t for t, m in zip(seq.tokens, seq.loss_mask, strict=True) if m]
    assert trained == [t for c_ in calls for t in c_.sampled_ids]


def test_history_edits_start_a_counted_segment(served):
    gateway, server = served
    ep = gateway.open()
    c = client(server, ep.key)
    c.chat.completions.create(model="tiny", messages=MSGS)
    edited = MSGS + [{"role": "assistant", "content": "alpha"}, {"role": "user", "content": "ok?"}]
    c.chat.completions.create(model="tiny", messages=edited)
    assert ep.recorder.segments == 2 and ep.recorder.retokenized == 1
    seqs = training_sequences(ep.recorder.calls)
    # the fabricated "alpha" turn is prompt context of segment 2: never under the loss mask
    second = seqs[1]
    assert sum(second.loss_mask) == len(ep.recorder.calls[1].sampled_ids)


def test_streaming_sends_the_recorded_reply(served):
    gateway, server = served
    ep = gateway.open()
    stream = client(server, ep.key).chat.completions.create(
        model="tiny",
        messages=MSGS,
        stream=True,
        stream_options={"include_usage": True},
        logprobs=True,
    )
    chunks = list(stream)
    first = chunks[0].choices[0]
    assert [t.logprob for t in first.logprobs.content] == ep.recorder.calls[0].logprobs
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == ep.recorder.calls[0].reply["content"]
    assert chunks[-1].usage.completion_tokens == len(ep.recorder.calls[0].sampled_ids)
    finish = [
        ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason
    ]
    assert finish == [ep.recorder.calls[0].finish_reason]


def test_tool_calls_come_back_structured_and_extend_token_exact(served, monkeypatch):
    from envhub.engines.types import Generation
    from envhub.gateway.service import reply_message

    text = 'Let me look.<tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>'
    reply, finish = reply_message(Generation(text=text, finish_reason="stop"), tools=True)
    assert finish == "tool_calls" and reply["content"] == "Let me look."
    assert reply["tool_calls"][0]["function"] == {"name": "search", "arguments": '{"q": "x"}'}
    assert reply_message(Generation(text=text), tools=False)[0] == {
        "role": "assistant",
        "content": text,
    }
    # over HTTP: a request with tools is answered and recorded with them
    gateway, server = served
    ep = gateway.open()
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    c = client(server, ep.key)
    r = c.chat.completions.create(model="tiny", messages=MSGS, tools=tools)
    msgs = MSGS + [
        r.choices[0].message.model_dump(exclude_none=True),
        {"role": "user", "content": "go"},
    ]
    c.chat.completions.create(model="tiny", messages=msgs, tools=tools)
    assert ep.recorder.calls[1].reused_prefix > 0 and ep.recorder.segments == 1


@pytest.mark.parametrize(
    "body,fragment",
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0.role"),
        ({"messages": MSGS, "n": 2}, "n"),
        ({"messages": MSGS, "max_tokens": 0}, "max_tokens"),
        ({"messages": MSGS, "temperature": -1}, "temperature"),
    ],
)
def test_bad_requests_get_a_400_naming_the_field(served, body, fragment):
    gateway, server = served
    ep = gateway.open()
    r = httpx.post(
        f"{server.base_url}/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {ep.key}"},
    )
    assert r.status_code == 400 and fragment in r.json()["error"]["message"]


def test_keys_are_per_episode_and_revoked_at_close(served):
    gateway, server = served
    a, b = gateway.open(), gateway.open()
    client(server, a.key).chat.completions.create(model="tiny", messages=MSGS)
    for key in ("", "nope", a.key[:-1]):
        with pytest.raises(openai.AuthenticationError):
            client(server, key or "x").chat.completions.create(model="tiny", messages=MSGS)
    assert len(b.recorder.calls) == 0 and len(a.recorder.calls) == 1
    gateway.close(a)
    with pytest.raises(openai.AuthenticationError):
        client(server, a.key).chat.completions.create(model="tiny", messages=MSGS)
    r = httpx.post(f"{server.base_url}/chat/completions", json={"messages": MSGS})
    assert r.status_code == 401


def test_budgets_refuse_with_a_clear_error_and_truncate(served):
    from envhub.gateway.episodes import Budget

    gateway, server = served
    ep = gateway.open(budget=Budget(max_calls=2, max_tokens=1000))
    c = client(server, ep.key)
    for _ in range(2):
        c.chat.completions.create(model="tiny", messages=MSGS)
    with pytest.raises(openai.RateLimitError, match="max_calls=2"):
        c.chat.completions.create(model="tiny", messages=MSGS)
    assert ep.truncated == "max_calls=2 reached"
    tok = gateway.open(budget=Budget(max_calls=10, max_tokens=5))
    c = client(server, tok.key)
    c.chat.completions.create(model="tiny", messages=MSGS, max_tokens=50)
    assert len(tok.recorder.calls[0].sampled_ids) <= 5
    while tok.truncated is None:
        try:
            c.chat.completions.create(model="tiny", messages=MSGS, max_tokens=50)
        except openai.RateLimitError as e:
            assert "max_tokens=5" in str(e)
    assert tok.recorder.sampled_tokens <= 5


def test_a_dead_backend_is_a_502_and_marks_the_episode(served, spy):
    gateway, server = served
    ep = gateway.open()
    spy.fail = True
    try:
        with pytest.raises(openai.APIStatusError) as e:
            client(server, ep.key).chat.completions.create(model="tiny", messages=MSGS)
    finally:
        spy.fail = False
    assert e.value.status_code == 502 and "engine died" in ep.infra_error


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "search", "arguments": ' + "[" * 50_000 + "}",
        "[" * 50_000,
        '{"name": "\\ud800", "arguments": {"q": "\\udfff"}}',
    ],
)
def test_a_tool_call_the_gateway_cannot_carry_stays_in_the_text(body):
    """The model's text, never the gateway's failure: JSON nested past the parser's depth
    raised ``RecursionError`` (the episode's ``infra_error``), and an escaped lone surrogate
    became a tool name no JSON reply could encode (a 500)."""
    from envhub.engines.types import Generation
    from envhub.gateway.service import reply_message

    text = f"Let me look.<tool_call>{body}</tool_call>"
    reply, finish = reply_message(Generation(text=text, finish_reason="stop"), tools=True)
    assert reply == {"role": "assistant", "content": text} and finish == "stop"


def test_tool_call_arguments_nested_past_the_parsers_depth_compare_as_text():
    """An engine's own tool call carries the model's arguments as written: comparing a
    history that holds ``[[[[...`` raised ``RecursionError`` (the gateway's failure)."""
    from envhub.gateway.recording import normalized

    deep = "[" * 50_000
    message = {"role": "assistant", "tool_calls": [{"function": {"name": "x", "arguments": deep}}]}
    assert normalized(message)["tool_calls"] == [("x", deep)]
