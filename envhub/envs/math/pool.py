"""The math checker's worker processes: a function run under CPU, wall-clock and memory bounds.

:func:`run_in_worker` runs ``fn(*args)`` in a ``pebble`` worker process and answers what it
returns, or raises:

* **CPU**: the call's budget is CPU time spent by its worker (:func:`within_cpu`, a
  ``SIGPROF`` timer), not wall time, so a loaded machine's waiting is never charged to the
  model's answer; one that spends it raises :class:`~envhub.errors.VerifierTimeout`, and the
  worker lives on.
* **Wall clock**: code the CPU timer cannot interrupt (one huge operation in C) meets a
  backstop at ``timeout * WALL_FACTOR``; the worker is killed and replaced (a new one forks in
  milliseconds) and the call raises :class:`~envhub.errors.VerifierTimeout`.
* **Memory**: each worker runs under an address-space limit (:func:`init_worker`,
  :data:`WORKER_MEMORY_MB`).
* **Queue**: a call that waits for a free worker past :data:`QUEUE_GRACE_S` raises
  :class:`~envhub.errors.InfraError` (the machinery's, never the model's ``timeout``).

Workers are forked with sympy already imported (:func:`envhub.envs.math.symbolic.warm`), hold
none of their parent's descriptors (:func:`close_inherited_fds`) and die with their parent.
The math checker (:mod:`envhub.envs.math.answers`) compares answers here; reasoning-gym's
scorers run here too (:mod:`envhub.envs.reasoning_gym.worker`).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import resource
import signal
import sys
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from envhub.errors import InfraError, VerifierTimeout

from . import symbolic

__all__ = ["run_in_worker", "shutdown", "warmup"]

WORKERS = int(os.environ.get("ENVHUB_MATH_WORKERS", "2"))
"""Sympy worker processes (``ENVHUB_MATH_WORKERS``)."""
WORKER_MEMORY_MB = int(os.environ.get("ENVHUB_MATH_WORKER_MEMORY_MB", "2048"))
"""Address-space limit of one worker (``ENVHUB_MATH_WORKER_MEMORY_MB``; 0 for none)."""
QUEUE_GRACE_S = 30.0
"""How long a call may wait for a free or restarting worker, on top of its wall backstop.

Waiting for a worker is the machinery's (other episodes' answers are being checked): a call
still queued past it is :class:`~envhub.errors.InfraError`, never the model's ``timeout``. The
default keeps the whole wait (10 s backstop + 30 s) under a step's 45 s deadline."""
WALL_FACTOR = 5.0
"""A worker call's wall-clock backstop, as a multiple of its CPU budget (``timeout``).

The budget that decides a verdict is CPU time (:func:`within_cpu`); the backstop only stops
code the CPU timer cannot interrupt, and leaves a loaded machine room to run the call."""


# ---------------------------------------------------------------- the caller's side

_lock = threading.Lock()
_pool = None
_state = {"atexit": False}


def _get_pool():
    global _pool
    with _lock:
        if _pool is None or not _pool.active:
            from pebble import ProcessPool

            # fork: workers start in milliseconds with sympy already imported, and scripts
            # need no ``if __name__ == "__main__"`` guard (spawn/forkserver re-run them).
            symbolic.warm()  # sympy imported and warmed once here, inherited by each worker

            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            memory = WORKER_MEMORY_MB * 2**20 if WORKER_MEMORY_MB > 0 else None
            _pool = ProcessPool(
                max_workers=WORKERS,
                initializer=init_worker,
                initargs=(memory,),
                context=ctx,
            )
            _start_from_keeper(_pool)
            if not _state["atexit"]:
                atexit.register(shutdown)
                _state["atexit"] = True
        return _pool


def _start_from_keeper(pool) -> None:
    """Start ``pool``'s first workers from a thread that lives as long as this process.

    Each worker asks Linux to kill it when the thread that forked it ends
    (:func:`init_worker`), so that no worker outlives envhub, even one stuck in C. The pool
    forks its first workers from the thread of the first call; a request's thread may end at
    any time, so that first call is made from this keeper thread instead (pebble forks the
    replacements from its own manager thread, which lives as long as the pool).
    """
    started = threading.Event()

    def keep() -> None:
        pool.schedule(ping)  # starts the pool, forking from this thread
        started.set()
        threading.Event().wait()  # live until the process ends (a daemon thread)

    threading.Thread(target=keep, name="envhub-math-pool", daemon=True).start()
    started.wait(timeout=60)


def run_in_worker(fn, args: tuple, timeout: float) -> Any:
    """Run ``fn(*args)`` in a worker with ``timeout`` CPU seconds (see :data:`WALL_FACTOR`).

    The math checker's comparisons run here, and so do other checkers that run third-party
    code on a model's answer (reasoning-gym's scorers).

    Raises:
        VerifierTimeout: The call spent its CPU budget, or ran past the wall backstop (its
            worker is then killed and replaced).
        InfraError: The worker died for another reason, or none was free within
            :data:`QUEUE_GRACE_S` after the backstop.
    """
    from pebble import ProcessExpired

    wall = timeout * WALL_FACTOR
    future = _get_pool().schedule(within_cpu, args=(timeout, fn, *args), timeout=wall)
    try:
        verdict = future.result(timeout=wall + QUEUE_GRACE_S)
    except FutureTimeout as e:
        if not future.done():  # still waiting for a worker: the machinery is overloaded
            future.cancel()
            raise InfraError(
                f"the math workers were busy for {wall + QUEUE_GRACE_S:g} s (other answers "
                "queued ahead); raise ENVHUB_MATH_WORKERS for this load"
            ) from e
        raise VerifierTimeout(
            f"symbolic answer check ran past {wall:g} s of wall time; the worker was restarted"
        ) from e
    except ProcessExpired as e:
        raise InfraError(f"math worker process died ({e}); it was restarted") from e
    if verdict == CPU_SPENT:
        raise VerifierTimeout(f"symbolic answer check used more than {timeout:g} CPU seconds")
    return verdict


def warmup(timeout: float = 60.0) -> None:
    """Start the worker processes now rather than on the first symbolic comparison."""
    pool = _get_pool()
    for future in [pool.schedule(ping) for _ in range(WORKERS)]:
        future.result(timeout=timeout)


def shutdown() -> None:
    """Stop the worker processes (a later comparison starts new ones)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.stop()
        pool.join(timeout=5)


# ---------------------------------------------------------------- the worker's side


def init_worker(memory_bytes: int | None) -> None:
    """Pool initializer: cap the address space, import sympy and warm the caches.

    The cap is ``memory_bytes`` on top of what the forked worker already maps: a worker forked
    from a large process (a trainer with torch loaded) starts out with its parent's mappings.
    The descriptors the fork copied are closed first (:func:`close_inherited_fds`).
    """
    close_inherited_fds()
    _die_with_parent()
    if memory_bytes:
        try:
            with open("/proc/self/statm") as f:
                mapped = int(f.read().split()[0]) * resource.getpagesize()
        except OSError:
            mapped = 0
        cap = mapped + memory_bytes
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    signal.signal(signal.SIGPROF, _spent)
    symbolic.warm()


CPU_SPENT = "cpu_spent"
"""What :func:`within_cpu` returns for a call stopped at its CPU budget."""
_budget = {"armed": False}


class _CpuBudgetSpent(BaseException):
    """Raised in a worker by ``SIGPROF``; a ``BaseException``: ``except Exception`` misses it."""


def _spent(signum: int, frame: Any) -> None:
    if _budget["armed"]:
        raise _CpuBudgetSpent


def within_cpu(cpu_s: float, fn: Any, *args: Any) -> Any:
    """``fn(*args)``, or :data:`CPU_SPENT` once this worker has spent ``cpu_s`` CPU seconds on it.

    The budget is CPU time (``ITIMER_PROF``: user and system time of this process), not wall
    time: a comparison on a loaded machine waits for a core without spending its budget, so the
    machine's load is never charged to the model's answer. The timer repeats every 50 ms of CPU
    until disarmed, so a stray ``except:`` in a library cannot swallow the stop. Code that never
    returns to the interpreter (one huge integer operation in C) is stopped by the caller's
    wall-clock backstop instead (:data:`WALL_FACTOR`).
    """
    try:
        _budget["armed"] = True
        signal.setitimer(signal.ITIMER_PROF, cpu_s, 0.05)
        try:
            return fn(*args)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            _budget["armed"] = False
    except _CpuBudgetSpent:
        return CPU_SPENT


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when the process that started it exits.

    A worker busy in C (one huge integer operation) cannot run Python's exit handlers; without
    this it outlives its parent when the pool is shut down mid-call, an orphan at 100% CPU.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown is all there is
        pass


def close_inherited_fds() -> None:
    """Close every descriptor this forked worker holds except stdio and its pool channel.

    The pool forks from a process whose other threads may hold pipes at that instant: a
    subprocess's exec-status pipe half-way through its spawn, a child's stdin, a server's
    socket. A copy kept here for the worker's life means the other end never sees EOF: the
    parent's ``subprocess`` spawn then waits forever (a trainer driver hung so, spawning agent
    programs while a worker forked), and a child reading its stdin to the end never finishes.
    The pool channel is found in the pebble frame that runs the initializer; where it cannot be
    found (another pebble), nothing is closed.
    """
    keep = {0, 1, 2}
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "worker_process":
        frame = frame.f_back
    channel = frame.f_locals.get("channel") if frame is not None else None
    if channel is None:
        return
    keep |= {channel.reader.fileno(), channel.writer.fileno()}
    try:
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        return
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def ping() -> str:
    """A no-op task used to wait until a worker is up."""
    return "pong"
