"""The parent side of the sandbox: build the bubblewrap jail, feed it, read it, reap it.

See :mod:`envhub.sandbox` for what the sandbox covers and what it does not.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from . import cgroup, jail, pipes, procs
from .errors import SandboxError, SandboxUnavailable
from .limits import Limits

Mode = Literal["auto", "bwrap", "rlimit"]


@dataclass
class RunResult:
    """What one sandboxed run produced. Output is text (invalid UTF-8 replaced)."""

    exit_code: int | None
    """Exit code of the sandbox (bubblewrap passes the program's through); ``None`` if killed."""
    timed_out: bool
    """The wall-clock deadline passed and the run was killed."""
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    duration_s: float
    mode: str
    """``bwrap`` or ``rlimit``."""
    uid: int | None = None
    """Host uid the run used (unique per run when envhub runs as root), for leak checks."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """Messages of the trusted runner, each checked against the run's nonce."""
    rejected: int = 0
    """Messages on the verdict channel that lacked the nonce (a forgery attempt or a bug)."""
    started: bool = False
    """The trusted runner reported ready: the sandbox itself came up."""
    hardened: bool = False
    """Tests mode: the runner made itself non-dumpable (no ptrace or /proc access from the
    program). Exec mode has no runner left to guard and reports False."""
    cgroup: bool = False
    """The run had its own cgroup (``Limits.total_memory_mb`` and a process cap applied)."""
    warm: bool = False
    """The run used a sandbox started ahead of it (``Sandbox(warm=N)``)."""

    @property
    def ok(self) -> bool:
        """The program exited with code 0 before the deadline."""
        return self.exit_code == 0 and not self.timed_out


class Sandbox:
    """Runs untrusted programs. Thread-safe: every run is independent.

    Args:
        limits: Default limits of each run (a run may override them).
        mode: ``bwrap`` (isolation), ``rlimit`` (limits only: NOT isolation, an explicit
            opt-in for machines without bubblewrap), or ``auto``: bwrap, else rlimit only when
            the environment variable ``ENVHUB_SANDBOX=rlimit`` opts in, else refuse.
        python: Interpreter used inside the sandbox (default: the system ``python3``;
            ``ENVHUB_SANDBOX_PYTHON`` overrides). The runner needs Python >= 3.8.
        ro_binds: Extra host paths made visible read-only: ``{host_path: sandbox_path}``.
        warm: Sandboxes kept started ahead of their runs, per kind of run (exec or tests,
            and the limits they are started with). A warm sandbox has its namespaces, its
            uid, cgroup and rlimits and its interpreter ready and waits for a job, so a run
            pays only for its own work: the start-up moves off the run's path (it still costs
            the same CPU, on a background thread). 0 (the default) starts each run cold.
            Each warm sandbox is single-use, like a cold one. Call :meth:`close` to stop them
            (they also die with the process).
        secret_paths: Files or folders the program must never read (the tests and reference
            solutions of the tasks it is graded on). The first use proves it: ``rlimit`` mode,
            which hides nothing, is refused, and under bubblewrap a probe run inside the
            sandbox must find none of them readable; otherwise :class:`SandboxUnavailable`
            says which and how to fix it.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        mode: Mode = "auto",
        python: str | None = None,
        ro_binds: Mapping[str, str] | None = None,
        warm: int = 0,
        secret_paths: Sequence[str] = (),
    ) -> None:
        if warm < 0:
            raise ValueError(f"warm must be >= 0, not {warm}")
        self.limits = limits or Limits()
        self.requested_mode = mode
        self.python = python or os.environ.get("ENVHUB_SANDBOX_PYTHON") or jail.find_python()
        self.ro_binds = dict(ro_binds or {})
        self.secret_paths = [os.path.abspath(p) for p in secret_paths]
        self._mode: str | None = None
        self._bwrap_prefix: list[str] | None = None
        self._runner_fd: int | None = None
        self._runner_size = 0
        self._lock = threading.Lock()
        self._warm = _WarmPool(self, warm) if warm else None
        if self._warm is not None:
            weakref.finalize(self, self._warm.close)

    # ------------------------------------------------------------------ public API

    @property
    def mode(self) -> str:
        """The mode runs use (``bwrap`` or ``rlimit``); raises if none is allowed here."""
        with self._lock:
            if self._mode is None:
                mode = self._choose_mode()
                self._runner_fd, self._runner_size = jail.compile_runner(self.python)
                if self.secret_paths:
                    self._check_secrets(mode)
                self._mode = mode
            return self._mode

    def check(self) -> str:
        """Probe now (instead of at the first run); return the mode or raise why not."""
        return self.mode

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | str = b"",
        files: Mapping[str, str] | None = None,
        limits: Limits | None = None,
    ) -> RunResult:
        """Run ``argv`` in the sandbox, its work dir holding ``files`` (name -> text)."""
        job = {"argv": list(argv), "files": dict(files or {})}
        return self.launch("exec", job, stdin=stdin, limits=limits)

    def run_python(
        self,
        code: str,
        *,
        stdin: bytes | str = b"",
        args: Sequence[str] = (),
        files: Mapping[str, str] | None = None,
        limits: Limits | None = None,
    ) -> RunResult:
        """Run Python source as ``main.py`` (isolated mode: no site-packages, no env vars)."""
        all_files = {**(files or {}), "main.py": code}
        argv = [self.python, "-I", "-S", "main.py", *args]
        job = {"argv": argv, "files": all_files, "python_main": "main.py"}
        return self.launch("exec", job, stdin=stdin, limits=limits)

    def launch(
        self,
        mode: Literal["exec", "tests"],
        job: Mapping[str, Any],
        *,
        stdin: bytes | str = b"",
        limits: Limits | None = None,
    ) -> RunResult:
        """Start the trusted runner in ``mode`` with ``job``; the building block of the API.

        Raises:
            SandboxUnavailable: no sandbox is allowed or possible here.
            SandboxError: the sandbox did not come up (the runner never reported ready).
        """
        limits = limits or self.limits
        sandbox_mode = self.mode
        if isinstance(stdin, str):
            stdin = stdin.encode()
        result = None
        if self._warm is not None:
            warm = self._warm.take(mode, limits)
            if warm is not None:
                result = warm.deliver(dict(job), stdin, limits)
            if result is not None and not result.started and not result.timed_out:
                result = None  # it died while waiting (killed from outside): go cold
        if result is None:
            result = _Launch(sandbox_mode, mode, limits).run(self, dict(job), stdin)
        if not result.started and not result.timed_out:
            raise SandboxError(
                f"the sandbox ({sandbox_mode}) did not start: exit code {result.exit_code}, "
                f"stderr: {result.stderr.strip()[-500:] or '(empty)'}"
            )
        if not result.started:
            raise SandboxError(f"the sandbox did not start within {limits.wall_s}s")
        return result

    # ------------------------------------------------------------------ setup

    def _choose_mode(self) -> str:
        if not Path(self.python).exists():
            raise SandboxUnavailable(
                f"no Python for the sandbox at {self.python!r}: install python3 or set "
                "ENVHUB_SANDBOX_PYTHON to an interpreter under /usr"
            )
        wanted = self.requested_mode
        if wanted == "auto" and os.environ.get("ENVHUB_SANDBOX") in ("bwrap", "rlimit"):
            wanted = os.environ["ENVHUB_SANDBOX"]  # type: ignore[assignment]
        if wanted == "rlimit":
            return "rlimit"
        problem = self._probe_bwrap()
        if problem is None:
            return "bwrap"
        container = ""
        if os.environ.get("ENVHUB_IN_CONTAINER"):
            container = (
                " In a container, bubblewrap needs seccomp=unconfined and unmasked /proc "
                "(envhub's docker runner starts sandboxed environments so: see docs/docker.md)."
            )
        raise SandboxUnavailable(
            f"bubblewrap is not usable here ({problem}). Install it (`apt-get install -y "
            "bubblewrap`), or accept a weaker sandbox with resource limits but NO isolation "
            f"by setting ENVHUB_SANDBOX=rlimit (or Sandbox(mode='rlimit')).{container}"
        )

    def _check_secrets(self, mode: str) -> None:
        """Prove that no secret path is readable from inside the sandbox, or refuse."""
        shown = ", ".join(self.secret_paths[:3])
        if mode == "rlimit":
            raise SandboxUnavailable(
                f"the sandbox must keep the tests and reference solutions ({shown}) away from "
                "the program, and rlimit mode cannot: the program sees the server's files and "
                "network. " + jail.HOW_TO_ISOLATE
            )
        inside = list(self.secret_paths)  # as bound inside, too (ro_binds may move them)
        for src, dest in self.ro_binds.items():
            root = os.path.abspath(src).rstrip("/")
            inside += [dest.rstrip("/") + p[len(root) :] for p in self.secret_paths
                       if p == root or p.startswith(root + "/")]  # fmt: skip
        job = {
            "argv": [self.python, "-I", "-S", "main.py"],
            "files": {"main.py": jail.SECRET_PROBE.format(paths=inside)},
            "python_main": "main.py",
        }
        limits = replace(self.limits, wall_s=max(self.limits.wall_s, 30.0))
        run = _Launch(mode, "exec", limits).run(self, job, b"")
        if not run.started or run.timed_out or run.exit_code != 0:
            raise SandboxError(
                f"the sandbox's secrecy probe failed (exit code {run.exit_code}): "
                f"{run.stderr.strip()[-300:] or 'no output'}"
            )
        exposed = [line for line in run.stdout.splitlines() if line.strip()]
        if exposed:
            raise SandboxUnavailable(
                f"a program in the sandbox can read {', '.join(exposed[:5])}, which holds the "
                "tests or reference solutions it is graded on. Keep such data out of /usr, "
                "the sandbox Python's prefix and the sandbox's ro_binds (the sandbox hides "
                "only the Python's site-packages)."
            )

    def _probe_bwrap(self) -> str | None:
        exe = shutil.which("bwrap")
        if exe is None:
            return "the `bwrap` command is not installed"
        last = ""
        for disable_userns in (True, False):
            prefix = jail.bwrap_prefix(exe, self.limits, self.python, self.ro_binds, disable_userns)
            uid = procs.pick_uid()
            argv, kwargs = procs.as_user(uid, [*prefix, self.python, "-I", "-S", "-c", "pass"])
            try:
                proc = subprocess.run(argv, capture_output=True, timeout=30, **kwargs)
            except (OSError, subprocess.TimeoutExpired) as e:
                return f"bwrap failed to run: {e}"
            finally:
                procs.release_uid(uid)
            if proc.returncode == 0:
                self._bwrap_prefix = prefix
                return None
            last = proc.stderr.decode(errors="replace").strip()
        hint = ""
        if "Permission denied" in last and os.geteuid() == 0:
            hint = (
                "; runs use an unprivileged uid, so every bound path (ro_binds, the Python) "
                "must be readable by other users"
            )
        return f"a trial run failed: {last[-300:]}{hint}"

    def runner_bootstrap(self) -> tuple[int, list[str]]:
        """The descriptor holding the compiled runner and the argv prefix that runs it."""
        assert self._runner_fd is not None
        boot = (
            f"import marshal,os;exec(marshal.loads(os.pread({self._runner_fd},"
            f"{self._runner_size},0)),{{'__name__':'__main__'}})"
        )
        return self._runner_fd, [self.python, "-I", "-S", "-c", boot]

    def close(self) -> None:
        """Stop the warm sandboxes, if any (runs clean up after themselves).

        The sandbox stays usable: later runs start cold. The compiled runner is shared by
        every sandbox of the process and stays.
        """
        if self._warm is not None:
            self._warm.close()

    def wait_warm(self, timeout_s: float = 30.0) -> bool:
        """Block until every kind of run seen so far has its warm sandboxes ready.

        True when they are (or ``warm`` is 0); False at the timeout (runs then start cold).
        """
        return self._warm is None or self._warm.wait_full(timeout_s)

    def bwrap_argv(self, limits: Limits) -> list[str]:
        """The bubblewrap command line (without the program) for ``limits``."""
        if self._bwrap_prefix is None:
            raise SandboxUnavailable("bubblewrap was not probed; use Sandbox.mode first")
        if limits.tmpfs_mb == self.limits.tmpfs_mb:
            return list(self._bwrap_prefix)
        disable = "--disable-userns" in self._bwrap_prefix
        return jail.bwrap_prefix(self._bwrap_prefix[0], limits, self.python, self.ro_binds, disable)


class _Launch:
    """One run: descriptors, the process, the read loop, the cleanup.

    Cold: :meth:`run` starts the sandbox with its job and supervises it. Warm: :meth:`spawn`
    starts it without a job (the runner blocks on a socket, its interpreter up, its limits
    set), and :meth:`deliver` hands it the job later; the run's clock starts then.
    """

    def __init__(self, mode: str, runner_mode: str, limits: Limits) -> None:
        self.mode, self.runner_mode, self.limits = mode, runner_mode, limits
        self.nonce = secrets.token_hex(pipes.NONCE_LEN // 2).encode()
        self.uid = procs.pick_uid()
        self.workdir: str | None = None
        self.cgroup: cgroup.Cgroup | None = None
        self.proc: procs.Process | None = None
        self.verdict_r: int | None = None
        self.job_sock: socket.socket | None = None

    def run(self, box: Sandbox, job: dict[str, Any], stdin: bytes) -> RunResult:
        """Start the sandbox with ``job`` and supervise it to the end."""
        try:
            job_fd = procs.memfd("envhub-job", repr(job).encode(), seal=True)
            try:
                self.spawn(box, job_fd, piped_stdin=bool(stdin))
            finally:
                os.close(job_fd)
            return self._supervise(stdin, time.monotonic())
        finally:
            self.cleanup()

    def deliver(self, job: dict[str, Any], stdin: bytes, limits: Limits) -> RunResult | None:
        """Give a warm sandbox its job and supervise it; ``None`` if it died while waiting."""
        assert self.job_sock is not None
        self.limits = limits
        try:
            job_fd = procs.memfd("envhub-job", repr(job).encode(), seal=True)
            try:
                socket.send_fds(self.job_sock, [b"j"], [job_fd])
            except OSError:
                self.discard()
                return None
            finally:
                os.close(job_fd)
                self.job_sock.close()
            result = self._supervise(stdin, time.monotonic())
            result.warm = True
            return result
        finally:
            self.cleanup()

    def wait_until_waiting(self, timeout_s: float) -> bool:
        """A warm sandbox's runner is up and blocked on its job socket (it says so)."""
        assert self.job_sock is not None
        self.job_sock.settimeout(timeout_s)
        try:
            return self.job_sock.recv(1) == b"w"
        except OSError:
            return False
        finally:
            self.job_sock.settimeout(None)

    def alive(self) -> bool:
        """The process is still running (a warm sandbox waiting for its job)."""
        return self.proc is not None and self.proc.poll() is None

    def discard(self) -> None:
        """Kill an unused warm sandbox and release what it held."""
        if self.job_sock is not None:
            self.job_sock.close()
        if self.proc is not None:
            procs.kill_group(self.proc)
            procs.wait(self.proc, killed=True)
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
        if self.verdict_r is not None:
            os.close(self.verdict_r)
            self.verdict_r = None
        self.cleanup()

    def cleanup(self) -> None:
        if self.cgroup is not None:
            self.cgroup.destroy()
            self.cgroup = None
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        procs.release_uid(self.uid)

    def spawn(self, box: Sandbox, job_fd: int | None, *, piped_stdin: bool = True) -> None:
        """Start the sandbox: with its job (``job_fd``), or warm (``None``): job comes later.

        ``box`` is not kept: a warm launch must not keep its sandbox alive.
        """
        nonce_fd = procs.memfd("envhub-nonce", self.nonce, seal=True)
        verdict_r, verdict_w = os.pipe()
        fds = [nonce_fd, verdict_w]
        runner_fd, runner = box.runner_bootstrap()
        config = {
            "mode": self.runner_mode,
            "limits": self.limits.rlimits(),
            "verdict_fd": verdict_w,
            "nonce_fd": nonce_fd,
            "pidns": self.mode == "bwrap",
        }
        if job_fd is None:
            self.job_sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            fds.append(theirs.detach())
            config["job_sock"] = fds[-1]
        else:
            fds.append(job_fd)
            config["job_fd"] = job_fd
        try:
            argv, cwd, env = self._command(box, runner, config)
            self.cgroup = cgroup.create(
                self.nonce[:16].decode(), self.limits.total_memory_mb, self.limits.nproc + 8
            )
            self.proc = procs.start(
                argv,
                uid=self.uid,
                cgroup=self.cgroup,
                python=box.python,
                piped_stdin=piped_stdin,
                pass_fds=(*fds, runner_fd),
                cwd=cwd,
                env=env,
            )
        except OSError as e:
            os.close(verdict_r)
            if self.job_sock is not None:
                self.job_sock.close()
            raise SandboxError(f"could not start the sandbox: {e}") from e
        finally:
            for fd in fds:
                if fd != job_fd:
                    os.close(fd)
        self.verdict_r = verdict_r

    def _command(
        self, box: Sandbox, runner: list[str], config: dict[str, Any]
    ) -> tuple[list[str], str | None, dict[str, str]]:
        if self.mode == "bwrap":
            config["env"] = jail.sandbox_env("/tmp")
            argv = [*box.bwrap_argv(self.limits), *runner, repr(config)]
            return argv, None, {"PATH": "/usr/bin:/bin"}
        self.workdir = tempfile.mkdtemp(prefix="envhub-sandbox-")
        if self.uid is not None:
            os.chown(self.workdir, self.uid, self.uid)
        config["env"] = jail.sandbox_env(self.workdir)
        return [*runner, repr(config)], self.workdir, dict(config["env"])

    def _supervise(self, stdin: bytes, start: float) -> RunResult:
        proc, verdict_r = self.proc, self.verdict_r
        assert proc is not None and verdict_r is not None
        self.verdict_r = None  # the reader closes it
        reader = pipes.Reader(proc, verdict_r, stdin, self.limits.output_bytes)
        deadline = start + self.limits.wall_s
        timed_out = not reader.pump(deadline)
        if timed_out:
            procs.kill_group(proc)
        exit_code = procs.wait(proc, timed_out)
        if timed_out or self.mode == "rlimit":
            procs.sweep_uid(self.uid)
        reader.close()
        messages, rejected = pipes.parse_verdicts(bytes(reader.verdict), self.nonce)
        ready = next((m for m in messages if m.get("event") == "ready"), None)
        return RunResult(
            exit_code=None if timed_out else exit_code,
            timed_out=timed_out,
            stdout=reader.out[1].decode("utf-8", errors="replace"),
            stderr=reader.out[2].decode("utf-8", errors="replace"),
            stdout_truncated=reader.truncated[1],
            stderr_truncated=reader.truncated[2],
            duration_s=time.monotonic() - start,
            mode=self.mode,
            uid=self.uid,
            messages=[m for m in messages if m is not ready],
            rejected=rejected,
            started=ready is not None,
            hardened=bool(ready and ready.get("hardened")),
            cgroup=self.cgroup is not None,
        )


WARM_START_TIMEOUT_S = 30.0
"""How long a warm sandbox may take to come up before it is discarded."""


class _WarmPool:
    """Warm sandboxes, ``size`` per kind of run, refilled by one background thread.

    A kind is the runner's mode and the limits a sandbox is started with (``wall_s`` and
    ``output_bytes`` are enforced by the parent, so they do not split kinds). The first run
    of a kind starts cold and asks for that kind; the filler then keeps ``size`` of it ready.
    The filler is a long-lived thread on purpose: ``--die-with-parent`` ties a sandbox to the
    thread that started it.
    """

    def __init__(self, box: Sandbox, size: int) -> None:
        self.box = weakref.ref(box)
        self.size = size
        self.ready: dict[tuple[str, Limits], list[_Launch]] = {}
        self.cond = threading.Condition()
        self.closed = False
        self.thread: threading.Thread | None = None
        self.failures = 0

    @staticmethod
    def kind(runner_mode: str, limits: Limits) -> tuple[str, Limits]:
        return runner_mode, replace(limits, wall_s=0.0, output_bytes=0)

    def take(self, runner_mode: str, limits: Limits) -> _Launch | None:
        """A live warm sandbox of this kind, or ``None`` (then one is asked for)."""
        key = self.kind(runner_mode, limits)
        dead = []
        found = None
        with self.cond:
            if self.closed:
                return None
            queue = self.ready.setdefault(key, [])
            while queue and found is None:
                launch = queue.pop(0)
                if launch.alive():
                    found = launch
                else:
                    dead.append(launch)
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._fill, name="envhub-sandbox-warm", daemon=True
                )
                self.thread.start()
            self.cond.notify()
        for launch in dead:
            launch.discard()
        return found

    def wait_full(self, timeout_s: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.closed or self._wanted() is None, timeout_s)

    def _wanted(self) -> tuple[str, Limits] | None:
        return next((k for k, q in self.ready.items() if len(q) < self.size), None)

    def _fill(self) -> None:
        while True:
            with self.cond:
                while not self.closed and self._wanted() is None:
                    self.cond.wait()
                if self.closed:
                    return
                runner_mode, limits = key = self._wanted()  # type: ignore[misc]
            box = self.box()
            if box is None:
                return
            launch = _Launch(box.mode, runner_mode, limits)
            try:
                launch.spawn(box, None)
            except Exception:  # noqa: BLE001 (runs go cold; the cold path reports why)
                launch.cleanup()
                self.failures += 1
                time.sleep(min(5.0, 0.1 * 2**self.failures))
                continue
            finally:
                del box
            if not launch.wait_until_waiting(WARM_START_TIMEOUT_S):
                launch.discard()  # it died starting: the cold path will say why, if it can
                self.failures += 1
                time.sleep(min(5.0, 0.1 * 2**self.failures))
                continue
            self.failures = 0
            with self.cond:
                if not self.closed:
                    self.ready[key].append(launch)
                    self.cond.notify_all()
                    continue
            launch.discard()
            return

    def close(self) -> None:
        """Discard the warm sandboxes, and wait for a start in flight to be discarded too.

        (The filler drops its lock while it starts one: without the wait, a start begun before
        ``close`` could end after it returns.)
        """
        with self.cond:
            self.closed = True
            launches = [launch for queue in self.ready.values() for launch in queue]
            self.ready.clear()
            self.cond.notify_all()
        for launch in launches:
            launch.discard()
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(WARM_START_TIMEOUT_S + 5.0)
