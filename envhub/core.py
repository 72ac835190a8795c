"""The environment contract (:class:`Env`) and the dataset-backed base most envs build on.

An episode is a chat. ``reset`` picks a task and returns the opening messages (system and
user). Each ``step`` takes one assistant message and returns the environment's answer (tool
results, game feedback, or nothing), a reward, ``terminated``, ``truncated`` and an
:class:`~envhub.types.Info` holding the reward broken down by component and a ``status``.

Why a status and not just a reward: a sandbox that failed to start, a container that died or
a gold answer that cannot be parsed must never look like a model that answered wrongly.
Anything raised inside an environment's hooks is caught at one boundary (:meth:`TaskEnv.step`,
:meth:`TaskEnv.finish`, :meth:`TaskEnv.verify`) and becomes the episode's status; the process
serving it lives on.

What the status is, :func:`~envhub.errors.status_for` says: a declared
:class:`~envhub.errors.EpisodeError` carries its own (``invalid_action`` and ``timeout`` are
the model's, scored as a truncation; ``env_error`` and ``infra_error`` the machinery's, never
paid); anything undeclared is ``env_error``. A raw :class:`TimeoutError` escaping a hook is
undeclared too, so ``env_error``: it tells that a wait ran out, not whose, and the model's
``timeout`` is only what a deadline on the model's work raises (the step's own deadline,
:data:`STEP_TIMEOUT_S`, and an environment's :class:`~envhub.errors.VerifierTimeout`).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from . import datasets
from .deadline import DeadlineExceeded, await_within, call_within
from .errors import (
    ConfigError,
    EnvhubError,
    EpisodeError,
    EpisodeStateError,
    GoldAnswerError,
    NotSupported,
    TaskNotFound,
    VerifierTimeout,
    status_for,
)
from .rewards import Rubric
from .spec import EnvSpec, Knob, fill_template
from .types import Info, Message, ResetResult, Score, Status, StepResult, Task

log = logging.getLogger("envhub")
_SURROGATE = re.compile("[\ud800-\udfff]")

MAX_MESSAGE_CHARS = 256_000
"""Longest assistant message a step or a verification reads (text plus tool-call fields).

About 64k tokens: more than any turn a model is sampled for, and small enough that every
parser behind it answers in milliseconds. A longer message is the model's ``invalid_action``.
"""
STEP_TIMEOUT_S = 45.0
"""Deadline of one in-process step; past it the step's status is ``timeout``.

Above every environment's own deadlines (a program's 20 s, a query's 2 + 10 s) and below the
HTTP client's default of 60 s, so a step that overruns is the model's ``timeout`` on every
runner, never a client's ``infra_error``.
"""


class Env(ABC):
    """A multi-turn chat environment. Runners (in-process, HTTP, Docker) all implement this.

    Use as a context manager, or call :meth:`close` when done. The ``a``-prefixed methods are
    the async forms; in-process environments run the sync ones in a thread.

    What a caller may rely on, on every runner (no probing with ``getattr``/``hasattr``):

    Attributes:
        spec: The validated catalog entry (name, version, dataset, reward weights, turns).
        primary_component: The reward component that says a task was solved (``correctness``,
            ``solved``, ``win``): pass@k counts it, and the checker requires 1.0 on gold.
        knobs: The difficulty knobs (:meth:`difficulty_knobs`), and ``task_difficulty``
            what each task's ``metadata["difficulty"]`` holds.

    Methods with honest defaults: :meth:`tools` (none), :meth:`tasks` and :meth:`get_task`
    (``NotSupported`` where the environment does not list tasks), :meth:`opening_messages`,
    :meth:`verify`, :meth:`finish` and :meth:`fork` (``NotSupported`` where unavailable).
    """

    spec: EnvSpec
    primary_component: str = "correctness"
    knobs: ClassVar[tuple[Knob, ...]] = ()
    """The environment's difficulty knobs (see :meth:`difficulty_knobs`); none by default."""
    task_difficulty: ClassVar[str] = ""
    """What each task's ``metadata["difficulty"]`` holds, the key a curriculum buckets on
    (``rollout.curriculum.by: difficulty``); empty where the tasks carry none."""
    async_steps: ClassVar[bool] = False
    """Its :meth:`areset` and :meth:`astep` are native coroutines that await their I/O (a
    remote API, a judge, a sandbox in another process): a server awaits them on its event
    loop, holding no thread while they wait, and a blocking environment (the default) runs on
    the server's worker threads. :class:`TaskEnv` sets it for a subclass that writes
    :meth:`TaskEnv.aenv_response` or :meth:`TaskEnv.ainit_state`."""
    inline_steps: ClassVar[bool] = False
    """Its :meth:`reset` and :meth:`step` are pure Python, bounded and fast (well under a
    millisecond, no I/O, no parser a long message can slow down): a server runs them on its
    event loop, without a hand-off to a worker thread, while each stays within the server's
    budget (``inline_budget_ms``; a call over it, three times, sends the environment back to
    the worker threads). A :class:`TaskEnv` that sets it runs its hooks without the step's
    deadline thread (:attr:`TaskEnv.step_timeout_s` is not enforced on them)."""

    @classmethod
    def difficulty_knobs(cls, spec: EnvSpec) -> tuple[Knob, ...]:
        """The settings that make this environment's tasks easier or harder.

        Declared as class data (:attr:`knobs`) so ``envhub info`` lists them without making
        the environment; an environment whose knobs depend on its entry (one class serving
        many generators) overrides this. Values outside them are refused by the environment
        with a :class:`~envhub.errors.ConfigError` naming the knob and what it allows.
        """
        return cls.knobs

    @abstractmethod
    def reset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """Start an episode on the task ``task_id``, or on one drawn with ``seed``.

        The same seed always gives the same task (and, for procedural envs, the same level).

        Returns:
            The opening messages (system and user) and an :class:`~envhub.types.Info` with the
            task id; ``info.tools`` lists the tools offered for the episode, if any.

        Raises:
            TaskNotFound: ``task_id`` names no task of the environment.
            TransportError: A remote environment could not be reached.
        """

    @abstractmethod
    def step(self, action: Message | str) -> StepResult:
        """Answer one assistant message (a :class:`Message` or its text).

        Returns:
            The environment's answer, the step's reward, ``terminated``/``truncated`` and an
            info with the reward by component and a ``status``. Whatever the message holds,
            a step returns: a model's fault is its status (``invalid_action``, ``timeout``),
            a machinery failure ``env_error``/``infra_error``, never an exception.

        Raises:
            EpisodeStateError: No episode is running (before ``reset``, or after its end).
            ValueError: ``action`` is not an assistant message (the caller's mistake).
        """

    def finish(self) -> StepResult:
        """End the running episode from outside and pay its final accounting.

        For the caller that stops an episode itself (a trainer's token or turn budget, an
        evaluator's guard): the result is that of a truncation (``truncated=True``), with
        the end-of-episode components, penalties included, that the last step would have
        paid (see :mod:`envhub.rewards`). Its reward adds to the episode's return like a
        step's.

        Returns:
            A step result with ``truncated=True`` and the final accounting.

        Raises:
            EpisodeStateError: No episode is running (before ``reset``, or after its end).
            NotSupported: The environment cannot end an episode early.
        """
        raise NotSupported(f"{type(self).__name__} cannot end an episode from outside")

    def verify(self, task: Task | str, response: Message | str) -> Score:
        """Score one response to one task without an episode (single-turn environments).

        Returns:
            The reward, its components and a status (as a step's: never an exception for
            anything the response holds).

        Raises:
            TaskNotFound: ``task`` is an id the environment does not have.
            NotSupported: The environment is multi-turn and does not verify statelessly.
        """
        raise NotSupported(f"{self.spec.name} does not offer stateless verification")

    def verify_batch(self, items: Sequence[tuple[Task | str, Message | str]]) -> list[Score]:
        """Verify many ``(task, response)`` pairs; one bad pair never spoils the others."""
        return [self.verify(task, response) for task, response in items]

    def tasks(self, split: str | None = None) -> Sequence[Task]:
        """The tasks of ``split`` (the spec's split by default)."""
        raise NotSupported(f"{self.spec.name} does not list its tasks")

    def get_task(self, task_id: str, split: str | None = None) -> Task:
        """The task with this id, searched in ``split`` (the spec's by default).

        Raises:
            TaskNotFound: No task has this id.
            NotSupported: The environment does not list its tasks.
        """
        for task in self.tasks(split):
            if task.task_id == task_id:
                return task
        raise TaskNotFound(f"{self.spec.name} has no task {task_id!r}")

    def opening_messages(self, task: Task) -> list[Message]:
        """The messages an episode on ``task`` opens with (system prompt and the task)."""
        raise NotSupported(f"{self.spec.name} does not render its opening messages")

    def tools(self) -> list[dict[str, Any]]:
        """JSON-schema tool definitions offered to the model (OpenAI convention); none here."""
        return []

    def task_from_gold(self, gold: str) -> Task:
        """Build an ad-hoc task from a gold answer alone (``envhub verify --gold``).

        The gold is the caller's input here, not the environment's data: one the environment
        cannot read is refused now, by type, rather than verified into an ``env_error``.

        Raises:
            GoldAnswerError: The environment cannot read ``gold`` (the message says why).
            NotSupported: The environment needs a whole task (tests, a database, a level).
        """
        raise NotSupported(
            f"{self.spec.name} needs a whole task, not just a gold answer: use --task-id"
        )

    def info(self) -> dict[str, Any]:
        """Describe the environment (served at ``/info`` as :class:`~envhub.wire.EnvInfo`)."""
        return {
            "name": self.spec.name,
            "version": self.spec.version,
            "id": self.spec.id,
            "primary_component": self.primary_component,
            "tools": self.tools(),
        }

    def fork(self) -> Env:
        """Another handle on the same environment with its own episode.

        Forks share what is expensive (loaded tasks, connection pools), so running N
        concurrent episodes costs N cheap forks, not N environments.
        """
        raise NotSupported(f"{type(self).__name__} cannot fork; make() another instance")

    def close(self) -> None:  # noqa: B027 (optional hook, not abstract)
        """Release resources (servers, containers, sandboxes). Safe to call twice."""

    async def areset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """Async :meth:`reset` (the sync one on a thread; native where :attr:`async_steps`)."""
        return await asyncio.to_thread(self.reset, seed=seed, task_id=task_id)

    async def astep(self, action: Message | str) -> StepResult:
        """Async :meth:`step` (here: the sync one on a thread; native where :attr:`async_steps`)."""
        return await asyncio.to_thread(self.step, action)

    async def averify(self, task: Task | str, response: Message | str) -> Score:
        """Async :meth:`verify`."""
        return await asyncio.to_thread(self.verify, task, response)

    async def afinish(self) -> StepResult:
        """Async :meth:`finish`."""
        return await asyncio.to_thread(self.finish)

    def __enter__(self) -> Env:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec.id}>"


@dataclass
class Feedback:
    """What an environment hook answers to one assistant message."""

    messages: list[Message] = field(default_factory=list)
    """The environment's reply (tool results, feedback)."""
    done: bool = False
    """The episode reached its natural end."""
    components: dict[str, float] | None = None
    """Raw reward components earned by this step; ``None`` for no reward this step."""
    status: Status = Status.OK
    """Non-``ok`` flags the step (e.g. ``invalid_action``) while the episode goes on."""
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    """Extra keys for the step's info (a board, the extracted answer)."""


@dataclass
class Episode:
    """The state of one running episode."""

    task: Task
    seed: int | None
    rng: random.Random
    messages: list[Message]
    turn: int = 0
    done: bool = False
    state: Any = None
    """Environment-specific state, made by :meth:`TaskEnv.init_state`."""
    paid: dict[str, float] = field(default_factory=dict)
    """Generic counters (``length``) paid so far, so each step pays only what grew."""


class TaskEnv(Env):
    """A dataset-backed environment: tasks, a prompt template, a rubric and turn hooks.

    Subclasses set :attr:`components` and implement :meth:`score` (single-turn) or
    :meth:`env_response` (multi-turn); optionally :meth:`builtin_tasks` for offline data.
    """

    components: ClassVar[frozenset[str]] = frozenset()
    """Reward components this environment computes."""
    counters: ClassVar[frozenset[str]] = frozenset()
    """Components that tally the episode (counts, unbounded); the others lie in [0, 1]. A
    truncated episode pays counters as measured and outcomes at their worst."""
    max_message_chars: ClassVar[int] = MAX_MESSAGE_CHARS
    """Longest message accepted; see :data:`MAX_MESSAGE_CHARS`."""
    step_timeout_s: ClassVar[float | None] = STEP_TIMEOUT_S
    """Deadline of :meth:`step` (``None``: no deadline); see :data:`STEP_TIMEOUT_S`."""
    async_hooks: ClassVar[frozenset[str]] = frozenset({"aenv_response", "ainit_state"})
    """The hooks whose writing makes a subclass's steps native async (:attr:`Env.async_steps`)."""
    sync_hooks: ClassVar[bool] = False
    """Where :attr:`~Env.async_steps`: the class writes its sync hooks too (:meth:`init_state`,
    :meth:`env_response`, doing what the async ones do, blocking), and the sync API
    (:meth:`reset`, :meth:`step`) calls them, as for a blocking environment, instead of running
    the async hooks on an event loop of its own per call. For an episode that holds a
    connection bound to the loop that opened it (a WebSocket), and for sync callers that run a
    loop themselves (a notebook)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass that writes an async hook has native async steps (:attr:`async_steps`)."""
        super().__init_subclass__(**kwargs)
        if "async_steps" not in vars(cls) and cls.async_hooks & set(vars(cls)):
            cls.async_steps = True

    def __init__(self, spec: EnvSpec, **options: Any) -> None:
        """Build from a validated spec; ``options`` are the spec's environment options.

        Subclasses that take options declare them as keyword parameters of their own
        ``__init__``; an environment without options rejects any, so a typo in YAML is an
        error and not silently ignored.
        """
        if options and type(self).__init__ is TaskEnv.__init__:
            raise ConfigError(
                f"{spec.name} takes no options, got {sorted(options)}; check 'options' in YAML"
            )
        self.spec = spec
        self.options = options
        self.rubric = Rubric(
            weights=spec.reward.weights or {self.primary_component: 1.0},
            length_limit=spec.reward.length_limit,
            offered=self.components,
            counters=self.counters,
        )
        self._tasks: dict[str, list[Task]] = {}
        self._index: dict[str, dict[str, Task]] = {}
        self._episode: Episode | None = None
        self._rng: random.Random | None = random.Random()

    def fork(self) -> TaskEnv:
        """A copy sharing tasks and configuration, with its own episode and RNG."""
        clone = copy.copy(self)
        clone._episode = None
        clone._rng = None  # made at its first unseeded reset: seeding from the OS costs more
        return clone

    def warmup(self) -> None:
        """Load data and start helpers now, so the first request is not the slow one."""
        self.tasks()

    # ------------------------------------------------------------------ data

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """Offline tasks of ``split`` (packaged or generated). Override to provide them."""
        raise ConfigError(f"{self.spec.name} has no builtin dataset; set dataset.kind/path")

    def row_to_task(self, row: dict[str, Any], index: int, split: str) -> Task:
        """Turn one dataset row into a task; the spec's ``dataset.fields`` renames columns."""
        return datasets.row_to_task(row, index, split, self.spec.dataset.fields)

    def tasks(self, split: str | None = None) -> list[Task]:
        """The tasks of ``split``, loaded once and cached."""
        split = split or self.spec.split
        if split not in self._tasks:
            ds = self.spec.dataset
            try:
                if ds.kind == "builtin":
                    tasks = self.builtin_tasks(split, ds.size, ds.seed)
                else:
                    rows = datasets.load_rows(ds, split, self.spec.source_dir)
                    tasks = [self.row_to_task(r, i, split) for i, r in enumerate(rows)]
            except EnvhubError:
                raise
            except (ValueError, KeyError, OSError) as e:  # a split the data lacks, a bad file
                raise ConfigError(f"{self.spec.name}: cannot load split {split!r}: {e}") from e
            if not tasks:
                raise ConfigError(f"{self.spec.name}: split {split!r} has no tasks")
            self._tasks[split] = tasks
            self._index[split] = {t.task_id: t for t in tasks}
        return self._tasks[split]

    def get_task(self, task_id: str, split: str | None = None) -> Task:
        """The task with this id, searched in ``split`` then in every loaded split."""
        self.tasks(split)
        for index in (self._index[split or self.spec.split], *self._index.values()):
            if task_id in index:
                return index[task_id]
        unsearched = []
        for other in ("train", "test"):
            try:
                self.tasks(other)
            except EnvhubError as e:  # a split the dataset lacks, or data that did not load
                unsearched.append(f"split {other!r} not searched: {e}")
                continue
            if task_id in self._index[other]:
                return self._index[other][task_id]
        examples = ", ".join(list(self._index[split or self.spec.split])[:3])
        note = "".join(f"; {u}" for u in unsearched)
        raise TaskNotFound(
            f"{self.spec.name} has no task {task_id!r} (ids look like {examples}){note}"
        )

    def task_from_gold(self, gold: str) -> Task:
        """An ad-hoc task whose gold answer is ``gold``; a blank gold is refused.

        Raises:
            GoldAnswerError: ``gold`` is empty or blank. Environments that parse their gold
                answers refuse here too the ones they cannot read (see :meth:`Env.task_from_gold`).
        """
        if not gold.strip():
            raise GoldAnswerError("the gold answer is empty; give the answer to check against")
        return Task(task_id="adhoc", prompt="", answer=gold)

    # ------------------------------------------------------------------ prompts

    def opening_messages(self, task: Task) -> list[Message]:
        """System prompt (if any) and the task rendered through the prompt template."""
        msgs = []
        if self.spec.system_prompt:
            msgs.append(Message(role="system", content=self.spec.system_prompt))
        fields = {"prompt": task.prompt, **task.metadata}
        where = f"{self.spec.name}: prompt_template"
        text = fill_template(self.spec.prompt_template, fields, where, f"task {task.task_id!r}")
        msgs.append(Message(role="user", content=text))
        return msgs

    # ------------------------------------------------------------------ hooks

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Raw reward components and details for one response. Single-turn envs override."""
        raise NotSupported(f"{self.spec.name} does not offer stateless verification")

    def init_state(self, episode: Episode) -> Any:
        """Environment-specific state of a new episode (a board, a database handle)."""
        return None

    async def ainit_state(self, episode: Episode) -> Any:
        """:meth:`init_state` for an environment whose set-up awaits I/O (see :meth:`areset`)."""
        return self.init_state(episode)

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """React to one assistant message. The default judges it once and ends the episode."""
        components, details = self.score(episode.task, message)
        return Feedback(done=True, components=components, info=details)

    async def aenv_response(self, episode: Episode, message: Message) -> Feedback:
        """:meth:`env_response` for an environment whose answer awaits I/O.

        Write this instead of :meth:`env_response` when a step waits on something outside the
        process (an HTTP API, a judge, a remote sandbox): await it here, and the step holds no
        thread while it waits (:attr:`Env.async_steps`). Never block in it (no ``time.sleep``,
        no sync HTTP client): it runs on the server's event loop, beside every other episode.
        The step's deadline (:attr:`step_timeout_s`) holds as for the sync hook: past it, the
        hook is cancelled and the step is the model's ``timeout``.
        """
        return self.env_response(episode, message)

    def reference_action(self, episode: Episode) -> Message | None:
        """A message that earns full marks from here: the gold answer, or a solver's move.

        :func:`envhub.authoring.checker.check_env` plays it to prove the verifier on gold; return
        ``None`` where the environment has no reference.
        """
        return None

    def on_truncate(self, episode: Episode) -> dict[str, float]:
        """What the environment measured when the episode is cut short (turn budget, finish).

        Only the :attr:`counters` among them are paid; every outcome component is paid at its
        worst (see :mod:`envhub.rewards`). The rest is reported in ``info.measured``.
        """
        return {}

    # ------------------------------------------------------------------ the contract

    def info(self) -> dict[str, Any]:
        """Name, version, components and weights, turn budget and tools."""
        return {
            **super().info(),
            "family": self.spec.family,
            "description": self.spec.description,
            "components": sorted(self.components),
            "weights": dict(self.spec.reward.weights),
            "max_turns": self.spec.max_turns,
            "split": self.spec.split,
        }

    def reset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """Start an episode; see :meth:`Env.reset`."""
        ep = self._draw(seed, task_id)
        if self._own_loop:  # its set-up may await: on a loop of this call's own
            _no_running_loop(type(self).__name__)
            ep.state = asyncio.run(self.ainit_state(ep))
        else:
            ep.state = self.init_state(ep)
        return self._opened(ep)

    async def areset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """:meth:`reset`, awaiting :meth:`ainit_state` where :attr:`async_steps` (else a thread)."""
        if not self.async_steps:
            return await super().areset(seed=seed, task_id=task_id)
        ep = self._draw(seed, task_id)
        ep.state = await self.ainit_state(ep)
        return self._opened(ep)

    @property
    def _own_loop(self) -> bool:
        """Whether the sync API runs the async hooks, on an event loop of each call's own."""
        return self.async_steps and not self.sync_hooks

    def _draw(self, seed: int | None, task_id: str | None) -> Episode:
        """A new episode on ``task_id`` or on a task drawn with ``seed``, its state not made."""
        tasks = self.tasks()
        if task_id is not None:
            task = self.get_task(task_id)
        else:
            if seed is None and self._rng is None:
                self._rng = random.Random()
            pick = random.Random(seed) if seed is not None else self._rng
            task = tasks[pick.randrange(len(tasks))]
        ep = Episode(task=task, seed=seed, rng=random.Random(seed), messages=[])
        ep.messages = self.opening_messages(task)
        return ep

    def _opened(self, ep: Episode) -> ResetResult:
        self._episode = ep
        extra = {"tools": self.tools()} if self.tools() else {}
        return ResetResult(messages=list(ep.messages), info=Info(task_id=ep.task.task_id, **extra))

    def step(self, action: Message | str) -> StepResult:
        """Answer one assistant message; see :meth:`Env.step`.

        Where :attr:`async_steps`, the async hook runs on an event loop of this call's own
        (so the environment works in-process too; not where :attr:`sync_hooks`: the sync hook
        runs); from async code, await :meth:`astep`.
        """
        if self._own_loop:
            _no_running_loop(type(self).__name__)
        ep, message = self._begin(action)
        try:
            too_long = self._too_long(message)
            fb = self._refuse(too_long) if too_long else self._respond(ep, message)
            result = self._result(ep, message, fb)
        except Exception as exc:  # noqa: BLE001 (the episode boundary: a bad rollout is data)
            result = self._failed(ep, exc)
        return self._record(ep, result)

    async def astep(self, action: Message | str) -> StepResult:
        """:meth:`step`, awaiting :meth:`aenv_response` if :attr:`async_steps` (else a thread)."""
        if not self.async_steps:
            return await super().astep(action)
        ep, message = self._begin(action)
        try:
            too_long = self._too_long(message)
            fb = self._refuse(too_long) if too_long else await self._arespond(ep, message)
            result = self._result(ep, message, fb)
        except Exception as exc:  # noqa: BLE001 (the episode boundary, as in step())
            result = self._failed(ep, exc)
        return self._record(ep, result)

    def _begin(self, action: Message | str) -> tuple[Episode, Message]:
        """The running episode and the step's message, counted in it (the caller's errors raise)."""
        ep = self._episode
        if ep is None:
            raise EpisodeStateError("call reset() before step()")
        if ep.done:
            raise EpisodeStateError("the episode is over; call reset() to start another")
        message = valid_unicode(Message.coerce(action))
        if message.role != "assistant":
            raise ValueError(f"step() takes an assistant message, got role {message.role!r}")
        ep.turn += 1
        ep.messages.append(message)
        return ep, message

    @staticmethod
    def _record(ep: Episode, result: StepResult) -> StepResult:
        ep.messages.extend(result.messages)
        ep.done = result.done
        return result

    def _too_long(self, message: Message) -> str | None:
        """Why ``message`` is over :attr:`max_message_chars`, or ``None`` when it is not."""
        size = message_chars(message)
        if size <= self.max_message_chars:
            return None
        return (
            f"the message is {size} characters long, over the {self.max_message_chars} "
            "this environment reads; answer in a shorter message"
        )

    @staticmethod
    def _refuse(error: str) -> Feedback:
        return Feedback(
            messages=[Message(role="user", content=f"Invalid message: {error}")],
            status=Status.INVALID_ACTION,
            error=error,
        )

    def _respond(self, ep: Episode, message: Message) -> Feedback:
        """:meth:`env_response` under :attr:`step_timeout_s`; past it, :class:`VerifierTimeout`.

        The hook runs on a worker thread (:mod:`envhub.deadline`), so the deadline holds
        whatever the hook does; a hook that overruns is abandoned (its episode ends) and
        finishes in the background.
        """
        if self._own_loop:
            return asyncio.run(self._arespond(ep, message))
        if self.step_timeout_s is None or self.inline_steps:
            return self.env_response(ep, message)
        try:
            return call_within(lambda: self.env_response(ep, message), self.step_timeout_s)
        except DeadlineExceeded as e:
            raise VerifierTimeout(
                f"the step ran past its {self.step_timeout_s:g} s deadline and was abandoned"
            ) from e

    async def _arespond(self, ep: Episode, message: Message) -> Feedback:
        """:meth:`aenv_response` under :attr:`step_timeout_s`: past it, :class:`VerifierTimeout`.

        The hook is cancelled at the deadline; a ``TimeoutError`` it raises itself stays
        undeclared (``env_error``), as in the sync hook.
        """
        if self.step_timeout_s is None:
            return await self.aenv_response(ep, message)
        try:
            return await await_within(self.aenv_response(ep, message), self.step_timeout_s)
        except DeadlineExceeded as e:
            raise VerifierTimeout(
                f"the step ran past its {self.step_timeout_s:g} s deadline and was cancelled"
            ) from e

    def _result(self, ep: Episode, message: Message, fb: Feedback) -> StepResult:
        truncated = not fb.done and ep.turn >= self.spec.max_turns
        components = fb.components
        extra = dict(fb.info)
        if truncated:
            measured = {**(components or {}), **self.on_truncate(ep)}
            components = self.rubric.truncation(measured)
            extra["measured"] = measured
        if components is not None or fb.done or truncated:
            components = {**(components or {}), **self._generic(ep)}
        info = Info(
            task_id=ep.task.task_id,
            status=fb.status,
            components=components or {},
            turn=ep.turn,
            error=fb.error,
            **extra,
        )
        return StepResult(
            messages=fb.messages if not truncated else [],
            reward=self.rubric.total(components or {}),
            terminated=fb.done,
            truncated=truncated,
            info=info,
        )

    def _generic(self, ep: Episode) -> dict[str, float]:
        """Generic counters over the whole episode, less what earlier steps paid."""
        now = self.rubric.generic(assistant_chars(ep.messages))
        due = {name: value - ep.paid.get(name, 0.0) for name, value in now.items()}
        ep.paid.update(now)
        return due

    def _cut_short(self, ep: Episode) -> tuple[dict[str, float], dict[str, float]]:
        """Components of an episode cut short, and what the environment measured."""
        try:
            measured = self.on_truncate(ep)
        except EpisodeError as exc:  # the last attempt is the model's to fail: nothing measured
            if status_for(exc) not in MODEL_STATUSES:
                raise
            measured = {}
        return {**self.rubric.truncation(measured), **self._generic(ep)}, measured

    def _failed(self, ep: Episode, exc: Exception) -> StepResult:
        status = status_for(exc)
        if status is Status.ENV_ERROR:
            log.exception("%s: environment error in task %s", self.spec.name, ep.task.task_id)
        components: dict[str, float] = {}
        reward = 0.0
        if status in MODEL_STATUSES:  # the model ended its episode: a truncation, paid so
            try:
                components, _ = self._cut_short(ep)
                reward = self.rubric.total(components)
            except Exception:
                log.exception("%s: on_truncate failed in task %s", self.spec.name, ep.task.task_id)
                status, components, reward = Status.ENV_ERROR, {}, 0.0
        info = Info(
            task_id=ep.task.task_id,
            status=status,
            components=components,
            turn=ep.turn,
            error=_describe(exc),
        )
        return StepResult(messages=[], reward=reward, terminated=False, truncated=True, info=info)

    def finish(self) -> StepResult:
        """End the running episode from outside; see :meth:`Env.finish`."""
        ep = self._episode
        if ep is None:
            raise EpisodeStateError("call reset() before finish()")
        if ep.done:
            raise EpisodeStateError("the episode is over already; finish() ends a running one")
        try:
            components, measured = self._cut_short(ep)
            info = Info(
                task_id=ep.task.task_id, components=components, turn=ep.turn, measured=measured
            )
            result = StepResult(
                messages=[],
                reward=self.rubric.total(components),
                terminated=False,
                truncated=True,
                info=info,
            )
        except Exception as exc:  # noqa: BLE001 (the episode boundary, as in step())
            result = self._failed(ep, exc)
        ep.done = True
        return result

    def verify(self, task: Task | str, response: Message | str) -> Score:
        """Score one response; failures become the score's status, never an exception."""
        if isinstance(task, str):
            task = self.get_task(task)
        message = valid_unicode(Message.coerce(response))
        generic = self.rubric.generic(assistant_chars([message]))
        too_long = self._too_long(message)
        if too_long:
            components = {**self.rubric.truncation({}), **generic}
            return Score(
                reward=self.rubric.total(components),
                components=components,
                status=Status.INVALID_ACTION,
                error=too_long,
            )
        try:
            components, details = self.score(task, message)
            components = {**components, **generic}
            reward = self.rubric.total(components)
        except NotSupported:
            raise
        except Exception as exc:  # the verification boundary
            status = status_for(exc)
            if status is Status.ENV_ERROR:
                log.exception("%s: verifier error on task %s", self.spec.name, task.task_id)
            if status not in MODEL_STATUSES:
                return Score(reward=0.0, status=status, error=_describe(exc))
            components = {**self.rubric.truncation({}), **generic}
            return Score(
                reward=self.rubric.total(components),
                components=components,
                status=status,
                error=_describe(exc),
            )
        return Score(reward=reward, components=components, info=details)


MODEL_STATUSES = frozenset({Status.TIMEOUT, Status.INVALID_ACTION})
"""Statuses that are the model's doing: the episode is scored (as a truncation), not dropped."""


def _no_running_loop(name: str) -> None:
    """Refuse a sync call of an async environment from a thread that runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"{name}'s steps are async (async_steps): from async code, await areset()/astep() "
        "instead of calling reset()/step()"
    )


def message_chars(message: Message) -> int:
    """The size of one message: its text and its tool calls (id, name, arguments).

    :attr:`TaskEnv.max_message_chars` bounds it, and the ``length`` component sums it.
    """
    size = len(message.content)
    for call in message.tool_calls or ():
        size += len(call.id) + len(call.function.name) + len(call.function.arguments)
    return size


def assistant_chars(messages: Sequence[Message]) -> int:
    """Characters the assistant wrote in ``messages`` (see :func:`message_chars`)."""
    return sum(message_chars(m) for m in messages if m.role == "assistant")


def valid_unicode(message: Message) -> Message:
    r"""``message`` with lone surrogates (``"\ud800"``) replaced by U+FFFD.

    A lone surrogate is not Unicode: no JSON body or tokenizer can carry it, and a server that
    echoed it back could not encode its answer. A tokenizer's decode turns invalid bytes into
    U+FFFD, so every runner does the same to such text (the HTTP client before sending it).
    """
    if not message.tool_calls and not any(
        _SURROGATE.search(text)
        for text in (message.content, message.tool_call_id, message.name)
        if text
    ):
        return message  # the common case, without writing the message as JSON
    text = json.dumps(message.model_dump(exclude_none=True), ensure_ascii=False)
    if _SURROGATE.search(text) is None:
        return message
    return Message.model_validate_json(fix_surrogates(text))


def fix_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
