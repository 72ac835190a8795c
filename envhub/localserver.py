"""``envhub serve`` as a child process on a free loopback port (``make(name, runner="http")``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time

import httpx

from .errors import TransportError
from .spec import EnvSpec


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ServerProcess:
    """An ``envhub serve`` child process on a loopback port, stopped on :meth:`close`."""

    def __init__(self, spec: EnvSpec, *, host: str = "127.0.0.1", startup_timeout: float = 180):
        """Start the server and wait until ``/health`` answers.

        The free port is picked before the child binds it, so another process may take it in
        between: then the start is retried on a new port (three tries).
        """
        self._log = tempfile.NamedTemporaryFile(prefix="envhub-serve-", suffix=".log", delete=False)
        for attempt in range(3):
            self.port = free_port(host)
            self.url = f"http://{host}:{self.port}"
            cmd = [
                sys.executable, "-m", "envhub.cli", "serve", spec.name,
                "--host", host, "--port", str(self.port),
                "--spec-json", spec.model_dump_json(),
            ]  # fmt: skip
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            self._log.truncate(0)
            self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
            if self._wait(startup_timeout):
                return
            tail = self._tail()
            if "address already in use" not in tail.lower() or attempt == 2:
                self.close()
                raise TransportError(f"envhub serve did not become healthy at {self.url}:\n{tail}")

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
        with open(self._log.name, errors="replace") as f:
            return f.read()[-2000:]

    def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        try:
            os.unlink(self._log.name)
        except OSError:
            pass


def spawn_server(spec: EnvSpec) -> ServerProcess:
    """Start ``envhub serve`` for ``spec`` (overrides included) on a free loopback port."""
    return ServerProcess(spec)
