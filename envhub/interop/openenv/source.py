"""The OpenEnv server of a card in an OpenEnv catalog (``options.catalog`` and ``options.card``).

A card names its environment's source: a GitHub repository, a commit and a folder holding an
``openenv.yaml``. On first use envhub fetches that commit with ``git`` (into
``ENVHUB_HOME/openenv/sources/COMMIT``, reused), and runs the folder's server as OpenEnv's own
tooling does (``uvicorn APP`` in the folder, ``APP`` the manifest's ``app``, default
``server.app:app``) on a free loopback port, with ``options.python`` or, by default, a venv made
for the folder (``pip install FOLDER``: its ``pyproject.toml`` names its dependencies). The
process stops on ``close`` and at exit.

Fetching, installing and starting are machinery: each failure is an :class:`InfraError`
saying what failed. A card that is envhub's own (exported by ``envhub catalog export``) is
refused at registration: play it by its name in envhub's catalog. ``git`` reads its own
configuration, so a mirror (``url.<mirror>.insteadOf``) serves a repository offline.
"""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
import threading
from pathlib import Path

import yaml

from envhub.client.child_server import ServerProcess
from envhub.datasets import envhub_home
from envhub.errors import EnvhubError, InfraError
from envhub.spec import EnvSpec

from ..venvs import ensure_venv
from . import catalog


class SourceServer:
    """A catalog card's OpenEnv server, run from its source: started on first use."""

    def __init__(
        self, spec: EnvSpec, where: str, card: str, python: str | None, start_timeout_s: float
    ) -> None:
        """Find the card (a :class:`~.catalog.CatalogError` says why not); start nothing yet."""
        self.spec, self.python, self.start_timeout_s = spec, python, start_timeout_s
        found = catalog.find(catalog.load(where), card)
        if found["envhub"]:
            raise catalog.CatalogError(
                f"{spec.name}: the card {card!r} is envhub's own environment "
                f"{found['envhub'].get('id')}: play it by name (envhub.make), or give "
                "options.base_url of its `envhub serve NAME --openenv`"
            )
        self.source = catalog.source_of(found)
        self.generation = 0
        self._server: ServerProcess | None = None
        self._lock = threading.Lock()
        self._closed = False

    def url(self) -> str:
        """The server's URL; the first call fetches the source and starts the server."""
        with self._lock:
            if self._closed:
                raise InfraError(f"{self.spec.name}: its OpenEnv server was closed")
            if self._server is None:
                self._server = self._start()
            return self._server.url

    def _start(self) -> ServerProcess:
        folder = _fetched(self.source) / self.source["path"]
        manifest = folder / "openenv.yaml"
        if not manifest.is_file():
            raise InfraError(
                f"{self.spec.name}: the card's source has no {manifest.name} at "
                f"{self.source['path']} (commit {self.source['revision']})"
            )
        app = (yaml.safe_load(manifest.read_text()) or {}).get("app") or "server.app:app"
        python = self.python or str(self._venv(folder))

        def command(host: str, port: int) -> list[str]:
            return [python, "-m", "uvicorn", app, "--host", host, "--port", str(port)]

        try:
            return ServerProcess(
                self.spec, startup_timeout=self.start_timeout_s, command=command, cwd=str(folder)
            )
        except EnvhubError as e:
            raise InfraError(
                f"{self.spec.name}: the OpenEnv server of the card did not "
                f"come up (options.start_timeout_s {self.start_timeout_s:g}): {e}"
            ) from e

    def _venv(self, folder: Path) -> Path:
        key = hashlib.sha256(f"{self.source['uri']}\n{self.source['path']}".encode()).hexdigest()
        name = f"openenv-{key[:12]}-{self.source['revision'][:12]}"
        return ensure_venv(envhub_home() / "venvs" / name, [str(folder)])

    def revived(self, generation: int) -> bool:
        """After a call failed: restart a server that died (once per generation)."""
        with self._lock:
            server = self._server
            if server is None or server.proc is None or server.proc.poll() is None:
                return False
            if generation == self.generation:
                server.close()
                self._server = self._start()
                self.generation += 1
            return True

    def close(self) -> None:
        """Stop the server (idempotent)."""
        with self._lock:
            self._closed = True
            if self._server is not None:
                self._server.close()


def _fetched(source: dict[str, str]) -> Path:
    """A checkout of the card's commit (``git fetch`` of that one commit), made once."""
    revision, uri = source["revision"], source["uri"]
    folder = envhub_home() / "openenv" / "sources" / revision
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{revision}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        head = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        )
        if (folder / ".git").is_dir() and head.stdout.strip() == revision:
            return folder
        folder.mkdir(exist_ok=True)
        _git(folder, "init", "-q")
        _git(folder, "fetch", "-q", "--depth", "1", uri, revision)
        _git(folder, "checkout", "-q", "--detach", "FETCH_HEAD")
    return folder


def _git(folder: Path, *args: str) -> str:
    cmd = ["git", "-C", str(folder), *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InfraError(f"cannot fetch the card's source ({' '.join(cmd)}): {e}") from e
    if done.returncode != 0:
        raise InfraError(
            f"cannot fetch the card's source ({' '.join(cmd)}): {done.stderr.strip()[-2000:]}"
        )
    return done.stdout.strip()
