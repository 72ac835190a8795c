"""The episode loop of ``envhub eval``, and the run that drives it over environments.

One episode: ``reset(seed, task_id)`` gives the opening messages and, in ``info.tools``, the
tools the model may call; then model turn, ``step``, model turn, ``step``... until the
environment says the episode is over (or the turn budget of the spec runs out). Tool calls
go to the model in OpenAI form and come back as the assistant message's ``tool_calls``; the
environment's tool results are appended to the chat as it returned them.

Episode reward is the sum of the step rewards and each component the sum of that
component over the steps (single-turn: the one verdict). Episode status is the status of
the last step; a model that could not answer (endpoint down) is ``infra_error``. Only the
machinery's failures (:data:`ENV_FAILURES`, a model's ``ModelError``) become an episode's
status; any other exception is a bug, and it stops the run.

Each environment's episodes run ``concurrency`` at a time: every worker owns one environment
instance (an instance holds one episode at a time) and takes episodes from a shared queue.
Finished episodes are appended to ``episodes.jsonl`` at once, so Ctrl-C loses only the
episodes in flight, and ``--resume`` skips every episode already recorded.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..core import Env
from ..engines.types import Generation, SamplingParams
from ..errors import EnvhubError, EpisodeError, NotSupported, TransportError, status_for
from ..types import Message, ResetResult, Status, StepResult
from .backends import ContextExhausted, ModelBackend, ModelError
from .metrics import is_passed, summarize
from .store import EpisodeRecord, EvalConfig, RunStore

EnvFactory = Callable[[str], Env]
"""Builds a fresh environment instance from its catalog name."""


class ProgressSink(Protocol):
    """Where the run reports progress (the CLI draws bars; tests may ignore it)."""

    def start(self, env: str, total: int, done: int) -> None:
        """An environment starts: ``total`` episodes, ``done`` of them already recorded."""

    def advance(self, env: str, record: EpisodeRecord) -> None:
        """One episode finished."""


class _NoProgress:
    def start(self, env: str, total: int, done: int) -> None:
        pass

    def advance(self, env: str, record: EpisodeRecord) -> None:
        pass


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to run: which task, which sample, which seed."""

    env: str
    env_version: int
    split: str | None
    task_id: str
    sample: int
    seed: int
    primary: str
    max_turns: int


def record_step(rec: EpisodeRecord, step: StepResult) -> bool:
    """Add one step's reward, components and status to ``rec``; True when the episode ended.

    Episode reward is the sum of step rewards, each component the sum over the steps, and the
    status that of the last step (shared by the episode loop and ``--rescore``'s replay).
    """
    rec.add_step(step)
    if step.done:
        rec.terminated, rec.truncated = step.terminated, step.truncated
        return True
    if step.info.status is Status.INVALID_ACTION:
        rec.invalid_actions += 1
    return False


def episode_seed(base: int, env: str, task_id: str, sample: int) -> int:
    """A stable per-episode seed: the same run settings replay the same episodes."""
    return (zlib.crc32(f"{env}/{task_id}/{sample}".encode()) + base) % (2**31)


def turn_seed(seed: int, turn: int) -> int:
    """The sampling seed of an episode's model turn ``turn`` (0 first), sent with its request.

    The first turn's is the episode's seed; each later turn has its own, so it does not
    replay the first turn's random draws on a longer prompt.
    """
    return seed if turn == 0 else (seed + 1_000_003 * turn) % (2**31)


def sibling(env: Env, make_env: EnvFactory, name: str) -> Env:
    """Another instance of ``env`` for a concurrent episode.

    A fork shares the connection pool and the server (HTTP and Docker runners: never one
    server per episode); a local environment gets a fresh instance.
    """
    try:
        return env.fork()
    except NotSupported:
        return make_env(name)


ENV_FAILURES: tuple[type[Exception], ...] = (EnvhubError, OSError)
"""What an environment call may raise that becomes the episode's status, not a crash.

envhub's own errors (a remote env's :class:`~envhub.errors.TransportError`, an episode
error, a task the environment lacks) and OS errors (sockets, pipes, time-outs): the
machinery failing, recorded by :func:`_failure_status`. Anything else (a ``KeyError``, a
``TypeError``) is a bug, the evaluator's or an environment's outside its episode boundary
(:meth:`envhub.core.TaskEnv.step` already turns what its hooks raise into a status): it
raises and stops the run, rather than hiding as excluded ``env_error`` episodes.
"""


def _failure_status(exc: BaseException) -> Status:
    """The status of an episode whose environment call raised ``exc`` (one of ENV_FAILURES).

    An :class:`~envhub.errors.EpisodeError` keeps the status it declares. Outside the
    environment's own boundary, a transport, model or OS error (a raw ``TimeoutError``
    included: a socket's wait) is the wire's, ``infra_error``, retried on ``--resume``; any
    other envhub error (a task the environment lacks) is ``env_error`` (see
    :func:`envhub.errors.status_for`).
    """
    if isinstance(exc, (TransportError, ModelError, OSError)) and not isinstance(exc, EpisodeError):
        return Status.INFRA_ERROR
    return status_for(exc)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _finish(env: Env, rec: EpisodeRecord) -> None:
    """End an episode the loop stops itself, with the environment's final accounting."""
    rec.truncated = True
    try:
        step = await env.afinish()
    except NotSupported:  # an Env without finish(): nothing more to pay
        return
    except ENV_FAILURES as e:  # a remote env that failed: data, not a crash
        rec.status, rec.error = _failure_status(e), _describe(e)
        return
    record_step(rec, step)


async def _out_of_context(env: Env, rec: EpisodeRecord, err: ContextExhausted) -> None:
    """End an episode whose conversation outgrew the model's context.

    After the model's own turns that is the episode's length, as the trainer's token budget:
    truncated, with the environment's final accounting. An opening prompt that cannot fit is
    the environment's (nothing the model wrote): ``env_error``.
    """
    if rec.turns == 0:
        rec.status, rec.truncated = Status.ENV_ERROR, True
        rec.error = f"the opening prompt does not fit the model: {err}"
        return
    await _finish(env, rec)


async def _generate(
    env: Env,
    model: ModelBackend,
    rec: EpisodeRecord,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    params: SamplingParams,
    seed: int,
) -> Generation | None:
    """The model's next turn, or None with the episode ended (by its context, or an error)."""
    try:
        return await model.generate(messages, tools=tools, params=params, seed=seed)
    except ContextExhausted as e:
        await _out_of_context(env, rec, e)
    except ModelError as e:
        rec.status, rec.error, rec.truncated = Status.INFRA_ERROR, f"model: {e}", True
    return None


def new_record(job: EpisodeJob, model: str) -> EpisodeRecord:
    """The record of ``job``'s episode, before it starts."""
    return EpisodeRecord(
        env=job.env,
        env_version=job.env_version,
        split=job.split,
        task_id=job.task_id,
        sample=job.sample,
        seed=job.seed,
        model=model,
    )


async def start_episode(
    env: Env, rec: EpisodeRecord, job: EpisodeJob, t0: float
) -> ResetResult | None:
    """Reset ``env`` for ``job``; None (the failure recorded in ``rec``) if it failed."""
    try:
        return await env.areset(seed=job.seed, task_id=job.task_id)
    except ENV_FAILURES as e:
        rec.status, rec.error = _failure_status(e), f"reset: {_describe(e)}"
        rec.truncated = True
        rec.wall_s = time.perf_counter() - t0
        return None


async def run_episode(
    env: Env,
    model: ModelBackend,
    job: EpisodeJob,
    params: SamplingParams,
    *,
    pass_threshold: float = 1.0,
) -> EpisodeRecord:
    """Play one episode to its end and return its record; failures become its status."""
    t0 = time.perf_counter()
    rec = new_record(job, model.name)
    reset = await start_episode(env, rec, job, t0)
    if reset is None:
        return rec
    messages: list[Message] = list(reset.messages)
    tools = reset.info.tools
    prompt_tokens: list[int] = []
    completion_tokens: list[int] = []
    while True:
        if rec.turns >= job.max_turns:  # the env should have ended it: a guard, not a rule
            await _finish(env, rec)
            break
        seed = turn_seed(job.seed, rec.turns)
        gen = await _generate(env, model, rec, messages, tools, params, seed)
        if gen is None:
            break
        messages.append(gen.message)
        rec.turns += 1
        rec.capped_turns += gen.finish_reason == "length"
        if gen.prompt_tokens is not None:
            prompt_tokens.append(gen.prompt_tokens)
        if gen.completion_tokens is not None:
            completion_tokens.append(gen.completion_tokens)
        try:
            step = await env.astep(gen.message)
        except ENV_FAILURES as e:  # a remote env that failed: data, not a crash
            rec.status, rec.error, rec.truncated = _failure_status(e), _describe(e), True
            break
        messages.extend(step.messages)
        if record_step(rec, step):
            break
    rec.messages = messages
    rec.prompt_tokens = sum(prompt_tokens) if prompt_tokens else None
    rec.completion_tokens = sum(completion_tokens) if completion_tokens else None
    rec.passed = is_passed(rec.status, rec.reward, rec.components, job.primary, pass_threshold)
    rec.wall_s = round(time.perf_counter() - t0, 4)
    return rec


async def run_jobs(
    jobs: list[Any],
    make_env: Callable[[], Env],
    work: Callable[[Env, Any], Any],
    on_done: Callable[[Any], None],
    *,
    concurrency: int,
    first_env: Env | None = None,
) -> None:
    """Run ``work(env, job)`` over ``jobs`` with ``concurrency`` workers, one env each.

    Every worker's environment is built (in threads, together) before the first episode
    starts, so the first model requests arrive together: a local engine then sees one full
    batch instead of a trickle. Environments are closed at the end, or on cancellation.
    """
    n = max(1, min(concurrency, len(jobs)))
    if not jobs:
        return
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    envs: list[Env] = [first_env] if first_env is not None else []
    built = asyncio.gather(*(asyncio.to_thread(make_env) for _ in range(n - len(envs))))
    try:
        envs.extend(await built)

        async def worker(env: Env) -> None:
            while not queue.empty():
                job = queue.get_nowait()
                on_done(await work(env, job))

        await asyncio.gather(*(worker(env) for env in envs))
    finally:
        if not built.done():  # cancelled while building: close what got built
            built.cancel()
        for env in envs:
            if env is not first_env:
                await asyncio.to_thread(env.close)


class Evaluation:
    """One evaluation run: every environment of the config, recorded into a run directory.

    Args:
        config: What to evaluate.
        model: The model backend (its ``name`` is recorded in every episode).
        store: The run directory; episodes already in it are skipped (resume).
        make_env: Builds an environment from its name (``envhub.make`` by default).
        progress: Receives progress events.
    """

    def __init__(
        self,
        config: EvalConfig,
        model: ModelBackend,
        store: RunStore,
        make_env: EnvFactory,
        progress: ProgressSink | None = None,
    ) -> None:
        """Prepare the run; nothing is generated until :meth:`run`."""
        self.config = config
        self.model = model
        self.store = store
        self.make_env = make_env
        self.progress = progress or _NoProgress()
        self.params = SamplingParams(temperature=config.temperature, max_tokens=config.max_tokens)
        self.wall: dict[str, float] = {}
        self._started: dict[str, float] = {}
        self._prior_wall = self._previous_wall()

    def _previous_wall(self) -> dict[str, float]:
        try:
            envs = self.store.read_summary().get("environments", {})
        except (OSError, ValueError):
            return {}
        return {name: float(s.get("wall_s") or 0.0) for name, s in envs.items()}

    async def run(self) -> dict[str, Any]:
        """Evaluate every environment in turn, then write and return the summary."""
        resolve = getattr(self.model, "resolve_name", None)
        if resolve is not None:  # the endpoint's model id goes into every record
            await resolve()
        self.store.write_config(self.config)
        kept = self._compact()
        done = {r.key for r in kept}
        try:
            for name in self.config.envs:
                await self._run_env(name, done)
        finally:
            for name, t0 in self._started.items():
                if name not in self.wall:
                    self.wall[name] = time.perf_counter() - t0
        return self.finish(interrupted=False)

    def _compact(self) -> list[EpisodeRecord]:
        """Drop infra-error episodes (retried on resume) and duplicates; keep the rest."""
        latest: dict[tuple[str, str, int], EpisodeRecord] = {}
        for r in self.store.load_records():
            latest[r.key] = r
        kept = [r for r in latest.values() if r.status is not Status.INFRA_ERROR]
        if self.store.episodes_path.exists():
            self.store.rewrite(kept)
        return kept

    async def _run_env(self, name: str, done: set[tuple[str, str, int]]) -> None:
        probe = await asyncio.to_thread(self.make_env, name)
        try:
            tasks = await asyncio.to_thread(probe.tasks, self.config.split)
            tasks = list(tasks)[: self.config.limit] if self.config.limit else list(tasks)
            spec = probe.spec
            primary = probe.primary_component
            all_jobs = [
                EpisodeJob(
                    env=name,
                    env_version=spec.version,
                    split=self.config.split or spec.split,
                    task_id=t.task_id,
                    sample=s,
                    seed=episode_seed(self.config.seed, name, t.task_id, s),
                    primary=primary,
                    max_turns=max(1, spec.max_turns),
                )
                for t in tasks
                for s in range(self.config.n)
            ]
            jobs = [j for j in all_jobs if (j.env, j.task_id, j.sample) not in done]
            self.progress.start(name, len(all_jobs), len(all_jobs) - len(jobs))
            self._started[name] = time.perf_counter()

            def on_done(rec: EpisodeRecord) -> None:
                self.store.append(rec)
                self.progress.advance(name, rec)

            await run_jobs(
                jobs,
                lambda: sibling(probe, self.make_env, name),
                self.episode,
                on_done,
                concurrency=self.config.concurrency,
                first_env=probe,
            )
            self.wall[name] = time.perf_counter() - self._started[name]
        finally:
            await asyncio.to_thread(probe.close)

    async def episode(self, env: Env, job: EpisodeJob) -> EpisodeRecord:
        """Play one episode of the run (the model's turns against ``env``)."""
        return await run_episode(
            env, self.model, job, self.params, pass_threshold=self.config.pass_threshold
        )

    def finish(self, *, interrupted: bool) -> dict[str, Any]:
        """Summarise what is recorded, write ``summary.json`` and return it."""
        now = time.perf_counter()
        wall = {n: self.wall.get(n, now - t0) for n, t0 in self._started.items()}
        for name, prior in self._prior_wall.items():
            wall[name] = wall.get(name, 0.0) + prior
        self.store.close()
        summary = {
            "model": self.model.name or self.config.model,
            "interrupted": interrupted,
            "config": self.config.model_dump(),
            "environments": summarize(
                self.store.load_records(), k=self.config.n, wall=wall, order=self.config.envs
            ),
        }
        self.store.write_summary(summary)
        return summary
