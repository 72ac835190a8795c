"""The toy OpenEnv server (``toy_openenv.py``) in tests: start it, register it, play it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

import httpx
from children import stop

import envhub
from envhub.client.child_server import free_port

TOY = Path(__file__).with_name("toy_openenv.py")

GAMES = {  # seed -> guesses; the word of seed s is WORDS[s % 4] (apple berry cherry damson)
    "seed-0": ["apple"],
    "seed-2": ["damson", "cherry"],
    "seed-3": ["apple", "berry", "cherry"],
}
"""Each guess list and the rewards the toy's rules give: 1.0 for the right word, else 0."""
EXPECTED = {"seed-0": [1.0], "seed-2": [0.0, 1.0], "seed-3": [0.0, 0.0, 0.0]}
"""The rewards of :data:`GAMES`."""


@contextlib.contextmanager
def toy_server(python: str | Path = sys.executable):
    """The toy OpenEnv server in a process of its own (so a test can kill it).

    ``python``: the Python whose OpenEnv serves it (an OpenEnv release's venv), this one's
    by default.
    """
    port = free_port()
    proc = subprocess.Popen([str(python), str(TOY), str(port)])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(url + "/health", timeout=0.5).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    try:
        yield url, proc
    finally:
        stop(proc)


def register(tmp_path: Path, name: str = "guess", **options: object) -> str:
    """Register an OpenEnv entry ``name`` with ``options`` (``base_url`` or ``image``...)."""
    opts = ", ".join(f"{k}: {v!r}" for k, v in options.items())
    (tmp_path / f"{name}.yaml").write_text(
        f"name: {name}\nentry_point: envhub.interop.openenv:OpenEnvEnv\nmax_turns: 4\n"
        f"dataset: {{size: 8}}\noptions: {{{opts}}}\n"
    )
    envhub.register(tmp_path / f"{name}.yaml")
    return name


def play(env) -> dict[str, list[float]]:
    """The rewards of :data:`GAMES` played on ``env``."""
    rewards = {}
    for task_id, guesses in GAMES.items():
        opened = env.reset(task_id=task_id)
        assert "guess a fruit" in opened.messages[-1].content
        rewards[task_id] = [env.step(word).reward for word in guesses]
    return rewards


@contextlib.contextmanager
def envhub_serving_openenv(name: str):
    """``envhub serve NAME --openenv`` in a process of its own, as a user starts it: its URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "envhub.cli", "serve", name, "--openenv", "--port", str(port)]
    proc = subprocess.Popen(cmd)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=0.5).json() == {"status": "healthy"}:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
            if proc.poll() is not None:
                raise RuntimeError(f"envhub serve exited with {proc.returncode}")
        else:
            raise RuntimeError(f"envhub serve {name} --openenv did not answer /health in 120 s")
        yield url
    finally:
        stop(proc)
