"""Where the server runs an environment's calls: on its event loop, or on its worker threads.

Three ways, chosen by what the environment declares (class data, never probed per call):

* **awaited** (:attr:`~envhub.core.Env.async_steps`): ``areset``/``astep`` are awaited on the
  event loop under the server's deadline. A step that waits on I/O holds no thread, so the
  number of steps waiting at once is bounded by the sessions, not by the pool; nothing queues,
  so nothing is refused as ``overloaded``.
* **inline** (:attr:`~envhub.core.Env.inline_steps`): ``reset``/``step`` are called on the
  event loop directly, with no hand-off to a thread and back (two thread switches and their GIL
  hand-offs cost more than such a step). Each call is timed; calls over ``inline_budget_ms``
  are counted, and at the third within a hundred calls (:data:`STRIKES`) the environment goes
  to the worker threads for the rest of the server's life, with a warning in the log: a slow
  inline call stalls every episode in flight.
* **blocking** (the default): the worker pool (:mod:`envhub.server.workers`), with its queue
  bound (``overloaded``), its deadline and its stall detection.

``finish``, ``/tasks`` and ``/verify`` always run on the worker pool: they are not the hot path.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, TypeVar

from envhub.core import Env
from envhub.deadline import DeadlineExceeded, await_within
from envhub.types import Message, ResetResult, StepResult

from .workers import Workers

log = logging.getLogger("envhub.server")
T = TypeVar("T")

STRIKES = 3
"""Inline calls over the budget, within :data:`WINDOW` calls, that send an environment to
the worker threads. Wall time is what is measured (a thread's CPU clock is a system call that
cost more than the step here): on a busy machine a preempted call may overrun once in a while,
an environment whose steps are not fast overruns over and over."""
WINDOW = 100


class Calls:
    """Runs one served environment's calls where its declaration says (see the module doc)."""

    def __init__(
        self, env: Env, pool: Workers, metrics: Counter[str], *,
        queue_s: float, run_s: float, inline_budget_s: float,
    ) -> None:  # fmt: skip
        """Calls of forks of ``env``: ``run_s`` is the deadline, ``queue_s`` the pool's bound."""
        self.awaited = env.async_steps
        self.inline = env.inline_steps and not env.async_steps
        self.pool, self.metrics = pool, metrics
        self.queue_s, self.run_s, self.budget_s = queue_s, run_s, inline_budget_s
        self.made = 0
        """Inline calls made so far."""
        self.strikes: deque[int] = deque(maxlen=STRIKES)
        """The call counts at the last overruns."""

    @property
    def mode(self) -> str:
        """``awaited``, ``inline`` or ``blocking``: where reset and step run now."""
        return "awaited" if self.awaited else "inline" if self.inline else "blocking"

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the worker pool, under the server's deadline (TimeoutError past it).

        Raises:
            Overloaded: No worker took the call within the queue bound (it never ran).
            Stalled: The pool is wedged.
            TimeoutError: The call ran past the deadline (abandoned).
        """
        return await self.pool.run(fn, *args, queue_s=self.queue_s, run_s=self.run_s)

    async def reset(self, env: Env, seed: int | None, task_id: str | None) -> ResetResult:
        """``env.reset(seed=..., task_id=...)`` where the environment's calls run."""
        if self.awaited:
            return await self._await(env.areset(seed=seed, task_id=task_id))
        if self.inline:
            return self._inline(lambda: env.reset(seed=seed, task_id=task_id))
        return await self.blocking(lambda: env.reset(seed=seed, task_id=task_id))

    async def step(self, env: Env, message: Message | str) -> StepResult:
        """``env.step(message)`` where the environment's calls run."""
        if self.awaited:
            return await self._await(env.astep(message))
        if self.inline:
            return self._inline(lambda: env.step(message))
        return await self.blocking(env.step, message)

    async def _await(self, call: Any) -> Any:
        try:
            return await await_within(call, self.run_s)
        except DeadlineExceeded as e:  # the server's deadline: answered 504, as the pool's
            raise TimeoutError(f"the call ran past its {self.run_s:g} s deadline") from e

    def _inline(self, call: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            return call()
        finally:
            self.made += 1
            spent = time.perf_counter() - start
            if spent > self.budget_s:
                self._overran(spent)

    def _overran(self, spent: float) -> None:
        self.metrics["inline_overruns"] += 1
        self.strikes.append(self.made)
        if len(self.strikes) < STRIKES or self.made - self.strikes[0] >= WINDOW or not self.inline:
            return
        self.inline = False
        log.warning(
            "inline calls took up to %.1f ms, over the %.1f ms budget (%d of the last %d): "
            "this environment's calls run on the worker threads from now on (drop "
            "inline_steps from its class if its steps are not always fast)",
            1000 * spent, 1000 * self.budget_s, STRIKES, WINDOW,
        )  # fmt: skip
