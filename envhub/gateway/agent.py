"""Agent programs as episodes: :class:`AgentConfig`, :class:`AgentRunner` and the status table.

An agent is a program of its own (``command``: run once per episode) or an async function
(``callable``: ``module:function``, called as ``await fn(client, task)`` with an
``openai.AsyncOpenAI`` client bound to the episode). A command runs in its own session and
process group, in a fresh working folder, with:

* ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` (the episode's own key), ``OPENAI_MODEL``;
* the task as JSON on stdin and in the file named by ``ENVHUB_TASK_FILE``:
  ``{"env", "task_id", "seed", "messages": [opening messages], "tools": [...] | null}``;
* ``ENVHUB_EPISODE_ID``;
* where the runner gives one, ``ENVHUB_EPISODE_URL`` (also the task's ``episode_url``): ``POST
  {url}/step`` with ``{"message": <a reply the model gave>}`` and the episode's key steps the
  environment and answers with its step result (messages, reward, terminated, truncated,
  info). With the ``openai`` SDK: ``client.post("/episode/step", body=..., cast_to=dict)``.
  Only the model's own replies are accepted, each once.

Where the host allows it (root, or a delegated hierarchy), the program and everything it
starts share one cgroup capping memory (``memory_mb``) and processes (``max_processes``): a
fork bomb hits the cap, and the episode's end kills every process of the group, ``setsid``
escapees included. Elsewhere the process group is killed (``SIGKILL``) at the end and each
process is capped by ``prlimit`` (which does not bind root). Nothing is left running.

The episode's status (:func:`agent_status`), documented in ``envhub/gateway/README.md``:

==============================================================  =================  ========
what happened                                                    status             scored
==============================================================  =================  ========
a model call failed in the machinery (backend down, gateway bug)  ``infra_error``   no
the program could not start, or never got a reply from the model  ``infra_error``   no
the model replied, then the program ran past ``timeout_s`` [1]   ``timeout``        0
the model replied, then the program crashed or exited non-zero   ``invalid_action`` 0
a budget (``max_calls``/``max_tokens``) ran out                  env's verdict      yes,
                                                                                    truncated
the program exited 0 after the model replied                     env's verdict      yes
==============================================================  =================  ========

[1] The program's own time: seconds while one of its model calls is in flight at the gateway
(queued behind other episodes, generating) are not counted, so a loaded engine is never charged
to the model as its ``timeout``. A call the engine never answers is bounded by the backend
(:class:`~envhub.gateway.backends.EngineBackend`'s ``call_timeout_s``): ``infra_error``.

"Scored" means the environment judges the model's last reply *as the gateway recorded it*:
an ``assistant`` turn the agent wrote itself is never scored nor trained.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envhub.types import Status

from .config import AgentConfig
from .episodes import GatewayEpisode
from .service import Gateway

TAIL = 2000
"""Characters of an agent's stderr kept in the trace."""


@dataclass
class AgentRun:
    """What one run of the agent did (the gateway's record and the program's end)."""

    episode: GatewayEpisode
    exit_code: int | None = None
    """The program's exit status (negative: killed by that signal); None for a callable."""
    timed_out: bool = False
    start_error: str | None = None
    """Why the program could not start (missing file, bad callable), or None."""
    crash: str | None = None
    """A callable's exception, or None."""
    killed_for_budget: bool = False
    wall_s: float = 0.0
    model_wait_s: float = 0.0
    """Seconds of ``wall_s`` with a model call in flight (not counted against ``timeout_s``)."""
    stderr_tail: str = ""
    cgroup: bool = False
    """The run had a cgroup of its own (memory and process caps for the whole tree)."""
    pid: int | None = None
    """The program's pid (its process group's id too), once started."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        """Model calls the gateway served for this run."""
        return len(self.episode.recorder.calls)

    @property
    def last_reply(self) -> dict[str, Any] | None:
        """The model's last reply as the gateway recorded it."""
        return self.episode.recorder.last_reply

    def summary(self) -> dict[str, Any]:
        """The ``agent`` field of a trace line."""
        return {
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "start_error": self.start_error,
            "crash": self.crash,
            "budget": self.episode.truncated,
            "wall_s": round(self.wall_s, 3),
            "model_wait_s": round(self.model_wait_s, 3),
            "requests": self.episode.requests,
            "cgroup": self.cgroup,
            "stderr_tail": self.stderr_tail,
        }


def agent_status(run: AgentRun) -> tuple[Status | None, str | None]:
    """The status the table above gives ``run``: ``(None, None)`` when the env should score.

    Otherwise ``(status, error)``; the episode's reward is then 0 (``timeout``,
    ``invalid_action``) or it is dropped (``infra_error``).
    """
    ep = run.episode
    if ep.infra_error:
        return Status.INFRA_ERROR, f"the machinery failed a model call: {ep.infra_error}"
    if run.start_error:
        return Status.INFRA_ERROR, f"the agent did not start: {run.start_error}"
    if run.calls == 0:
        how = "timed out" if run.timed_out else f"ended ({_ending(run)})"
        return Status.INFRA_ERROR, (
            f"the agent {how} without a model reply ({ep.requests} requests reached the "
            f"gateway); stderr: {run.stderr_tail[-300:]!r}"
        )
    if ep.truncated:
        return None, None
    if run.timed_out:
        return Status.TIMEOUT, f"the agent ran past its {run.extra.get('timeout_s')} s"
    if run.crash or (run.exit_code is not None and run.exit_code != 0):
        return Status.INVALID_ACTION, f"the agent failed after the model spoke: {_ending(run)}"
    return None, None


def _ending(run: AgentRun) -> str:
    if run.crash:
        return run.crash
    if run.exit_code is None:
        return "no exit status"
    if run.exit_code < 0:
        return f"killed by signal {-run.exit_code}"
    return f"exit status {run.exit_code}"


class AgentRunner:
    """Runs an :class:`AgentConfig`'s agent against a gateway, one episode per :meth:`run`.

    Args:
        config: The agent.
        gateway: The gateway that serves the model (in this process).
        base_url: The gateway's OpenAI base URL (``http://127.0.0.1:PORT/v1``).
        model: The model id given as ``OPENAI_MODEL``.
        workdir: Where each run's working folder is made (a temporary folder by default).
    """

    def __init__(
        self,
        config: AgentConfig,
        gateway: Gateway,
        base_url: str,
        model: str,
        *,
        workdir: Path | None = None,
    ) -> None:
        """Prepare; each :meth:`run` opens its own episode at the gateway."""
        self.config = config
        self.gateway = gateway
        self.base_url = base_url
        self.model = model
        self.workdir = workdir
        self._fn: Callable[..., Awaitable[Any]] | None = None
        if config.callable:
            self._fn = load_callable(config.callable)

    async def run(self, task: dict[str, Any], episode_id: str, stepper: Any = None) -> AgentRun:
        """Run the agent once on ``task`` (see the module docstring); never raises for it.

        ``stepper``: ``async (reply) -> step result dict``, the environment the agent may
        answer through (its episode URL, ``ENVHUB_EPISODE_URL``); None: none.
        """
        ep = self.gateway.open(episode_id, self.config.budget)
        ep.stepper = stepper
        if stepper is not None:
            task = {**task, "episode_url": f"{self.base_url}/episode"}
        run = AgentRun(ep, extra={"timeout_s": self.config.timeout_s})
        t0 = time.monotonic()
        try:
            if self._fn is not None:
                await self._run_callable(run, task)
            else:
                await self._run_command(run, task)
        finally:
            self.gateway.close(ep)
            run.wall_s = time.monotonic() - t0
            run.model_wait_s = ep.waited_s()
        return run

    def _past_timeout(self, run: AgentRun, started: float) -> bool:
        """The program's own time (wall time less its model calls' waits) is past ``timeout_s``."""
        own = time.monotonic() - started - run.episode.waited_s()
        return own > self.config.timeout_s

    async def _run_callable(self, run: AgentRun, task: dict[str, Any]) -> None:
        import openai

        assert self._fn is not None
        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=run.episode.key, max_retries=0)
        try:
            await self._until_budget(self._fn(client, task), run)
            run.exit_code = None if run.timed_out else 0
        except Exception as e:  # noqa: BLE001 - the agent's own failure is data (the table)
            run.crash = f"{type(e).__name__}: {e}"
        finally:
            await client.close()

    async def _until_budget(self, coro: Awaitable[Any], run: AgentRun) -> Any:
        """Await the callable; cancel it when the budget is spent or its own time runs out."""
        started = time.monotonic()
        task = asyncio.ensure_future(coro)
        while not task.done():
            await asyncio.wait({task}, timeout=0.05)
            if task.done():
                break
            if run.episode.truncated:
                run.killed_for_budget = True
            elif self._past_timeout(run, started):
                run.timed_out = True
            else:
                continue
            task.cancel()
            await asyncio.wait({task}, timeout=5)  # a callable that ignores cancellation
            return None
        return task.result()

    async def _run_command(self, run: AgentRun, task: dict[str, Any]) -> None:
        from envhub.sandbox import cgroup as cgroups

        assert self.config.command is not None
        folder = Path(tempfile.mkdtemp(prefix="envhub-agent-", dir=self.workdir))
        payload = json.dumps(task, ensure_ascii=False).encode()
        (folder / "task.json").write_bytes(payload)
        group = cgroups.create(
            f"agent-{os.getpid()}-{run.episode.key[-12:]}",
            self.config.memory_mb,
            self.config.max_processes,
        )
        run.cgroup = group is not None
        argv = [_absolute(a) for a in self.config.command]
        if group is not None:
            argv = group.wrap(argv)
        elif shutil.which("prlimit"):
            argv = ["prlimit", f"--nproc={self.config.max_processes}", "--", *argv]
        stderr_path = folder / ".stderr"
        try:
            await self._spawn_and_wait(run, argv, folder, payload, stderr_path)
        finally:
            if group is not None:
                await asyncio.to_thread(group.destroy)
            run.stderr_tail = _tail(stderr_path)
            shutil.rmtree(folder, ignore_errors=True)

    async def _spawn_and_wait(
        self, run: AgentRun, argv: list[str], folder: Path, payload: bytes, stderr_path: Path
    ) -> None:
        with open(stderr_path, "wb") as err, open(folder / ".stdout", "wb") as out:
            try:
                proc = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=out,
                    stderr=err,
                    cwd=folder,
                    env=self._environment(run, folder),
                    start_new_session=True,
                )
            except OSError as e:
                run.start_error = f"{argv[0]}: {e}"
                return
            run.pid = proc.pid
            feeder = asyncio.ensure_future(_feed(proc, payload))
            try:
                await self._wait(proc, run)
            finally:
                _kill_group(proc.pid)
                feeder.cancel()
                try:
                    await asyncio.wait_for(proc.wait(), 10)
                except asyncio.TimeoutError:
                    pass
            if run.exit_code is None and not run.timed_out:
                run.exit_code = proc.returncode

    async def _wait(self, proc: asyncio.subprocess.Process, run: AgentRun) -> None:
        started = time.monotonic()
        while True:
            try:
                run.exit_code = await asyncio.wait_for(proc.wait(), 0.1)
                return
            except asyncio.TimeoutError:
                pass
            if run.episode.truncated:  # a spent budget ends the episode now
                run.killed_for_budget = True
                return
            if self._past_timeout(run, started):
                run.timed_out = True
                return

    def _environment(self, run: AgentRun, folder: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVHUB_"))}
        env.update(
            OPENAI_BASE_URL=self.base_url,
            OPENAI_API_KEY=run.episode.key,
            OPENAI_MODEL=self.model,
            ENVHUB_TASK_FILE=str(folder / "task.json"),
            ENVHUB_EPISODE_ID=run.episode.id,
        )
        if run.episode.stepper is not None:
            env["ENVHUB_EPISODE_URL"] = f"{self.base_url}/episode"
        return env


async def _feed(proc: asyncio.subprocess.Process, payload: bytes) -> None:
    """Write the task to the program's stdin and close it (a program that never reads is fine)."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(payload)
        await proc.stdin.drain()
        proc.stdin.close()
    except (BrokenPipeError, ConnectionResetError):
        pass


def _absolute(arg: str) -> str:
    """An argument naming an existing file by a relative path, made absolute.

    The program runs in a folder of its own, so ``python examples/agents/x.py`` is resolved
    against the directory envhub was started in, where the user wrote it.
    """
    if os.path.isabs(arg) or os.sep not in arg or not os.path.exists(arg):
        return arg
    return os.path.abspath(arg)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - TAIL))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def load_callable(dotted: str) -> Callable[..., Awaitable[Any]]:
    """The async function named ``module:function``, or a :class:`ValueError` saying why not."""
    module, _, name = dotted.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"agent.callable {dotted!r}: {e}") from e
    if not asyncio.iscoroutinefunction(fn):
        raise ValueError(f"agent.callable {dotted!r} must be an async function (async def)")
    return fn


def task_payload(
    env: str, task_id: str, seed: int | None, messages: list[Any], tools: list | None
) -> dict[str, Any]:
    """The JSON an agent receives on stdin (see the module docstring)."""
    return {
        "env": env,
        "task_id": task_id,
        "seed": seed,
        "messages": [
            m if isinstance(m, dict) else m.model_dump(exclude_none=True) for m in messages
        ],
        "tools": tools,
    }
