"""``envhub serve`` as a child process on a free loopback port (``make(name, runner="http")``)."""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import httpx

from ..errors import ConfigError, TransportError
from ..lifetime import child_environment
from ..spec import EnvSpec
from .venv import is_current, python_of


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ServerProcess:
    """An ``envhub serve`` child process on a loopback port, stopped on :meth:`close`.

    It does not outlive this process: :meth:`close` runs at interpreter exit for every server
    still open (an uncaught exception included), and the child stops by itself when this
    process dies without exiting (SIGKILL, a crash), see :mod:`envhub.lifetime`. Its log is an
    anonymous temporary file, gone with the last descriptor whatever happens.
    """

    def __init__(
        self,
        spec: EnvSpec,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = 180,
        python: str = sys.executable,
        command: Callable[[str, int], list[str]] | None = None,
        cwd: str | None = None,
    ):
        """Start the server and wait until ``/health`` answers.

        The free port is picked before the child binds it, so another process may take it in
        between: then the start is retried on a new port (three tries). ``python`` is the
        interpreter that runs it (another virtual environment's, with envhub installed there).
        ``command(host, port)``, run in ``cwd``, starts another server instead of ``envhub
        serve`` (an OpenEnv environment's uvicorn): one that does not follow
        :mod:`envhub.lifetime`, so it outlives a parent killed with SIGKILL.
        """
        self._owner_pid = os.getpid()
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = _new_log()
        _open.add(self)
        for attempt in range(3):
            self.port = free_port(host)
            self.url = f"http://{host}:{self.port}"
            cmd = command(host, self.port) if command else [
                python, "-m", "envhub.cli", "serve", spec.name,
                "--host", host, "--port", str(self.port),
                "--spec-json", spec.model_dump_json(), "--answers",
            ]  # fmt: skip
            env = child_environment({**os.environ, "PYTHONUNBUFFERED": "1"})
            if self.proc is not None:  # the last try lost its port: a fresh log for this one
                _stop(self.proc)
                self._log.close()
                self._log = _new_log()
            self.proc = subprocess.Popen(
                cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=cwd
            )
            if self._wait(startup_timeout):
                return
            tail = self._tail()
            if "address already in use" not in tail.lower() or attempt == 2:
                self.close()
                what = "envhub serve" if command is None else cmd[0]
                raise TransportError(f"{what} did not become healthy at {self.url}:\n{tail}")

    def _wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        return False

    def _tail(self) -> str:
        """The last 2000 bytes of the server's log (read in place: the child shares the file)."""
        fd = self._log.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - 2000)
        return os.pread(fd, size - start, start).decode(errors="replace")

    def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s); idempotent."""
        if os.getpid() != self._owner_pid:
            return  # a forked child: the server belongs to the parent
        _open.discard(self)
        if self.proc is not None:
            _stop(self.proc)
        self._log.close()


def _new_log() -> Any:
    """An anonymous temporary file for a server's output: no name, so nothing to leave behind."""
    return tempfile.TemporaryFile(prefix="envhub-serve-", suffix=".log")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited 5 s later; reaped either way."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_open: set[ServerProcess] = set()
"""Servers started by this process and not closed yet: :func:`_close_open` stops them at exit."""


@atexit.register
def _close_open() -> None:
    for server in list(_open):
        server.close()


def spawn_server(spec: EnvSpec) -> ServerProcess:
    """Start ``envhub serve`` for ``spec`` (overrides included) on a free loopback port.

    Run by the Python of the spec's own venv where it has one (``spec.venv``), else by this one.
    """
    if spec.venv is None or is_current(spec.venv):
        return ServerProcess(spec)
    python = python_of(spec.venv)
    if not python.exists():
        raise ConfigError(
            f"{spec.name} is served from the venv {spec.venv}, which is gone: pull it again "
            f"(`envhub pull {spec.name} --venv {spec.venv}`) or `envhub unregister {spec.id}`"
        )
    return ServerProcess(spec, python=str(python))
