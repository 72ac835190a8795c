"""``envhub eval --agent CMD``: an agent program plays each episode, the model behind the gateway.

The run starts a :class:`~envhub.gateway.service.Gateway` on a loopback port, in front of the
local model (``--model PATH``: an envhub engine, token-exact) or an endpoint (``--base-url``:
forwarded upstream). Each episode resets the environment, runs the agent once on the opening
messages (:class:`~envhub.gateway.agent.AgentRunner`), and scores it by the table of
:mod:`envhub.gateway.agent`: the environment judges the model's last reply as the gateway
recorded it. Every episode's calls go to ``RUN/traces/episodes.jsonl``
(:mod:`envhub.gateway.trace`); pass@k, resume and the summary are the run's as usual.

Each agent also gets an episode URL (``ENVHUB_EPISODE_URL``, see :mod:`envhub.gateway.agent`)
through which it may answer the environment itself, turn by turn (tool calls, games): then the
environment's own steps score the episode (finished from outside if the agent stops early), and
only replies the model gave can step it. An agent that never uses it is scored on its last
reply, so a program that knows nothing of envhub can be evaluated.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..core import Env
from ..gateway.agent import AgentRun, AgentRunner, agent_status, task_payload
from ..gateway.backends import Backend, BackendError, EngineBackend, UpstreamBackend
from ..gateway.config import AgentConfig
from ..gateway.server import GatewayServer
from ..gateway.service import Gateway
from ..gateway.trace import TraceWriter
from ..types import FunctionCall, Message, Status, ToolCall
from .metrics import is_passed
from .runner import (
    ENV_FAILURES,
    EpisodeJob,
    Evaluation,
    _describe,
    _failure_status,
    _finish,
    new_record,
    record_step,
    start_episode,
)
from .store import EpisodeRecord, EvalConfig, RunStore


class GatewayModel:
    """The ``model`` of an agent evaluation: the gateway's backend, served while the run lasts."""

    def __init__(self, backend: Backend, default_max_tokens: int) -> None:
        """Serve ``backend`` on a loopback port (started here)."""
        self.backend = backend
        self.name = backend.name
        self.gateway = Gateway(backend, default_max_tokens=default_max_tokens)
        self.server = GatewayServer(self.gateway).start()
        self.on_close: Any = None

    async def aclose(self) -> None:
        """Stop the server and release the backend (and the engine)."""
        self.server.stop()
        await self.backend.aclose()
        if self.on_close is not None:
            self.on_close()


def build_gateway_model(config: EvalConfig, api_key: str | None, engine: str) -> GatewayModel:
    """The gateway in front of ``--model`` (a local engine) or ``--base-url`` (upstream)."""
    if config.base_url:
        if not config.model:
            raise ValueError("--agent with --base-url needs --model NAME (the upstream's model)")
        return GatewayModel(
            UpstreamBackend(config.base_url, config.model, api_key=api_key), config.max_tokens
        )
    from ..engines.weights import resolve_model
    from .local import _auto_engine, _build_engine, choose_engine

    if not config.model:
        raise ValueError("--agent needs --model PATH (a local model) or --base-url URL")
    path = resolve_model(config.model)
    batch = min(config.agent.concurrency if config.agent else 8, 64)
    if engine == "auto":
        eng, _ = _auto_engine(path, batch)
    else:
        eng = _build_engine(path, choose_engine(engine), batch)
    model = GatewayModel(EngineBackend(eng, config.model, max_batch=batch), config.max_tokens)
    model.on_close = getattr(eng, "close", None)
    return model


class AgentEvaluation(Evaluation):
    """An :class:`Evaluation` whose episodes an agent program plays (see the module docstring)."""

    def __init__(self, config: EvalConfig, model: GatewayModel, store: RunStore, *a: Any, **k: Any):
        """As :class:`Evaluation`, with the gateway model and ``config.agent`` set."""
        super().__init__(config, model, store, *a, **k)
        assert config.agent is not None
        self.agent: AgentConfig = config.agent
        self.config = config.model_copy(update={"concurrency": self.agent.concurrency})
        self.runner = AgentRunner(
            self.agent, model.gateway, model.server.base_url, model.name or "model"
        )
        self.trace = TraceWriter(store.dir)

    async def episode(self, env: Env, job: EpisodeJob) -> EpisodeRecord:
        """Reset, run the agent, score its last reply by the status table, trace it."""
        t0 = time.perf_counter()
        rec = new_record(job, self.model.name)
        reset = await start_episode(env, rec, job, t0)
        if reset is None:
            return rec
        task = task_payload(job.env, job.task_id, job.seed, reset.messages, reset.info.tools)
        stepper = _stepper(env, rec, asyncio.get_running_loop())
        run = await self.runner.run(task, f"{job.env}/{job.task_id}/{job.sample}", stepper)
        await self._score(env, rec, run)
        rec.messages = [*reset.messages, *_reply_messages(run)]
        rec.turns = run.calls  # model calls (the environment's steps are in the trace)
        calls = run.episode.recorder.calls
        if calls and calls[0].prompt_ids:  # an engine's counts (an upstream reports none here)
            rec.prompt_tokens = sum(len(c.prompt_ids) for c in calls)
            rec.completion_tokens = run.episode.recorder.sampled_tokens
        rec.passed = is_passed(
            rec.status, rec.reward, rec.components, job.primary, self.config.pass_threshold
        )
        rec.wall_s = round(time.perf_counter() - t0, 4)
        self._trace(rec, run)
        return rec

    async def _score(self, env: Env, rec: EpisodeRecord, run: AgentRun) -> None:
        if rec.status in (Status.INFRA_ERROR, Status.ENV_ERROR) and rec.error:
            return  # the environment failed behind the episode URL: its status stands
        status, error = agent_status(run)
        if status is not None:
            rec.status, rec.error, rec.truncated = status, error, True
            rec.reward, rec.components = 0.0, {}
            return
        if run.episode.stepped:  # the agent answered through the environment itself
            if not run.episode.env_done:
                await _finish(env, rec)
            return
        reply = _as_message(run.last_reply or {})
        try:
            step = await env.astep(reply)
        except ENV_FAILURES as e:
            rec.status, rec.error, rec.truncated = _failure_status(e), _describe(e), True
            return
        if not record_step(rec, step):
            await _finish(env, rec)
        if run.episode.truncated:
            rec.truncated = True
            rec.error = rec.error or f"the agent's budget ran out: {run.episode.truncated}"

    def _trace(self, rec: EpisodeRecord, run: AgentRun) -> None:
        rr = run.episode.recorder
        self.trace.write(
            {
                "episode": run.episode.id,
                "env": rec.env,
                "task_id": rec.task_id,
                "sample": rec.sample,
                "seed": rec.seed,
                "status": str(rec.status),
                "reward": rec.reward,
                "components": rec.components,
                "truncated": rec.truncated,
                "error": rec.error,
                "agent": run.summary(),
                "segments": rr.segments,
                "retokenized": rr.retokenized,
                "calls": [c.to_json() for c in rr.calls],
            }
        )


def _stepper(env: Env, rec: EpisodeRecord, loop: asyncio.AbstractEventLoop) -> Any:
    """The episode URL's environment: steps ``env`` on the run's own event loop.

    The gateway serves from its own thread; each step is handed to ``loop`` (where the
    environment lives) and its result recorded into ``rec`` like a turn of envhub's own loop.
    An environment failure becomes the episode's status and a 502 for the agent.
    """

    async def on_loop(reply: dict[str, Any]) -> dict[str, Any]:
        try:
            step = await env.astep(_as_message(reply))
        except ENV_FAILURES as e:
            rec.status, rec.error, rec.truncated = _failure_status(e), _describe(e), True
            raise BackendError(f"the environment failed: {_describe(e)}") from e
        rec.turns += 1
        record_step(rec, step)
        return step.model_dump(mode="json")

    async def stepper(reply: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(on_loop(reply), loop))

    return stepper


def _as_message(reply: dict[str, Any]) -> Message:
    calls = [
        ToolCall(
            id=c.get("id", ""),
            function=FunctionCall(
                name=c["function"]["name"], arguments=c["function"].get("arguments") or "{}"
            ),
        )
        for c in reply.get("tool_calls") or []
    ]
    return Message(role="assistant", content=reply.get("content") or "", tool_calls=calls or None)


def _reply_messages(run: AgentRun) -> list[Message]:
    return [_as_message(run.last_reply)] if run.last_reply else []


__all__ = ["AgentEvaluation", "GatewayModel", "build_gateway_model"]
