"""``envhub eval --rescore DIR``: re-verify recorded episodes with today's verifiers.

Nothing is generated. For a single-turn environment (one turn, no tools) the recorded final
assistant message goes through ``env.verify(task_id, message)``. For a multi-turn one the
episode is replayed: ``reset(seed, task_id)`` with the recorded seed, then each recorded
assistant message is stepped in order until the environment ends the episode. Since the
model's messages are replayed verbatim, a replay whose environment now answers differently
still measures the old outputs under the new rules.

Episodes in which the model never answered (an ``infra_error`` from the endpoint) have
nothing to re-verify; they are copied unchanged (``rescored: false``).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import Any

from ..core import Env
from ..errors import NotSupported
from ..types import Message, Status
from .metrics import is_passed, summarize
from .runner import (
    ENV_FAILURES,
    EnvFactory,
    _describe,
    _failure_status,
    record_step,
    run_jobs,
    sibling,
)
from .store import EpisodeRecord, EvalConfig, RunStore

_BATCH = 32
"""Episodes per ``verify_batch`` call when rescoring single-turn environments."""


def _assistant_messages(rec: EpisodeRecord) -> list[Message]:
    return [m for m in rec.messages if m.role == "assistant"]


def _single_turn(env: Env) -> bool:
    """True when the episodes can be re-verified in one batch: one turn, no tools."""
    return env.spec.max_turns == 1 and not env.tools()


def _verify(
    env: Env, recs: list[EpisodeRecord], primary: str, threshold: float
) -> list[EpisodeRecord]:
    """Re-verify the final answers of single-turn episodes in one ``verify_batch`` call."""
    scores = env.verify_batch([(r.task_id, _assistant_messages(r)[-1]) for r in recs])
    out = []
    for rec, score in zip(recs, scores, strict=True):
        new = rec.model_copy(deep=True)
        new.reward, new.components = score.reward, dict(score.components)
        new.status, new.error = score.status, score.error
        new.passed = is_passed(new.status, new.reward, new.components, primary, threshold)
        new.rescored = True
        out.append(new)
    return out


def _replay(env: Env, rec: EpisodeRecord, primary: str, threshold: float) -> EpisodeRecord:
    new = rec.model_copy(deep=True)
    new.reward, new.components, new.status, new.error = 0.0, {}, Status.OK, None
    new.turns, new.invalid_actions, new.terminated, new.truncated = 0, 0, False, False
    try:
        reset = env.reset(seed=rec.seed, task_id=rec.task_id)
    except ENV_FAILURES as e:
        new.status, new.error = _failure_status(e), f"reset: {_describe(e)}"
        new.passed, new.rescored = None, True
        return new
    messages = list(reset.messages)
    for action in _assistant_messages(rec):
        messages.append(action)
        new.turns += 1
        try:
            step = env.step(action)
        except ENV_FAILURES as e:
            new.status, new.error, new.truncated = _failure_status(e), _describe(e), True
            break
        messages.extend(step.messages)
        if record_step(new, step):
            break
    new.messages = messages
    new.passed = is_passed(new.status, new.reward, new.components, primary, threshold)
    new.rescored = True
    return new


def _rescorer(single: bool, primary: str, threshold: float) -> Any:
    async def work(env: Env, recs: list[EpisodeRecord]) -> list[EpisodeRecord]:
        if single:
            try:
                return await asyncio.to_thread(_verify, env, recs, primary, threshold)
            except NotSupported:
                pass
        return [await asyncio.to_thread(_replay, env, r, primary, threshold) for r in recs]

    return work


async def _rescore_env(
    name: str,
    recs: list[EpisodeRecord],
    make_env: EnvFactory,
    concurrency: int,
    threshold: float,
) -> list[EpisodeRecord]:
    """Re-verify one environment's episodes; those with no answer are copied unchanged."""
    out: list[EpisodeRecord] = []
    probe = await asyncio.to_thread(make_env, name)
    try:
        primary, single = probe.primary_component, _single_turn(probe)
        todo = [r for r in recs if _assistant_messages(r)]
        out.extend(
            r.model_copy(update={"rescored": False}) for r in recs if not _assistant_messages(r)
        )

        # single-turn: batches through one instance's verify_batch (one request over
        # HTTP); multi-turn: one replay per job, on up to `concurrency` instances
        size = _BATCH if single else 1
        await run_jobs(
            [todo[i : i + size] for i in range(0, len(todo), size)],
            lambda: sibling(probe, make_env, name),
            _rescorer(single, primary, threshold),
            out.extend,
            concurrency=1 if single else concurrency,
            first_env=probe,
        )
    finally:
        await asyncio.to_thread(probe.close)
    return out


async def rescore_run(
    source: RunStore,
    dest: RunStore,
    make_env: EnvFactory,
    *,
    concurrency: int = 8,
    pass_threshold: float | None = None,
) -> dict[str, Any]:
    """Re-verify every episode of ``source`` into ``dest`` and return the new summary.

    The summary holds, per environment, the new figures and under ``before`` the recorded
    ones, so a verifier fix is measured at a glance.
    """
    config = source.read_config()
    threshold = config.pass_threshold if pass_threshold is None else pass_threshold
    records = source.load_records()
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        groups[r.env].append(r)
    out: list[EpisodeRecord] = []
    wall: dict[str, float] = {}
    for name, recs in groups.items():
        t0 = time.perf_counter()
        out.extend(await _rescore_env(name, recs, make_env, concurrency, threshold))
        wall[name] = time.perf_counter() - t0
    order = list(groups)
    out.sort(key=lambda r: (order.index(r.env), r.task_id, r.sample))
    dest.write_config(config)
    dest.rewrite(out)
    summary = _summary(source, config, records, out, wall, order)
    dest.write_summary(summary)
    return summary


def _summary(
    source: RunStore,
    config: EvalConfig,
    records: list[EpisodeRecord],
    out: list[EpisodeRecord],
    wall: dict[str, float],
    order: list[str],
) -> dict[str, Any]:
    """The rescored run's summary, each environment with its recorded figures under ``before``."""
    before = summarize(records, k=config.n, order=order)
    after = summarize(out, k=config.n, wall=wall, order=order)
    for name, s in after.items():
        s["before"] = {key: before[name].get(key) for key in _compared_keys(config.n)}
        s["changed_episodes"] = _changed(records, out, name)
    return {
        "model": records[0].model if records else config.model,
        "rescored_from": str(source.dir),
        "config": config.model_dump(),
        "environments": after,
    }


def _compared_keys(k: int) -> list[str]:
    return ["mean_reward", "pass@1", f"pass@{k}", "status"]


def _changed(before: list[EpisodeRecord], after: list[EpisodeRecord], env: str) -> int:
    old = {r.key: (r.reward, r.status, r.passed) for r in before if r.env == env}
    return sum(
        1 for r in after if r.env == env and old.get(r.key) != (r.reward, r.status, r.passed)
    )
