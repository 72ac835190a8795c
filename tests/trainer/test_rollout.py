"""Rollouts: sequences from engine ids, env tokens masked, failed episodes dropped."""

import threading
import time

from fake_envs import make_retry

from envhub.engines.chat import ChatFormatter
from envhub.engines.types import Generation, SamplingParams
from envhub.trainer.episodes.rollout import EnvCalls, LocalEnvPool, RolloutSettings, collect
from envhub.types import Status


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
    t0 = time.time()
    batch = collect(fake.generate, pool, chat, [4, 6], settings(timeout_s=1.0), sample_seed=0)
    assert time.time() - t0 < 10
    assert {e.seed for e in batch.episodes if e.dropped} == {4}
    assert all(e.status is Status.INFRA_ERROR for e in batch.episodes if e.dropped)
    assert len(batch.kept) == 2


def test_env_calls_return_exceptions_as_values():
    def boom():
        raise RuntimeError("x")

    with EnvCalls(2) as calls:
        out = calls.run([lambda: 1, boom], 5)
    assert out[0] == 1 and isinstance(out[1], RuntimeError)


def test_env_calls_cancel_a_queued_call_at_the_deadline():
    release, ran = threading.Event(), []
    with EnvCalls(1) as calls:
        t0 = time.monotonic()
        out = calls.run([release.wait, lambda: ran.append(1)], 0.3)
        assert time.monotonic() - t0 < 2
        release.set()
        time.sleep(0.1)
    assert all(isinstance(r, TimeoutError) for r in out)
    assert ran == []  # the queued call was cancelled, never started


def test_env_calls_count_a_calls_deadline_from_its_start_not_its_queueing():
    """Two calls of 0.25 s on one thread with a 0.4 s deadline: the second waits 0.25 s for the
    thread, then runs within its own deadline. Counting from the batch's start timed it out."""
    with EnvCalls(1) as calls:
        out = calls.run([lambda: time.sleep(0.25) or "a", lambda: time.sleep(0.25) or "b"], 0.4)
    assert out == ["a", "b"]


def test_env_calls_time_out_a_running_call_but_start_the_queued_one():
    """A call past its deadline is forgotten; the queued call runs on the next free thread."""
    release = threading.Event()
    with EnvCalls(2) as calls:
        out = calls.run([release.wait, lambda: time.sleep(0.3) or "x", lambda: "y"], 0.5)
        release.set()
    assert isinstance(out[0], TimeoutError) and out[1:] == ["x", "y"]


def rollout_threads():
    """Live threads, less the env clients' own deadline threads."""
    return sum(t.name != "envhub-deadline" for t in threading.enumerate())


class HangingPool(LocalEnvPool):
    """Steps of the groups in ``hang`` block until released; counts live threads per call.

    Each env client keeps its own deadline thread (``envhub.deadline``), one per client and
    not the rollout's doing: those are left out of the count.
    """

    def __init__(self, factory, hang):
        super().__init__(factory)
        self.hang, self.release = hang, threading.Event()
        self.threads_seen: list[int] = []

    def count(self):
        self.threads_seen.append(rollout_threads())

    def reset(self, key, seed, task_id):
        self.count()
        return super().reset(key, seed, task_id)

    def step(self, key, message):
        self.count()
        if int(key.split("-")[1]) in self.hang:
            self.release.wait()
        time.sleep(0.05)  # a call that takes a while: calls overlap as they would for real
        return super().step(key, message)


def test_many_episodes_with_hung_steps_use_a_bounded_pool(engine):
    chat = ChatFormatter(engine.tokenizer)
    fake = ScriptedEngine(engine.tokenizer, engine.tokenizer.eos_token_id)
    pool = HangingPool(make_retry, hang={3, 11})
    workers, seeds = 8, list(range(20, 40))  # 40 episodes, those of groups 3 and 11 hang
    baseline = rollout_threads()
    with EnvCalls(workers) as calls:
        for sample_seed in (0, 1):  # one pool kept across rollouts, as a collector does
            batch = collect(
                fake.generate,
                pool,
                chat,
                seeds,
                settings(timeout_s=3.0, env_concurrency=workers),
                sample_seed=sample_seed,
                calls=calls,
            )
            pool.release.set()  # the wedged calls return (late: their answers are discarded)
            assert {e.group for e in batch.episodes if e.dropped} == {3, 11}
            assert batch.dropped_by_status() == {"infra_error": 4}
            assert all("no answer within" in e.error for e in batch.episodes if e.dropped)
            assert len(batch.kept) == 36
            assert all(e.turns >= 1 and e.end != "running" for e in batch.kept)
            time.sleep(0.2)
            pool.release.clear()
    # a thread per call would have shown about baseline + 40 here
    assert max(pool.threads_seen) <= baseline + workers
