"""Agent rollouts: a GRPO group is ``group_size`` runs of an agent program on one task.

Used by the driver instead of :func:`~envhub.trainer.episodes.rollout.collect` when the
config has an ``agent:`` section (without one nothing here runs). For each task group:

1. the environment is reset once per episode (as in ``collect``), and its opening messages
   become the agent's task (:func:`envhub.gateway.agent.task_payload`), with an episode URL
   through which the agent may answer the environment itself, turn by turn (tools, games;
   only replies the model gave);
2. every episode's agent runs against a recording gateway in front of the trainer's own
   engine group (:class:`~envhub.gateway.backends.GenerateFnEngine`): the same weights, the
   same sampling settings (``rollout.sampling``, a call's own ``max_tokens`` capped by it), the
   weights version of every call recorded;
3. the episode's status follows the table of :mod:`envhub.gateway.agent`: ``infra_error``
   drops it; ``timeout``/``invalid_action`` keep it with reward 0 (its tokens trained, the
   model's failure is a sample); otherwise the environment's own steps through the episode
   URL score it (finished from outside if the agent stopped first), or, if the agent never
   used it, the environment scores the last recorded reply;
4. the episode's training sequence is the segment of its run's last call (the one holding
   the scored reply): prompt ids as the engine saw them, loss mask 1 exactly on every id its calls
   sampled, the engine's logprobs; a run that edited its history has other segments too,
   kept in ``extra_sequences`` and trained as samples of their own. Every sampled token of
   every call gets the run's advantage (the group's baseline counts each run once). Logged:
   ``gateway/segments`` and ``gateway/retokenized``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from envhub.engines.chat import ChatFormatter
from envhub.errors import NotSupported
from envhub.gateway.agent import AgentRun, AgentRunner, agent_status, task_payload
from envhub.gateway.backends import BackendError, EngineBackend, GenerateFnEngine
from envhub.gateway.config import AgentConfig
from envhub.gateway.recording import training_sequences
from envhub.gateway.server import GatewayServer
from envhub.gateway.service import Gateway
from envhub.gateway.trace import TraceWriter
from envhub.trainer.episodes.mix import Job
from envhub.trainer.episodes.rollout import (
    DROP_STATUSES,
    EnvCalls,
    EnvPool,
    GenerateFn,
    RolloutBatch,
    RolloutSettings,
    TrainingEpisode,
    _new_episodes,
    _record,
    _Run,
    collect,
)
from envhub.types import Message, Status


def collect_agents(
    generate: GenerateFn,
    pool: EnvPool,
    chat: ChatFormatter,
    seeds: Sequence[int | Job],
    settings: RolloutSettings,
    agent: AgentConfig,
    *,
    sample_seed: int,
    calls: EnvCalls | None = None,
    trace: TraceWriter | None = None,
    step: int = 0,
) -> RolloutBatch:
    """Run ``group_size`` agent episodes per seed or job; see the module docstring.

    ``trace``: where each episode's gateway record goes (``RUN/traces/episodes.jsonl``, a
    ``step`` field added), or None.
    """
    if calls is None:
        with EnvCalls(settings.env_concurrency) as own:
            return collect_agents(
                generate,
                pool,
                chat,
                seeds,
                settings,
                agent,
                sample_seed=sample_seed,
                calls=own,
                trace=trace,
                step=step,
            )
    run = _Run(pool, settings, calls)
    episodes = _new_episodes(seeds, settings, sample_seed)
    batch = RolloutBatch(episodes=episodes)
    tasks = _reset_all(run, batch)
    live = [e for e in episodes if e.key in tasks]
    runs = _run_agents(generate, chat, settings, agent, live, tasks, batch, pool)
    scores, finish = [], []
    for ep, agent_run in zip(live, runs, strict=True):
        if not _settle(ep, agent_run, settings):
            continue
        if not agent_run.episode.stepped:
            scores.append((ep, agent_run))
        elif not agent_run.episode.env_done:
            finish.append(ep)
    _finish_from_outside(run, batch, finish)
    steps = [lambda e=e, r=r: pool.step(e.key, _last_reply(r)) for e, r in scores]
    for (ep, agent_run), res in zip(scores, run.env(batch, steps), strict=True):
        _score(run, batch, ep, agent_run, res)
    calls.run([lambda e=e: pool.close(e.key, e.dropped) for e in episodes], settings.timeout_s)
    if trace is not None:
        for ep, agent_run in zip(live, runs, strict=True):
            trace.write(_trace_line(ep, agent_run, step))
    return batch


def _reset_all(run: _Run, batch: RolloutBatch) -> dict[str, dict[str, Any]]:
    """Reset every episode of ``batch``; the agent's task of each one that started, by key."""
    pool = run.pool
    episodes = batch.episodes
    resets = run.env(batch, [lambda e=e: pool.reset(e.key, e.seed, e.task_id) for e in episodes])
    tasks: dict[str, dict[str, Any]] = {}
    for ep, res in zip(episodes, resets, strict=True):
        if isinstance(res, Exception):
            ep.fail(Status.INFRA_ERROR, f"reset failed: {type(res).__name__}: {res}")
            continue
        ep.task_id = res.info.task_id
        ep.tools = bool(res.info.tools)
        info = res.info
        tasks[ep.key] = task_payload(ep.env, ep.task_id or "", ep.seed, res.messages, info.tools)
    return tasks


def _trace_line(ep: TrainingEpisode, run: AgentRun, step: int) -> dict[str, Any]:
    """The trace line of one training episode (:mod:`envhub.gateway.trace`)."""
    rec = run.episode.recorder
    return {
        "step": step,
        "episode": ep.key,
        "env": ep.env,
        "task_id": ep.task_id,
        "sample": ep.group,
        "seed": ep.seed,
        "status": str(ep.status),
        "reward": ep.reward,
        "components": ep.components,
        "truncated": ep.end != "terminated",
        "error": ep.error,
        "agent": run.summary(),
        "segments": rec.segments,
        "retokenized": rec.retokenized,
        "calls": [c.to_json() for c in rec.calls],
    }


def collect_mixed(
    generate: GenerateFn,
    pool: EnvPool,
    chat: ChatFormatter,
    jobs: Sequence[Job],
    settings: RolloutSettings,
    agents: dict[str, AgentConfig | None],
    *,
    sample_seed: int,
    calls: EnvCalls | None = None,
    trace: TraceWriter | None = None,
    step: int = 0,
) -> RolloutBatch:
    """One step's groups when some sources have an agent: each source's jobs collected its way.

    Sources without an agent go through :func:`~envhub.trainer.episodes.rollout.collect` (one
    batch), each agent's sources through :func:`collect_agents`; the batches are merged with
    their groups renumbered in order, so every group keeps its own advantages.
    """
    parts: dict[str, tuple[AgentConfig | None, list[Job]]] = {}
    for job in jobs:
        agent = agents.get(job.source)
        key = agent.model_dump_json() if agent is not None else ""
        parts.setdefault(key, (agent, []))[1].append(job)
    merged = RolloutBatch(episodes=[])
    offset = 0
    for agent, part in parts.values():
        if agent is None:
            batch = collect(
                generate, pool, chat, part, settings, sample_seed=sample_seed, calls=calls
            )
        else:
            batch = collect_agents(
                generate,
                pool,
                chat,
                part,
                settings,
                agent,
                sample_seed=sample_seed,
                calls=calls,
                trace=trace,
                step=step,
            )
        for ep in batch.episodes:
            ep.group += offset
        offset += len(part)
        merged.episodes += batch.episodes
        merged.generation_time += batch.generation_time
        merged.env_time += batch.env_time
    return merged


def _run_agents(
    generate: GenerateFn,
    chat: ChatFormatter,
    settings: RolloutSettings,
    agent: AgentConfig,
    live: list[TrainingEpisode],
    tasks: dict[str, dict[str, Any]],
    batch: RolloutBatch,
    pool: EnvPool,
) -> list[AgentRun]:
    """Every live episode's agent run, ``agent.concurrency`` at a time, behind one gateway."""
    import time

    engine = GenerateFnEngine(generate, chat.tokenizer, settings.max_seq_len)
    # no per-call limit here: the driver's watchdog bounds every generate by the work it does
    backend = EngineBackend(engine, "policy", weights_version=None, call_timeout_s=None)
    gateway = Gateway(backend, sampling=settings.params)
    t0 = time.perf_counter()
    with GatewayServer(gateway) as server:
        runner = AgentRunner(agent, gateway, server.base_url, "policy")

        async def all_runs(threads: ThreadPoolExecutor) -> list[AgentRun]:
            sem = asyncio.Semaphore(agent.concurrency)

            async def one(ep: TrainingEpisode) -> AgentRun:
                async with sem:
                    stepper = _stepper(pool, ep, settings.timeout_s, threads)
                    return await runner.run(tasks[ep.key], ep.key, stepper)

            return await asyncio.gather(*(one(e) for e in live))

        with step_threads(agent) as threads:
            runs = asyncio.run(all_runs(threads))
    batch.generation_time += time.perf_counter() - t0
    return runs


def step_threads(agent: AgentConfig) -> ThreadPoolExecutor:
    """The threads the episode URLs' steps run on: one for every agent run in flight."""
    return ThreadPoolExecutor(agent.concurrency, thread_name_prefix="agent-step")


def _stepper(
    pool: EnvPool, ep: TrainingEpisode, timeout_s: float, threads: ThreadPoolExecutor
) -> Any:
    """The episode URL's environment: ``pool.step`` in a thread, within the env deadline.

    ``threads`` has a thread for every run in flight (``agent.concurrency``), so a step never
    waits for one: on asyncio's default executor (``cpu + 4`` threads, 6 on 2 cores) the wait
    counted against ``timeout_s``, and 64 agents' long steps were dropped as ``infra_error``.
    """

    async def step(reply: dict[str, Any]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        call = loop.run_in_executor(threads, pool.step, ep.key, _as_message(reply))
        try:
            res = await asyncio.wait_for(call, timeout_s)
        except Exception as e:  # as EnvCalls: any failure of an env call drops the episode
            ep.fail(Status.INFRA_ERROR, f"step failed: {type(e).__name__}: {e}")
            raise BackendError(f"the environment failed: {e!r}") from e
        if _record(ep, res) and (res.terminated or res.truncated):
            ep.end = "terminated" if res.terminated else "truncated"
        return res.model_dump(mode="json")

    return step


def _finish_from_outside(run: _Run, batch: RolloutBatch, episodes: list[TrainingEpisode]) -> None:
    """The final accounting of episodes whose agent stopped before the environment ended them."""
    results = run.env(batch, [lambda e=e: run.pool.finish(e.key) for e in episodes])
    for ep, res in zip(episodes, results, strict=True):
        if isinstance(res, NotSupported):
            continue
        if isinstance(res, Exception):
            ep.fail(Status.INFRA_ERROR, f"finish failed: {type(res).__name__}: {res}")
            continue
        _record(ep, res)
        ep.end = "truncated"


def _settle(ep: TrainingEpisode, run: AgentRun, settings: RolloutSettings) -> bool:
    """Fill the episode from its run; True when the environment should score the last reply."""
    rec = run.episode.recorder
    if ep.dropped:  # the environment failed behind the episode URL
        return False
    status, error = agent_status(run)
    if status in DROP_STATUSES:
        ep.fail(status, error or str(status))
        return False
    seqs = training_sequences(rec.calls)  # by segment; the scored reply's is the last call's
    last, cut = seqs[rec.calls[-1].segment], settings.max_seq_len
    ep.tokens, ep.loss_mask = last.tokens[:cut], last.loss_mask[:cut]
    ep.engine_logprobs = last.logprobs[:cut]
    ep.extra_sequences = [
        (s.tokens[:cut], s.loss_mask[:cut], s.logprobs[:cut])
        for s in seqs
        if s is not last and any(s.loss_mask[:cut])
    ]
    ep.turns = len(rec.calls)
    ep.versions = [v for s in seqs for v in s.versions if v is not None]
    ep.capped = rec.calls[-1].finish_reason == "length" or cut < len(last.tokens)
    ep.done = True
    if ep.end == "running":
        ep.end = "terminated"
    ep.gateway = {"segments": rec.segments, "retokenized": rec.retokenized}
    if status is not None:  # the model's failure: a sample with reward 0
        ep.status, ep.error, ep.end = status, error, "truncated"
        ep.reward, ep.components = 0.0, {}
        return False
    if run.episode.truncated:
        ep.end = "truncated"
    return True


def _score(run: _Run, batch: RolloutBatch, ep: TrainingEpisode, agent_run: AgentRun, res: Any):
    """Apply the environment's verdict on the last reply (finish it if it wants more)."""
    if isinstance(res, Exception):
        ep.fail(Status.INFRA_ERROR, f"step failed: {type(res).__name__}: {res}")
        return
    if not _record(ep, res):
        return
    if not (res.terminated or res.truncated):  # a multi-turn env: the agent's run is over
        [fin] = run.env(batch, [lambda: run.pool.finish(ep.key)])
        if isinstance(fin, Exception):
            if not isinstance(fin, NotSupported):
                ep.fail(Status.INFRA_ERROR, f"finish failed: {type(fin).__name__}: {fin}")
            return
        _record(ep, fin)
        ep.end = "truncated"


def _last_reply(run: AgentRun) -> Message:
    return _as_message(run.last_reply or {})


def _as_message(reply: dict[str, Any]) -> Message:
    calls = reply.get("tool_calls") or None
    return Message.model_validate(
        {"role": "assistant", "content": reply.get("content") or "", "tool_calls": calls}
    )
