"""Rollouts: sequences from engine ids, env tokens masked, failed episodes dropped."""

from fake_envs import make_retry

from envhub.engines.chat import ChatFormatter
from envhub.engines.types import Generation, SamplingParams
from envhub.types import Status
from trainer.rollout import LocalEnvPool, RolloutSettings, call_all, collect, to_message


class ScriptedEngine:
    """Answers with fixed token ids; the text says a wrong number first, then the right one."""

    def __init__(self, tokenizer, eos):
        self.tokenizer, self.eos, self.calls = tokenizer, eos, []

    def generate(self, prompts, params):
        self.calls.append([list(p) for p in prompts])
        turn = len(self.calls)
        out = []
        for _ in prompts:
            if turn == 1:  # no EOS: stopped by length; the rollout must close the turn
                out.append(
                    Generation(
                        "99", "length", token_ids=[101, 102, 103], logprobs=[-0.1, -0.2, -0.3]
                    )
                )
            else:
                out.append(
                    Generation(
                        "3",
                        "stop",
                        token_ids=[104, self.eos],
                        logprobs=[-0.4, -0.5],
                        stop_reason="<eos>",
                    )
                )
        return out


def settings(**kw):
    base = dict(
        group_size=2,
        max_turns=2,
        max_seq_len=512,
        timeout_s=10.0,
        params=SamplingParams(max_tokens=8),
    )
    base.update(kw)
    return RolloutSettings(**base)


def test_multi_turn_sequence_masks_env_tokens(engine):
    tok = engine.tokenizer
    chat = ChatFormatter(tok)
    fake = ScriptedEngine(tok, tok.eos_token_id)
    pool = LocalEnvPool(make_retry)
    # seed 0 draws some task a+b; "99" is never a 1-digit sum, "3" may or may not be right
    batch = collect(fake.generate, pool, chat, [5], settings(), sample_seed=0)
    ep = batch.episodes[0]
    env = make_retry()
    opening = env.reset(seed=5)
    prompt = chat.prompt_ids(opening.messages)
    cont = chat.continuation_ids(
        [{"role": "user", "content": "Wrong, try again."}], ended_with_eos=False
    )
    assert ep.tokens == prompt + [101, 102, 103] + cont + [104, tok.eos_token_id]
    assert ep.loss_mask == [0] * len(prompt) + [1] * 3 + [0] * len(cont) + [1, 1]
    assert cont[0] == tok.eos_token_id  # the closing EOS was not sampled: masked
    lp = [x for x, m in zip(ep.engine_logprobs, ep.loss_mask, strict=True) if m]
    assert lp == [-0.1, -0.2, -0.3, -0.4, -0.5]
    # the second turn's prompt was exactly the sequence so far
    assert fake.calls[1][0] == prompt + [101, 102, 103] + cont
    assert ep.turns == 2 and ep.end == "terminated" and ep.status is Status.OK
    right = env.get_task(opening.info.task_id).answer == "3"
    assert ep.reward == ep.components["correctness"] == float(right)


def test_sequences_are_the_engines_token_ids(engine):
    chat = ChatFormatter(engine.tokenizer)
    seen = []

    def generate(prompts, params):
        gens = engine.generate(prompts, params)
        seen.extend(gens)
        return gens

    batch = collect(
        generate,
        LocalEnvPool(make_retry),
        chat,
        [1, 2],
        settings(params=SamplingParams(max_tokens=6, seed=1)),
        sample_seed=3,
    )
    assert len(batch.episodes) == 4
    for ep in batch.episodes:
        model_ids = [t for t, m in zip(ep.tokens, ep.loss_mask, strict=True) if m]
        assert len(model_ids) == ep.response_tokens > 0
    first_turn = [g.token_ids for g in seen[:4]]
    for ep, ids in zip(batch.episodes, first_turn, strict=True):
        start = ep.loss_mask.index(1)
        assert ep.tokens[start : start + len(ids)] == ids
    # a second call with the same seeds samples the same sequences
    again = collect(
        engine.generate,
        LocalEnvPool(make_retry),
        chat,
        [1, 2],
        settings(params=SamplingParams(max_tokens=6, seed=1)),
        sample_seed=3,
    )
    assert [e.tokens for e in again.episodes] == [e.tokens for e in batch.episodes]


def test_infra_error_episodes_are_dropped_and_counted(engine):
    chat = ChatFormatter(engine.tokenizer)
    fake = ScriptedEngine(engine.tokenizer, engine.tokenizer.eos_token_id)
    pool = LocalEnvPool(lambda: make_retry(fail_seeds=[7]))
    batch = collect(fake.generate, pool, chat, [7, 8], settings(), sample_seed=0)
    dropped = [e for e in batch.episodes if e.dropped]
    assert len(dropped) == 2 and all(e.seed == 7 for e in dropped)
    assert all(e.status is Status.INFRA_ERROR and "sandbox died" in e.error for e in dropped)
    assert batch.dropped_by_status() == {"infra_error": 2}
    assert [e.seed for e in batch.kept] == [8, 8]
    # the clients of failed episodes were closed, the healthy ones kept for reuse
    assert len(pool._idle) == 2 and not pool._live


def test_a_hanging_env_is_dropped_at_its_deadline(engine):
    chat = ChatFormatter(engine.tokenizer)
    fake = ScriptedEngine(engine.tokenizer, engine.tokenizer.eos_token_id)
    pool = LocalEnvPool(lambda: make_retry(hang_seeds=[4], hang_s=30))
    import time

    t0 = time.time()
    batch = collect(fake.generate, pool, chat, [4, 6], settings(timeout_s=1.0), sample_seed=0)
    assert time.time() - t0 < 10
    assert {e.seed for e in batch.episodes if e.dropped} == {4}
    assert all(e.status is Status.INFRA_ERROR for e in batch.episodes if e.dropped)
    assert len(batch.kept) == 2


def test_call_all_returns_exceptions_as_values():
    def boom():
        raise RuntimeError("x")

    out = call_all([lambda: 1, boom], 5)
    assert out[0] == 1 and isinstance(out[1], RuntimeError)


def test_tool_calls_are_parsed_only_when_tools_are_offered():
    text = 'ok <tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>'
    m = to_message(text, parse_tools=True)
    assert m.tool_calls[0].function.name == "search"
    assert m.tool_calls[0].function.arguments == '{"q": "x"}'
    assert to_message(text, parse_tools=False).tool_calls is None
