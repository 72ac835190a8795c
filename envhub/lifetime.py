"""Process lifetimes: servers stop on SIGINT/SIGTERM, and children do not outlive their parent.

Two rules, for every long-running envhub program and every process envhub starts:

1. **A serving program stops on SIGINT and SIGTERM, whatever it inherited.** A background job
   of a non-interactive shell (``.ci/run &``, ``nohup``, a job runner) starts with SIGINT
   *ignored*, and an ignored disposition survives ``exec``: a server that only catches
   ``KeyboardInterrupt`` never stops on Ctrl-C there. :func:`stop_signals` installs a handler
   for both signals that raises :class:`KeyboardInterrupt` in the main thread, which the
   program catches to shut down and exit 0 (stopping on request is success). uvicorn 0.54, when
   it runs in the main thread, puts its own handlers in for the time it serves, restores
   ours when it is done and re-raises the signal it caught: ours then ends the program.

2. **A child dies with its parent.** A process that starts a server for its own use
   (``make(name, runner="http")``) gives it :func:`child_environment`; the child calls
   :func:`follow_parent` first thing. On Linux the kernel then sends the child SIGTERM when
   its parent dies (``PR_SET_PDEATHSIG``), even by SIGKILL, where no ``atexit`` runs. That
   signal follows the parent *thread* that started the child, so it is asked for only when
   the child was started from the main thread (a worker thread that ends must not stop the
   server). A watchdog thread that polls :func:`os.getppid` covers the rest, and other
   platforms: the child is told to stop within :data:`WATCH_S` of its parent's death, and is
   killed if it has not stopped :data:`GRACE_S` later.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

PARENT_PID = "ENVHUB_PARENT_PID"
"""Environment variable: the pid whose death stops this process (set by the parent)."""
PARENT_DEATHSIG = "ENVHUB_PARENT_DEATHSIG"
"""Environment variable: ``1`` when the parent started us from its main thread, so the
kernel's parent-death signal may be used."""
WATCH_S = 0.5
"""How often the watchdog looks at the parent pid."""
GRACE_S = 15.0
"""Seconds a child has to stop after its parent died, before it is killed."""
PR_SET_PDEATHSIG = 1
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _raise_interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`KeyboardInterrupt` inside, whatever was inherited.

    Enter it first thing in a serving program's main (before loading data), catch the
    ``KeyboardInterrupt`` around the serving, and stop cleanly. The previous handlers come
    back on exit. Outside the main thread (a program run in-process by a test) it does nothing:
    Python lets only the main thread set handlers.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def child_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) for a child that must stop when this process dies.

    The child calls :func:`follow_parent`.
    """
    out = dict(os.environ if env is None else env)
    out[PARENT_PID] = str(os.getpid())
    if threading.current_thread() is threading.main_thread():
        out[PARENT_DEATHSIG] = "1"
    else:
        out.pop(PARENT_DEATHSIG, None)
    return out


def follow_parent(sig: int = signal.SIGTERM) -> bool:
    """Send ``sig`` to this process when the parent named by :data:`PARENT_PID` dies.

    A no-op (``False``) when the variable is unset: a server started by hand lives until told
    to stop. The variables are taken out of the environment, so this process's own children
    are not tied to our parent. If the parent is gone already, ``sig`` is sent at once.
    """
    raw = os.environ.pop(PARENT_PID, "")
    deathsig = os.environ.pop(PARENT_DEATHSIG, "") == "1"
    if not raw.isdigit():
        return False
    parent = int(raw)
    told = deathsig and _parent_death_signal(sig)
    if os.getppid() != parent:  # it died before the kernel was asked to tell us
        os.kill(os.getpid(), sig)
        told = True
    watch = threading.Thread(
        target=_watch, args=(parent, sig, told), name="envhub-parent-watch", daemon=True
    )
    watch.start()
    return True


def _parent_death_signal(sig: int) -> bool:
    """Ask Linux to send ``sig`` when the parent thread dies; whether it was armed."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False  # the watchdog covers it


def _watch(parent: int, sig: int, told: bool) -> None:
    """Stop this process once the parent is gone; kill it if the polite stop hangs.

    ``told``: ``sig`` comes (or came) another way, the kernel's parent-death signal; a second
    one could cut the polite stop short.
    """
    while os.getppid() == parent:
        time.sleep(WATCH_S)
    if not told:
        os.kill(os.getpid(), sig)
    time.sleep(GRACE_S)
    os.kill(os.getpid(), signal.SIGKILL)
