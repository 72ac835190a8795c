"""Start runs from a small long-lived spawner process instead of an ``sh`` + ``setpriv`` chain.

When envhub runs as root, every run needs its own uid, its cgroup joined before anything of
it starts, and a new session. Done from the server, that is a ``vfork`` + ``exec`` of ``sh``
(cgroup join) and of ``setpriv`` (uid switch) before bubblewrap: ~2.7 ms of CPU per run
measured here, in exec and dynamic linking. A spawner (:mod:`._spawner_process`, one per
interpreter, started lazily as ``python -I -S -c``) starts bubblewrap directly with
``posix_spawn`` (vfork + exec), in the run's cgroup and uid. See :mod:`._spawner_process` for the
protocol and how.

Its security properties are those of the ``setpriv`` path: same uid switch (groups cleared),
cgroup joined before ``exec``, new session, and ``--die-with-parent`` now points at the
spawner, which dies with the server (EOF on its socket, parent pid check, parent-death
signal) and kills every run it started on its way out.

A spawner that died is restarted on the next run (one retry per run); when none can be
started, runs fall back to ``setpriv`` (:func:`.procs.start`). ``ENVHUB_SANDBOX_SPAWNER=0``
turns it off. It is used only as root with a uid to switch to.
"""

from __future__ import annotations

import array
import itertools
import marshal
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

SOURCE = (Path(__file__).parent / "_spawner_process.py").read_text(encoding="utf-8")
BOOT = "#envhub-sandbox-spawner\nimport sys;exec(compile(sys.stdin.read(),'spawner','exec'))"
"""Its command line (the source comes on stdin, so ``ps`` shows this, not 300 lines)."""
START_TIMEOUT_S = 30.0
"""How long a new spawner may take to say it is ready."""
REPLY_TIMEOUT_S = 30.0
"""How long a request may wait for its answer before the spawner is judged stuck."""
RETRY_AFTER_S = 30.0
"""After a spawner failed to start, runs use ``setpriv`` this long before the next try."""


class SpawnerUnavailable(Exception):
    """The spawner cannot start this run; the caller falls back to ``setpriv``."""


def enabled() -> bool:
    """Runs may use a spawner: we are root and ``ENVHUB_SANDBOX_SPAWNER`` is not ``0``."""
    return os.geteuid() == 0 and os.environ.get("ENVHUB_SANDBOX_SPAWNER", "1") != "0"


class SpawnedProcess:
    """A run started by a spawner: the part of :class:`subprocess.Popen` the sandbox uses."""

    def __init__(
        self, spawner: Spawner, pid: int, args: list[str], stdio: list[IO[bytes] | None]
    ) -> None:
        self.pid = pid
        self.args = args
        self.stdin, self.stdout, self.stderr = stdio
        self.spawner_pid = spawner.pid
        """The spawner that started (and reaps) this process."""
        self.returncode: int | None = None
        self._spawner = spawner
        self._done = threading.Event()

    def poll(self) -> int | None:
        """The exit code (``-signal`` if killed), or ``None`` while it runs."""
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the exit code; raises :class:`subprocess.TimeoutExpired` at ``timeout``."""
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        """SIGKILL its process group; the spawner does it only while the pid is unreaped."""
        if self.returncode is None:
            self._spawner.kill(self.pid)

    def _exited(self, status: int) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)
        self._done.set()


class _Pending:
    """A request waiting for its answer (set by the reader thread)."""

    def __init__(self, stdio: list[IO[bytes] | None] | None = None, args: Any = None) -> None:
        self.stdio, self.args = stdio, args
        self.done = threading.Event()
        self.result: Any = None
        self.error: str | None = None


class Spawner:
    """One spawner process and the thread that reads its answers and exit reports.

    Args:
        python: Interpreter that runs the spawner (the sandbox's ``python3``).

    Raises:
        SpawnerUnavailable: it did not start or did not say it was ready.
    """

    def __init__(self, python: str) -> None:
        self.lock = threading.Lock()
        self.pending: dict[int, _Pending] = {}
        self.running: dict[int, SpawnedProcess] = {}
        self.ids = itertools.count()
        self.dead = False
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [python, "-I", "-S", "-c", BOOT, str(theirs.fileno()), str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                cwd="/",
                env={},
                start_new_session=True,  # no terminal signals: it dies with us, not with ^C
            )
            assert self.proc.stdin is not None
            with self.proc.stdin:
                self.proc.stdin.write(SOURCE.encode())  # fits a pipe's buffer: no deadlock
        except OSError as e:
            self.sock.close()
            raise SpawnerUnavailable(f"cannot run {python!r}: {e}") from e
        finally:
            theirs.close()
        self.pid = self.proc.pid
        self._await_ready()
        threading.Thread(target=self._read, name="envhub-sandbox-spawner", daemon=True).start()

    def _await_ready(self) -> None:
        self.sock.settimeout(START_TIMEOUT_S)
        try:
            data = self.sock.recv(4096)
            message = marshal.loads(data) if data else ("exited", "it exited at once")
        except (OSError, EOFError, ValueError) as e:
            message = ("no answer", str(e))
        finally:
            self.sock.settimeout(None)
        if message[0] != "ready":
            self.stop()
            raise SpawnerUnavailable(f"the spawner did not start: {message[1]}")

    @property
    def alive(self) -> bool:
        """The spawner process is running and answering."""
        return not self.dead

    def spawn(
        self,
        argv: Sequence[str],
        *,
        uid: int,
        cgroup_joins: Sequence[tuple[str, str]] = (),
        piped_stdin: bool = True,
        pass_fds: Sequence[int] = (),
        cwd: str | None = None,
        env: Mapping[str, str],
    ) -> SpawnedProcess:
        """Start ``argv`` as ``uid`` in a new session, stdout/stderr piped, like Popen would.

        ``pass_fds`` keep their numbers in the child; stdin is a pipe or ``/dev/null``;
        ``cgroup_joins`` are :meth:`.cgroup.Cgroup.joins` (joined before ``exec``).

        Raises:
            SpawnerUnavailable: the spawner is gone, stuck or refused (nothing was started).
        """
        stdin_r, stdin_w = os.pipe() if piped_stdin else (os.open(os.devnull, os.O_RDONLY), -1)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        stdio = [
            open(stdin_w, "wb", buffering=0) if piped_stdin else None,
            open(out_r, "rb", buffering=0),
            open(err_r, "rb", buffering=0),
        ]
        request = {
            "argv": list(argv),
            "env": dict(env),
            "cwd": cwd,
            "uid": uid,
            "cgroup": [list(join) for join in cgroup_joins],
            "fds": [0, 1, 2, *pass_fds],
        }
        try:
            return self._request("spawn", request, [stdin_r, out_w, err_w, *pass_fds], stdio)
        except BaseException:
            for stream in stdio:
                if stream is not None:
                    stream.close()
            raise
        finally:
            for fd in (stdin_r, out_w, err_w):
                os.close(fd)

    def kill(self, pid: int) -> None:
        """SIGKILL the process group of ``pid`` if it is a run of ours not reaped yet."""
        with self.lock:
            if not self.dead:
                try:
                    self.sock.send(marshal.dumps(("kill", pid), 4))
                except OSError:
                    pass

    def cpu_seconds(self) -> float:
        """CPU time of the spawner itself and of every run it reaped so far."""
        mine, reaped = self._request("usage", None, [], None)
        return float(mine + reaped)

    def stop(self) -> None:
        """Kill the spawner (its runs die with it: ``--die-with-parent``) and reap it."""
        with self.lock:
            self.dead = True
        self.proc.kill()
        self.proc.wait()

    def _request(
        self, kind: str, body: Any, fds: list[int], stdio: list[IO[bytes] | None] | None
    ) -> Any:
        pending = _Pending(stdio, body["argv"] if body else None)
        with self.lock:
            if self.dead:
                raise SpawnerUnavailable("the spawner exited")
            rid = next(self.ids)
            self.pending[rid] = pending
            message = marshal.dumps((kind, rid, body) if body else (kind, rid), 4)
            try:
                ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
                self.sock.sendmsg([message], ancillary if fds else [])
            except OSError as e:
                del self.pending[rid]
                self.dead = True  # its end is closed: the reader thread sees EOF next
                raise SpawnerUnavailable(f"cannot reach the spawner: {e}") from e
        if not pending.done.wait(REPLY_TIMEOUT_S):
            self.stop()  # stuck: kill it so it cannot start this run later
            raise SpawnerUnavailable(f"the spawner did not answer within {REPLY_TIMEOUT_S}s")
        if pending.error is not None:
            raise SpawnerUnavailable(pending.error)
        return pending.result

    def _read(self) -> None:
        """Dispatch answers and exit reports until the spawner's socket closes."""
        try:
            while data := self.sock.recv(4096):
                self._dispatch(marshal.loads(data))
        except (OSError, EOFError, ValueError, IndexError, TypeError):
            self.stop()  # it speaks nonsense (never seen): runs then get the setpriv path
        finally:
            self._died()

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "exit":
            handle = self.running.pop(message[1], None)
            if handle is not None:
                handle._exited(message[2])
            return
        pending = self.pending.pop(message[1], None)
        if pending is None:
            return
        if kind == "pid":
            handle = SpawnedProcess(self, message[2], pending.args, pending.stdio or [])
            self.running[handle.pid] = handle
            pending.result = handle
        elif kind == "usage":
            pending.result = message[2]
        else:
            pending.error = f"the spawner refused: {message[2]}"
        pending.done.set()

    def _died(self) -> None:
        with self.lock:
            self.dead = True
            self.sock.close()
            pending, self.pending = list(self.pending.values()), {}
            running, self.running = list(self.running.values()), {}
        for waiter in pending:
            waiter.error = "the spawner exited"
            waiter.done.set()
        for handle in running:  # bubblewrap was SIGKILLed with it (--die-with-parent)
            handle._exited(signal.SIGKILL)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.stop()


_SPAWNERS: dict[str, Spawner] = {}
_FAILED: dict[str, float] = {}
_LOCK = threading.Lock()


def get(python: str) -> Spawner:
    """The running spawner of ``python``, started if there is none.

    Raises:
        SpawnerUnavailable: it cannot start (or failed to less than ``RETRY_AFTER_S`` ago).
    """
    with _LOCK:
        spawner = _SPAWNERS.get(python)
        if spawner is not None and spawner.alive:
            return spawner
        if time.monotonic() < _FAILED.get(python, 0.0):
            raise SpawnerUnavailable("the spawner failed to start recently")
        try:
            _SPAWNERS[python] = spawner = Spawner(python)
        except SpawnerUnavailable:
            _FAILED[python] = time.monotonic() + RETRY_AFTER_S
            raise
        return spawner


def spawn(python: str, argv: Sequence[str], **kwargs: Any) -> SpawnedProcess:
    """:meth:`Spawner.spawn` through the spawner of ``python``; once more if that failed.

    A spawner that died is replaced by :func:`get` on the second try.

    Raises:
        SpawnerUnavailable: no spawner could start the run (fall back to ``setpriv``).
    """
    spawner = get(python)  # one that cannot start says why, right away
    try:
        return spawner.spawn(argv, **kwargs)
    except SpawnerUnavailable:
        return get(python).spawn(argv, **kwargs)


def active() -> bool:
    """A spawner of this process is running (runs are started by it)."""
    with _LOCK:
        return any(s.alive for s in _SPAWNERS.values())


def cpu_seconds() -> float:
    """CPU time of this process's spawners and of the runs they reaped (for benchmarks)."""
    with _LOCK:
        spawners = [s for s in _SPAWNERS.values() if s.alive]
    total = 0.0
    for spawner in spawners:
        try:
            total += spawner.cpu_seconds()
        except SpawnerUnavailable:
            pass
    return total


def _forget_after_fork() -> None:
    """A forked child must not share its parent's spawners: it starts its own."""
    global _LOCK
    _LOCK = threading.Lock()
    for spawner in _SPAWNERS.values():
        spawner.dead = True
        spawner.sock.close()
    _SPAWNERS.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
