"""Multi-turn rollouts against any :class:`envhub.Env`, turned into training sequences.

For each task a group of G episodes runs turn by turn: every live episode's conversation so
far (token ids) goes to the generation engine in one batch, each completion goes to its
environment as an assistant message, and the environment's answer is appended as tokens.

The message is the completion's text as sampled (:attr:`Generation.message`, the one
``envhub eval`` sends too): the rollout parses nothing out of it. An environment that offers
tools reads ``<tool_call>`` blocks from the text itself (:mod:`envhub.tools`, in linear time
over :mod:`envhub.tags`), so training and evaluation score the same text the same way, and a
malformed call beside a well-formed one costs the same penalty in both.

The training sequence of an episode is built from the engine's *own* token ids: the prompt
ids once, then per turn the sampled ids (``loss_mask`` 1, with the engine's logprobs), then
the ids of the environment's answer (``loss_mask`` 0; see
:meth:`envhub.engines.chat.ChatFormatter.continuation_ids`). Nothing is ever re-tokenised.

Environment calls run concurrently on a bounded thread pool (:class:`EnvCalls`), each call
with a deadline from when it starts (queueing for a thread is the machinery's time); a call
past it has its late result discarded. An
episode whose environment fails (``infra_error``, ``env_error``, a call past its deadline, an
exception in the client) is dropped from the batch and counted, never scored 0. ``timeout``
and ``invalid_action`` are the model's doing and keep the reward the environment gave. An
episode the rollout ends itself (its turn or token budget) gets its final accounting from
``env.finish()``, so the environment's end-of-episode components, penalties included, are paid
as on a truncation.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pydantic import Field

from envhub.engines.chat import ChatFormatter
from envhub.engines.types import Generation, SamplingParams
from envhub.errors import NotSupported
from envhub.trainer.episodes.mix import Job
from envhub.types import (
    EpisodeResult,
    Message,
    ResetResult,
    Status,
    StepResult,
)

GenerateFn = Callable[[list[list[int]], SamplingParams], list[Generation | Exception]]
"""The engine group's ``generate``: prompts in order, completions in the same order (an
exception in place of a completion whose engine was lost: that episode is dropped)."""

DROP_STATUSES = frozenset({Status.INFRA_ERROR, Status.ENV_ERROR})
"""Statuses that drop an episode: the environment failed, not the model."""


class EnvPool(Protocol):
    """Environment clients addressed by episode key (one live episode per key)."""

    def reset(self, key: str, seed: int | None, task_id: str | None) -> ResetResult:
        """Start the episode ``key``."""

    def step(self, key: str, message: Message) -> StepResult:
        """Send the model's message to the episode ``key``."""

    def finish(self, key: str) -> StepResult:
        """End the running episode ``key`` from outside: its final accounting."""

    def close(self, key: str, discard: bool = False) -> None:
        """End the episode ``key``; ``discard`` closes its client instead of reusing it."""


class LocalEnvPool:
    """An :class:`EnvPool` of in-process env clients, made on demand and reused.

    The clients may themselves be remote (``envhub.make(name, runner="http")``): this pool
    only needs the :class:`envhub.Env` interface.
    """

    def __init__(self, factory: Callable[[], Any]) -> None:
        """``factory()`` returns a new :class:`envhub.Env`."""
        self.factory = factory
        self._live: dict[str, Any] = {}
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    def reset(self, key: str, seed: int | None, task_id: str | None) -> ResetResult:
        """Start the episode ``key`` on a free client."""
        with self._lock:
            env = self._idle.pop() if self._idle else None
        if env is None:
            env = self.factory()
        with self._lock:
            self._live[key] = env
        return env.reset(seed=seed, task_id=task_id)

    def step(self, key: str, message: Message) -> StepResult:
        """Step the episode ``key``."""
        return self._live[key].step(message)

    def finish(self, key: str) -> StepResult:
        """End the episode ``key`` from outside (``Env.finish``)."""
        return self._live[key].finish()

    def close(self, key: str, discard: bool = False) -> None:
        """Return the client of ``key`` to the idle list, or close it after a failure."""
        with self._lock:
            env = self._live.pop(key, None)
            if env is not None and not discard:
                self._idle.append(env)
        if env is not None and discard:
            env.close()

    def shutdown(self) -> None:
        """Close every client."""
        with self._lock:
            envs = [*self._idle, *self._live.values()]
            self._idle, self._live = [], {}
        for env in envs:
            env.close()


class EnvCalls:
    """Environment calls on a bounded pool of threads, each call with a deadline of its own.

    One pool serves a whole rollout (or a whole collector): no thread is started per call,
    and at most ``workers`` calls run at once. A call's deadline counts from when it starts:
    waiting for a free thread behind other episodes' calls is the machinery's time, never the
    model's. A call not done ``timeout_s`` after it started is forgotten (its result is
    discarded when it comes); its slot in the answer is a :class:`TimeoutError`, which drops
    that episode as ``infra_error``. A call that hangs for good holds its thread; once every
    thread is held so, calls still queued cannot start and are answered with a timeout at
    once (visible as ``dropped/infra_error``) instead of waiting or growing the pool.
    """

    def __init__(self, workers: int) -> None:
        """At most ``workers`` calls run at once."""
        if workers < 1:
            raise ValueError(f"EnvCalls needs at least 1 worker, got {workers}")
        self.workers = workers
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="envhub-env")
        self._lock = threading.Lock()
        self._wedged = 0
        """Threads held by calls past their deadline that have not returned yet."""

    def run(self, calls: Sequence[Callable[[], Any]], timeout_s: float) -> list[Any]:
        """Run ``calls``; each result is the value, the exception it raised, or a timeout."""
        started: list[float | None] = [None] * len(calls)

        def timed(i: int, fn: Callable[[], Any]) -> Any:
            started[i] = time.monotonic()
            return fn()

        futures = [self._executor.submit(timed, i, fn) for i, fn in enumerate(calls)]
        late: dict[int, TimeoutError] = {}
        pending = set(range(len(futures)))
        while pending:
            pending -= self._expire(futures, started, pending, timeout_s, late)
            if not pending:
                break
            running = [started[i] + timeout_s for i in pending if started[i] is not None]
            wake = min(running) - time.monotonic() if running else timeout_s
            wait([futures[i] for i in pending], max(wake, 0.0), FIRST_COMPLETED)
            pending -= {i for i in pending if futures[i].done()}
        return [late[i] if i in late else _outcome(fut) for i, fut in enumerate(futures)]

    def _expire(
        self,
        futures: list[Future],
        started: list[float | None],
        pending: set[int],
        timeout_s: float,
        late: dict[int, TimeoutError],
    ) -> set[int]:
        """The pending calls that are over, each with its timeout put in ``late``.

        Over: running past its deadline, or queued while every thread is held by such a call.
        """
        now, over = time.monotonic(), set()
        for i in pending:
            if started[i] is not None and now - started[i] >= timeout_s and not futures[i].done():
                late[i] = TimeoutError(f"no answer within {timeout_s:.0f} s")
                self._forget(futures[i])
                over.add(i)
        queued = [i for i in pending - over if started[i] is None]
        if queued and len(queued) == len(pending - over) and self._wedged >= self.workers:
            for i in queued:
                if futures[i].cancel():  # never started: no thread was free for it
                    late[i] = TimeoutError(
                        f"not started: every one of the {self.workers} environment call "
                        f"threads is held by a call past its {timeout_s:.0f} s deadline"
                    )
                    over.add(i)
        return over

    def _forget(self, fut: Future) -> None:
        """``fut`` ran past its deadline: count its thread as held until it returns."""
        with self._lock:
            self._wedged += 1

        def returned(_: Future) -> None:
            with self._lock:
                self._wedged -= 1

        fut.add_done_callback(returned)

    def close(self) -> None:
        """Stop the threads once their calls return; queued calls are cancelled."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> EnvCalls:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _outcome(fut: Future) -> Any:
    """A finished call's value, or the exception it raised (a failed call is data)."""
    exc = fut.exception()
    if exc is not None and not isinstance(exc, Exception):
        raise exc  # KeyboardInterrupt and the like are not an environment's failure
    return fut.result() if exc is None else exc


class TrainingEpisode(EpisodeResult):
    """One episode as a training sequence: the core's episode record plus its tokens.

    Task, seed, reward, components, status, error and turns are those of
    :class:`envhub.types.EpisodeResult`; the transcript is kept as token ids, not messages.
    """

    group: int
    """Index of the task group within the step."""
    key: str
    """The episode's key in the :class:`EnvPool`."""
    tokens: list[int] = Field(default_factory=list)
    """The whole conversation: prompt, model turns, environment answers."""
    loss_mask: list[int] = Field(default_factory=list)
    """1 on tokens the model sampled, 0 elsewhere; same length as ``tokens``."""
    engine_logprobs: list[float] = Field(default_factory=list)
    """The engine's logprob of each token (0.0 where ``loss_mask`` is 0)."""
    done: bool = False
    end: str = "running"
    """``terminated``, ``truncated`` (by the env), ``max_turns``, ``token_budget`` or
    ``dropped``."""
    tools: bool = False
    """The environment offered tools (it reads the calls out of the completions' text)."""
    versions: list[int] = Field(default_factory=list)
    """Weight version of each model turn (engine actors only; empty elsewhere)."""
    env: str = ""
    """The mix source (environment name) the episode ran on."""
    max_turns: int = 1
    """The source's turn budget."""
    capped: bool = False
    """The last model turn stopped at ``max_tokens`` (no EOS): a truncated sample."""
    gateway: dict[str, int] = Field(default_factory=dict)
    """An agent episode's counts at the gateway (``segments``, ``retokenized``;
    :mod:`~envhub.trainer.episodes.agents`); empty otherwise."""
    extra_sequences: list[tuple[list[int], list[int], list[float]]] = Field(default_factory=list)
    """An agent run's earlier segments (it edited its history): ``(tokens, loss_mask,
    engine_logprobs)`` each, trained with the episode's advantage; empty otherwise."""

    @property
    def truncated_sample(self) -> bool:
        """The model's answer was cut: by ``max_tokens`` or by the episode's token budget."""
        return self.capped or self.end == "token_budget"

    @property
    def dropped(self) -> bool:
        """True when the environment failed and the episode must not be trained on."""
        return self.status in DROP_STATUSES

    @property
    def response_tokens(self) -> int:
        """Number of tokens the model produced."""
        return sum(self.loss_mask)

    def append(self, ids: Sequence[int], *, model: bool, logprobs: Sequence[float] = ()) -> None:
        """Add tokens: the model's own (with logprobs) or the environment's (masked)."""
        self.tokens.extend(ids)
        self.loss_mask.extend([int(model)] * len(ids))
        self.engine_logprobs.extend(logprobs if model else [0.0] * len(ids))

    def fail(self, status: Status, error: str) -> None:
        """End the episode because its environment failed."""
        self.status, self.error, self.done, self.end = status, error, True, "dropped"


@dataclass
class RolloutBatch:
    """The episodes of one step."""

    episodes: list[TrainingEpisode]
    """Every episode, dropped ones included (check :attr:`TrainingEpisode.dropped`)."""
    generation_time: float = 0.0
    env_time: float = 0.0

    @property
    def kept(self) -> list[TrainingEpisode]:
        """Episodes to train on."""
        return [e for e in self.episodes if not e.dropped]

    def dropped_by_status(self) -> dict[str, int]:
        """How many episodes were dropped, per status."""
        out: dict[str, int] = {}
        for e in self.episodes:
            if e.dropped:
                out[str(e.status)] = out.get(str(e.status), 0) + 1
        return out


@dataclass
class RolloutSettings:
    """Budgets of one rollout."""

    group_size: int
    max_turns: int
    max_seq_len: int
    timeout_s: float
    params: SamplingParams
    env_concurrency: int = 64
    """Environment calls run at once (threads of the rollout's :class:`EnvCalls`)."""
    source_turns: dict[str, int] = field(default_factory=dict)
    """Turn budget per mix source (``max_turns`` for sources not listed)."""

    def turns_of(self, source: str) -> int:
        """The turn budget of ``source``."""
        return self.source_turns.get(source, self.max_turns)


def collect(
    generate: GenerateFn,
    pool: EnvPool,
    chat: ChatFormatter,
    seeds: Sequence[int | Job],
    settings: RolloutSettings,
    *,
    sample_seed: int,
    calls: EnvCalls | None = None,
) -> RolloutBatch:
    """Run ``group_size`` episodes for each seed (one task per seed) and return them.

    Args:
        generate: The engine group's generate function.
        pool: Environment clients (a :class:`RoutedEnvPool` for a mix of sources).
        chat: Renders messages to token ids.
        seeds: One per task group: a reset seed (the pool's one environment), or a
            :class:`~envhub.trainer.episodes.mix.Job` naming the source, the seed and maybe the
            task.
            The group's episodes all run the same task.
        settings: Group size, turn and token budgets (per source), deadline, sampling.
        sample_seed: Base seed of the sampler (turn ``t`` uses ``sample_seed + t``).
        calls: The thread pool of the environment calls (a collector's own, kept across
            rollouts); when ``None`` one of ``settings.env_concurrency`` threads is made for
            this rollout and closed after it.
    """
    if calls is None:
        with EnvCalls(settings.env_concurrency) as own:
            return collect(
                generate, pool, chat, seeds, settings, sample_seed=sample_seed, calls=own
            )
    run = _Run(pool, settings, calls)
    episodes = _new_episodes(seeds, settings, sample_seed)
    batch = RolloutBatch(episodes=episodes)
    resets = run.env(batch, [lambda e=e: pool.reset(e.key, e.seed, e.task_id) for e in episodes])
    for ep, res in zip(episodes, resets, strict=True):
        _start(ep, res, chat, settings)
    for turn in range(max((e.max_turns for e in episodes), default=0)):
        live = [e for e in episodes if not e.done]
        if not live:
            break
        params = replace(settings.params, seed=sample_seed + turn)
        sampled = _generate(generate, live, params, batch)
        steps = [lambda e=e, g=g: pool.step(e.key, g.message) for e, g in sampled]
        for (ep, gen), res in zip(sampled, run.env(batch, steps), strict=True):
            _advance(ep, gen, res, chat, settings, last_turn=turn == ep.max_turns - 1)
    for ep in episodes:
        if not ep.done:
            ep.done, ep.end = True, "max_turns"
    _finish(run, episodes, batch)
    # a client whose environment failed is not trusted with another episode
    calls.run([lambda e=e: pool.close(e.key, e.dropped) for e in episodes], settings.timeout_s)
    return batch


def _new_episodes(
    seeds: Sequence[int | Job], settings: RolloutSettings, sample_seed: int
) -> list[TrainingEpisode]:
    """The episodes of a rollout, ``group_size`` per seed or job, not started yet."""
    jobs = [s if isinstance(s, Job) else Job("", s) for s in seeds]
    return [
        TrainingEpisode(
            group=g,
            key=f"{job.source}|{sample_seed}-{g}-{i}" if job.source else f"{sample_seed}-{g}-{i}",
            seed=job.seed,
            task_id=job.task_id,
            env=job.source,
            max_turns=settings.turns_of(job.source),
        )
        for g, job in enumerate(jobs)
        for i in range(settings.group_size)
    ]


class RoutedEnvPool:
    """An :class:`EnvPool` over one pool per mix source, routed by the episode key's prefix.

    Keys look like ``SOURCE|...`` (:func:`collect` makes them so for a
    :class:`~envhub.trainer.episodes.mix.Job`); each source keeps its own clients, runner and
    reward.
    """

    def __init__(self, pools: dict[str, EnvPool]) -> None:
        """``pools``: the pool of each source, by source name."""
        self.pools = pools

    def _pool(self, key: str) -> EnvPool:
        source, sep, _ = key.partition("|")
        if not sep or source not in self.pools:
            raise KeyError(f"episode key {key!r} names no source of {sorted(self.pools)}")
        return self.pools[source]

    def reset(self, key: str, seed: int | None, task_id: str | None) -> ResetResult:
        """Start ``key`` on its source."""
        return self._pool(key).reset(key, seed, task_id)

    def step(self, key: str, message: Message) -> StepResult:
        """Step ``key`` on its source."""
        return self._pool(key).step(key, message)

    def finish(self, key: str) -> StepResult:
        """End ``key`` from outside."""
        return self._pool(key).finish(key)

    def close(self, key: str, discard: bool = False) -> None:
        """End ``key``."""
        self._pool(key).close(key, discard)


@dataclass
class _Run:
    """What one rollout's environment calls go through."""

    pool: EnvPool
    settings: RolloutSettings
    calls: EnvCalls

    def env(self, batch: RolloutBatch, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        """Run environment calls within the deadline, timed into ``batch.env_time``."""
        t0 = time.perf_counter()
        results = self.calls.run(calls, self.settings.timeout_s)
        batch.env_time += time.perf_counter() - t0
        return results


def _generate(
    generate: GenerateFn, live: list[TrainingEpisode], params: SamplingParams, batch: RolloutBatch
) -> list[tuple[TrainingEpisode, Generation]]:
    """One model turn of the live episodes; returns those that got a completion."""
    t0 = time.perf_counter()
    gens = generate([e.tokens for e in live], params)
    batch.generation_time += time.perf_counter() - t0
    sampled = []
    for ep, gen in zip(live, gens, strict=True):
        if isinstance(gen, Exception):  # the machinery lost the engine, not the model
            ep.fail(Status.INFRA_ERROR, f"generation failed: {gen}")
            continue
        ep.append(gen.token_ids, model=True, logprobs=gen.logprobs)
        ep.turns += 1
        ep.capped = gen.finish_reason == "length"
        if gen.weight_version is not None:
            ep.versions.append(gen.weight_version)
        sampled.append((ep, gen))
    return sampled


def _finish(run: _Run, episodes: list[TrainingEpisode], batch: RolloutBatch) -> None:
    """Pay the final accounting of the episodes the rollout ended itself (turns, tokens)."""
    cut = [e for e in episodes if e.end in ("max_turns", "token_budget")]
    results = run.env(batch, [lambda e=e: run.pool.finish(e.key) for e in cut])
    for ep, res in zip(cut, results, strict=True):
        if isinstance(res, NotSupported):  # an Env without finish(): nothing more to pay
            continue
        if isinstance(res, Exception):
            ep.fail(Status.INFRA_ERROR, f"finish failed: {type(res).__name__}: {res}")
            continue
        _record(ep, res)


def _record(ep: TrainingEpisode, res: StepResult) -> bool:
    """Add a step's reward and components to the episode; False if it must be dropped."""
    status = Status(res.info.status)
    if status in DROP_STATUSES:
        ep.fail(status, res.info.error or str(status))
        return False
    ep.add_step(res)  # the model's doing (timeout, invalid action): kept, as judged
    bad = _unrepresentable(ep)
    if bad is not None:  # the environment paid it: its failure, never a NaN in the loss
        ep.fail(Status.ENV_ERROR, bad)
        return False
    return True


FLOAT32_MAX = 3.4028234663852886e38
"""The largest finite float32: rewards are trained on in float32."""


def _unrepresentable(ep: TrainingEpisode) -> str | None:
    """Why the episode's reward so far cannot be trained on (None when it can).

    A reward (or component) that is not finite in float32, per step or summed over the
    episode, would turn the group's advantages into NaN or inf, or zero them silently.
    """
    values = {"reward": ep.reward, **{f"component {k!r}": v for k, v in ep.components.items()}}
    for what, v in values.items():
        if not math.isfinite(v) or abs(v) > FLOAT32_MAX:
            return (
                f"the environment paid an episode {what} of {v!r}, not a finite float32 "
                "(summed over the episode's steps): fix the environment's reward"
            )
    return None


def _start(ep: TrainingEpisode, res: Any, chat: ChatFormatter, settings: RolloutSettings) -> None:
    """Open an episode from its reset result (or drop it if the reset failed)."""
    if isinstance(res, Exception):
        ep.fail(Status.INFRA_ERROR, f"reset failed: {type(res).__name__}: {res}")
        return
    ep.task_id = res.info.task_id
    tools = res.info.tools
    ep.tools = bool(tools)
    ids = chat.prompt_ids(res.messages, tools=tools)
    if len(ids) + settings.params.max_tokens > settings.max_seq_len:
        ep.fail(
            Status.ENV_ERROR,
            f"prompt of {len(ids)} tokens + max_tokens exceeds rollout.max_seq_len="
            f"{settings.max_seq_len}; raise it",
        )
        return
    ep.append(ids, model=False)


def _advance(
    ep: TrainingEpisode,
    gen: Generation,
    res: Any,
    chat: ChatFormatter,
    settings: RolloutSettings,
    *,
    last_turn: bool,
) -> None:
    """Apply one step result to an episode."""
    if isinstance(res, Exception):
        ep.fail(Status.INFRA_ERROR, f"step failed: {type(res).__name__}: {res}")
        return
    if not _record(ep, res):
        return
    if res.terminated or res.truncated:
        ep.done, ep.end = True, "terminated" if res.terminated else "truncated"
        return
    if last_turn:  # its own budget is spent (other sources' episodes may go on)
        ep.done, ep.end = True, "max_turns"
        return
    cont = chat.continuation_ids(res.messages, ended_with_eos=gen.ended_with_eos)
    if len(ep.tokens) + len(cont) + settings.params.max_tokens > settings.max_seq_len:
        ep.done, ep.end = True, "token_budget"
        return
    ep.append(cont, model=False)
