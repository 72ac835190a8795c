"""Every wait of the driver on a Ray actor has a deadline that follows the work.

A wedged engine, a stopped policy worker or an environment worker that never answers must
not stall a run in silence (the flagship example once hung at step 1 with no line for 15
minutes). So the driver never calls a bare ``ray.get`` on a worker: it calls :func:`get`,
which

- waits in slices of ``watchdog.progress_every_s``, logging a progress line (what it waits
  for, how long so far, the deadline) once a wait passes the first slice;
- gives up at a deadline computed from the work (:class:`Deadlines`: a fixed floor plus the
  tokens to generate or train on at a throughput far below this machine's), not a fixed hour,
  unless each late worker is still computing (a loaded machine): then it waits on, slice by
  slice, up to ``SLACK`` times the deadline;
- on giving up, logs each late actor's Python stack (``py-spy dump``, or the process state
  when the process is stopped) and raises :class:`PartHung`, naming the part.

What the caller does with :class:`PartHung` depends on the part: a generation engine is
killed, restarted by Ray and refit (its prompts count as ``infra_error``); an environment
worker likewise; a policy worker cannot be replaced mid-run (FSDP ranks), so the run stops
with exit code 1, naming it. :class:`FailedSteps` stops a run whose last
``watchdog.max_failed_steps`` steps all failed.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envhub.errors import EnvhubError

log = logging.getLogger("envhub.trainer")


class WatchdogConfig(BaseModel):
    """The ``watchdog`` section: deadlines of the driver's waits, and when a run gives up.

    The defaults notice a hang of the examples' runs on a 2-core CPU within 5 minutes while
    leaving every call 5-10 times the time it takes there under load.
    """

    model_config = ConfigDict(extra="forbid")

    floor_s: float = Field(default=60.0, gt=0)
    """Every deadline's fixed part (a call's start-up, a loaded machine, a GC pause)."""
    generation_tokens_per_s: float = Field(default=10.0, gt=0)
    """The slowest an engine may sample (new tokens a second, per engine) before it is called
    hung; SmolLM2 samples 70-140 tokens/s with vLLM on this CPU."""
    train_tokens_per_s: float = Field(default=20.0, gt=0)
    """The slowest a policy worker may train (sequence tokens a second through forward and
    backward, per rank); SmolLM2 trains ~130 tokens/s on this CPU."""
    startup_s: float = Field(default=900.0, gt=0)
    """Deadline of starting the workers (model loads, vLLM's start, compilation)."""
    progress_every_s: float = Field(default=30.0, gt=0)
    """A wait longer than this logs a progress line, and again at each multiple."""
    max_failed_steps: int = Field(default=3, ge=1)
    """Stop with exit code 1 after this many consecutive failed steps (a part hung, raised or
    died, or every episode of the step was dropped)."""
    max_empty_steps: int = Field(default=5, ge=1)
    """Stop with exit code 1 after this many consecutive steps that trained on nothing (every
    group of equal reward, or every episode dropped)."""


class PartHung(EnvhubError):
    """A worker gave no answer within its deadline."""

    def __init__(self, part: str, seconds: float, late: Sequence[int]):
        """``part``: what was waited for; ``late``: the indices of the refs not answered."""
        self.part, self.seconds, self.late = part, seconds, list(late)
        super().__init__(f"{part}: no answer within its deadline of {seconds:.0f} s")


class RunFailed(EnvhubError):
    """The run cannot go on; the message names the failing part and what to do."""


SLACK = 4.0
"""A call may run this many times slower than the same work ran so far in the run."""


class Deadlines:
    """The deadline of each kind of wait, from the ``watchdog`` section and the work.

    Each deadline is a floor plus the work over a throughput: the config's floor rate, or
    ``1 / SLACK`` of the rate measured so far in this run when that is lower (a loaded
    machine stretches the deadlines instead of raising false alarms; a hang still makes no
    progress at all, and is found).
    """

    def __init__(self, cfg: WatchdogConfig):
        """Deadlines by ``cfg``."""
        self.cfg = cfg
        self.measured: dict[str, float] = {}
        """Slowest throughput seen per kind (``generation``, ``train``), tokens a second."""

    def observe(self, kind: str, tokens: float, seconds: float) -> None:
        """Record a finished call's throughput (calls under a second say nothing)."""
        if seconds >= 1.0 and tokens > 0:
            rate = tokens / seconds
            self.measured[kind] = min(self.measured.get(kind, rate), rate)

    def _rate(self, kind: str, floor: float) -> float:
        seen = self.measured.get(kind)
        return floor if seen is None else min(floor, seen / SLACK)

    def generation(self, prompts: Sequence[Sequence[int]], max_tokens: int) -> float:
        """One engine's share: new tokens at the floor rate; prompt tokens at 32x that."""
        work = generation_work(prompts, max_tokens)
        return self.cfg.floor_s + work / self._rate("generation", self.cfg.generation_tokens_per_s)

    def train(self, tokens: int, passes: float = 1.0) -> float:
        """A policy call over ``tokens`` sequence tokens.

        ``passes``: 1 for forward and backward, about 1/2 for a forward alone.
        """
        rate = self._rate("train", self.cfg.train_tokens_per_s)
        return self.cfg.floor_s + passes * tokens / rate

    def fixed(self, times: float = 1.0) -> float:
        """A call whose work does not grow with the batch (refit, checkpoint): floors."""
        return self.cfg.floor_s * times


def generation_work(prompts: Sequence[Sequence[int]], max_tokens: int) -> float:
    """Tokens of work of sampling ``prompts``: new tokens, plus prompt tokens at 1/32 each."""
    return len(prompts) * max_tokens + sum(len(p) for p in prompts) / 32


def get(
    refs: Any,
    part: str,
    deadline_s: float,
    *,
    progress_every_s: float = 30.0,
    pids: Sequence[int | None] | None = None,
) -> Any:
    """``ray.get(refs)`` within ``deadline_s``, with a progress line while it waits.

    ``refs``: one object ref or a list. ``pids[i]``, when given, is the process (on this
    node) of the actor behind ``refs[i]``. Past the deadline, the wait goes on slice by slice
    while every late process is computing (:data:`BUSY_SHARE` of a core or more), up to
    ``SLACK`` times the deadline; then each late one's stack is logged and :class:`PartHung`
    is raised. A ref without a pid counts as not computing.

    Raises:
        PartHung: some refs had no answer by the deadline.
        Whatever ``ray.get`` raises for an answered ref (a worker's exception, a dead actor).
    """
    import ray

    single = not isinstance(refs, list)
    pending = [refs] if single else list(refs)
    pids = list(pids or [])
    cpu = CpuClock([pids[i] if i < len(pids) else None for i in range(len(pending))])
    t0 = time.monotonic()
    limit = deadline_s
    waiting = list(pending)
    while waiting:
        elapsed = time.monotonic() - t0
        if elapsed >= limit:
            late = [i for i, r in enumerate(pending) if r in waiting]
            limit = _stretch(part, deadline_s, limit, elapsed, late, cpu, progress_every_s)
            if limit <= elapsed:
                for i in late:
                    log_stack(cpu.pids[i], part)
                raise PartHung(part, deadline_s, late)
        cpu.mark()
        _, waiting = ray.wait(
            waiting, num_returns=len(waiting), timeout=min(progress_every_s, limit - elapsed)
        )
        elapsed = time.monotonic() - t0
        if waiting and elapsed >= progress_every_s and elapsed < limit:
            log.info(
                "waiting on %s: %d of %d answered after %.0f s (deadline %.0f s)",
                part,
                len(pending) - len(waiting),
                len(pending),
                elapsed,
                limit,
            )
    got = ray.get(pending)
    return got[0] if single else got


BUSY_SHARE = 0.1
"""A late worker that used at least this share of one core over the last slice is computing,
not hung: a stopped process, a wait on a lost peer or a dead engine uses next to none."""


class CpuClock:
    """CPU seconds used by processes of this node, between two :meth:`mark` calls."""

    def __init__(self, pids: Sequence[int | None]):
        """``pids[i]``: the process behind the i-th ref, or ``None`` (not on this node)."""
        self.pids = list(pids)
        self._last: list[tuple[float, float | None]] = []

    def mark(self) -> None:
        """Start a slice: remember each process's CPU time now."""
        now = time.monotonic()
        self._last = [(now, _cpu_seconds(pid)) for pid in self.pids]

    def share(self, i: int) -> float:
        """The share of one core process ``i`` used since the last mark; 0 when unknown."""
        if i >= len(self._last):
            return 0.0
        t, before = self._last[i]
        after = _cpu_seconds(self.pids[i])
        wall = time.monotonic() - t
        if before is None or after is None or wall <= 0:
            return 0.0
        return (after - before) / wall


def _stretch(
    part: str,
    deadline_s: float,
    limit: float,
    elapsed: float,
    late: Sequence[int],
    cpu: CpuClock,
    slice_s: float,
) -> float:
    """The new limit of a wait past ``limit``: one more slice while every late worker computes.

    A loaded machine (a CI's other processes, oversubscribed threads) can slow a call many
    times over what the deadline allows; such a worker is still burning CPU, while a hung one
    is not. Each late worker must be computing, and the wait never goes past ``SLACK`` times
    the deadline; otherwise ``limit`` comes back unchanged and the caller gives up.
    """
    shares = [cpu.share(i) for i in late]
    if min(shares) < BUSY_SHARE or elapsed >= SLACK * deadline_s:
        return limit
    new = min(elapsed + slice_s, SLACK * deadline_s)
    log.warning(
        "%s is past its deadline of %.0f s after %.0f s, but computing (%.0f%% of a core over "
        "the last slice): waiting up to %.0f s in all",
        part,
        deadline_s,
        elapsed,
        100 * min(shares),
        SLACK * deadline_s,
    )
    return new


def _cpu_seconds(pid: int | None) -> float | None:
    """User plus system CPU seconds of process ``pid`` (all its threads), or ``None``."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def log_stack(pid: int | None, part: str) -> str:
    """Log (and return) the Python stack of process ``pid``, or why it cannot be had.

    Uses ``py-spy dump`` (installed with the trainer extra); a process stopped by a signal
    (state ``T``) is reported as such, since no stack can be read from it without resuming it.
    """
    text = _stack_text(pid)
    log.error("%s is late; its worker's state:\n%s", part, text)
    return text


def _stack_text(pid: int | None) -> str:
    if pid is None or not os.path.exists(f"/proc/{pid}"):
        return f"  pid {pid}: not a process of this node; no stack"
    state = _proc_state(pid)
    if state.startswith("T"):
        return f"  pid {pid}: stopped by a signal (state {state}); no stack can be read"
    spy = shutil.which("py-spy") or _beside_python("py-spy")
    if spy is None:
        return f"  pid {pid}: state {state}; py-spy is not installed, no stack"
    try:
        run = subprocess.run(
            [spy, "dump", "--nonblocking", "--pid", str(pid)],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return run.stdout or run.stderr or f"  pid {pid}: py-spy printed nothing"
    except (subprocess.TimeoutExpired, OSError) as e:
        return f"  pid {pid}: state {state}; py-spy failed ({e})"


def _beside_python(name: str) -> str | None:
    import sys

    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.path.exists(path) else None


def _proc_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


class FailedSteps:
    """Counts consecutive failed and empty steps; raises :class:`RunFailed` past the limits."""

    def __init__(self, cfg: WatchdogConfig):
        """Limits from ``cfg``."""
        self.cfg = cfg
        self.failed: list[str] = []
        self.empty = 0

    def record(self, step: int, failures: Sequence[str], trained: bool, why_empty: str) -> None:
        """Account step ``step``: its parts' ``failures`` and whether it ``trained``.

        Raises:
            RunFailed: ``max_failed_steps`` failed or ``max_empty_steps`` empty steps in a row.
        """
        if failures:
            self.failed.append(f"step {step}: " + "; ".join(failures))
            log.warning("step %d failed: %s", step, "; ".join(failures))
        else:
            self.failed = []
        if len(self.failed) >= self.cfg.max_failed_steps:
            raise RunFailed(
                f"{len(self.failed)} consecutive steps failed "
                f"(watchdog.max_failed_steps={self.cfg.max_failed_steps}):\n  "
                + "\n  ".join(self.failed)
            )
        if trained:
            self.empty = 0
            return
        self.empty += 1
        log.warning("step %d trained on nothing: %s", step, why_empty)
        if self.empty >= self.cfg.max_empty_steps:
            raise RunFailed(
                f"{self.empty} consecutive steps trained on nothing "
                f"(watchdog.max_empty_steps={self.cfg.max_empty_steps}); the last: "
                f"{why_empty}"
            )
