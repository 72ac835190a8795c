"""Multi-turn verifiers (v1) environments as envhub environments, in a Python that has verifiers.

A taskset whose module exports a ``vf.Env`` subclass (as ``vf eval`` finds it) is a
multi-turn environment: its ``run`` decides what the environment says between the model's
turns (verifiers 0.4's ``env_response``) and when the episode ends. envhub plays it through the
:class:`~envhub.interop.verifiers.bridge.Bridge`: ``reset`` starts the verifiers episode and
answers with the conversation of its first model request; each ``step`` answers the waiting
request with the model's message and returns what the environment said next, or, when the
episode has ended, the rewards verifiers gave its trace (each reward function a component,
with its weight).

- Roles whose runtime the environment leaves unset run their chat program as a local
  subprocess (verifiers' default is a Prime sandbox, which needs an account).
- A verifiers failure in the machinery (the chat program, the interception) is
  ``infra_error``. The environment's own code raising after the model spoke is the model's
  ``invalid_action`` (a reply it could not take), logged with the error.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.envs.single_agent import SingleAgentEnv
from verifiers.v1.utils.generic import concrete_type
from verifiers.v1.utils.loaders import environment_class, taskset_class

from envhub.core import Episode, Feedback
from envhub.errors import (
    ConfigError,
    EpisodeError,
    InfraError,
    InvalidAction,
    NotSupported,
    VerifierTimeout,
)
from envhub.spec import EnvSpec
from envhub.types import Message, Task

from .bridge import Bridge, Play, Turn
from .tasks import MACHINERY, VerifiersTaskEnv, load_taskset

log = logging.getLogger(__name__)

START_TIMEOUT_S = 300.0
"""How long ``reset`` waits for an episode's first model request (the chat program's first
launch makes its environment with ``uv``)."""
ROLES = {"system", "user", "assistant", "tool"}


def verifiers_env(
    spec: EnvSpec,
    environment: str,
    args: dict[str, Any] | None = None,
    env_args: dict[str, Any] | None = None,
) -> VerifiersTaskEnv:
    """The envhub environment of verifiers' ``environment``.

    Single-turn for a plain taskset; played episode by episode where the taskset brings its
    own ``vf.Env``.
    """
    try:
        env_cls = environment_class(environment)
        taskset_class(environment)
    except (ImportError, TypeError, AttributeError, ValueError) as e:
        raise ConfigError(
            f"{spec.name}: options.environment: {e} Install it where verifiers runs "
            f"(`{sys.executable} -m pip install PACKAGE`) or put its folder on PYTHONPATH."
        ) from e
    if env_cls is SingleAgentEnv:
        if env_args:
            raise ConfigError(
                f"{spec.name}: options.env_args configures a vf.Env, and taskset "
                f"{environment!r} exports none; remove env_args"
            )
        return VerifiersTaskEnv(spec, load_taskset(environment, dict(args or {})), environment)
    config_cls = concrete_type(env_cls, vf.EnvConfig, origin=vf.Env) or vf.EnvConfig
    data = {"taskset": {"id": environment, **(args or {})}, **(env_args or {})}
    try:
        config = config_cls(**_local_runtimes(config_cls, data))
    except ValueError as e:  # pydantic's ValidationError names the field
        raise ConfigError(
            f"{spec.name}: {env_cls.__name__}'s config refuses options.args/env_args: {e}"
        ) from e
    return VerifiersEpisodeEnv(spec, env_cls(config), environment)


def _local_runtimes(config_cls: type[vf.EnvConfig], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with each role whose runtime nobody chose set to a local subprocess."""
    for name, field in config_cls.model_fields.items():
        role = field.default
        if not isinstance(role, vf.AgentConfig) or "runtime" in role.model_fields_set:
            continue
        given = dict(data.get(name) or {})
        given.setdefault("runtime", {"type": "subprocess"})
        data[name] = given
    return data


class VerifiersEpisodeEnv(VerifiersTaskEnv):
    """Episodes of a multi-turn verifiers environment, its model turns played by envhub."""

    def __init__(self, spec: EnvSpec, vf_env: vf.Env, environment: str) -> None:
        """Adopt the environment's taskset; the bridge starts at the first episode."""
        if spec.max_turns == 1:
            raise ConfigError(
                f"{spec.name}: verifiers environment {environment!r} is multi-turn (it exports "
                f"{type(vf_env).__name__}), and max_turns is 1; set max_turns in the entry to "
                "envhub's turn budget (e.g. max_turns: 20)"
            )
        super().__init__(spec, vf_env.taskset, environment)
        self.vf_env = vf_env
        self._shared: dict[str, Bridge] = {}  # one bridge for this env and its forks
        self._starting = threading.Lock()  # forks' first resets may race to start it
        self._owner = True

    def fork(self) -> VerifiersEpisodeEnv:
        """A copy with its own episode, playing through the same bridge."""
        clone = super().fork()
        assert isinstance(clone, VerifiersEpisodeEnv)
        clone._owner = False
        return clone

    def warmup(self) -> None:
        """Load the tasks and start the bridge (the environment's serving resources)."""
        super().warmup()
        self._bridge()

    def _bridge(self) -> Bridge:
        with self._starting:
            return self._shared.get("bridge") or self._start_bridge()

    def _start_bridge(self) -> Bridge:
        bridge = Bridge(self.vf_env)
        try:
            bridge.open(timeout=START_TIMEOUT_S)
        except Exception as exc:
            bridge.close()
            raise InfraError(f"{self.spec.name}: verifiers could not start: {exc}") from exc
        self._shared["bridge"] = bridge
        return bridge

    # ------------------------------------------------------------------ the episode

    def init_state(self, episode: Episode) -> Play:
        """Start the verifiers episode; its first model request opens envhub's episode."""
        if self._episode is not None and isinstance(self._episode.state, Play):
            self._episode.state.abandon()
        play = self._bridge().play(self.vf_tasks[episode.task.task_id])
        event = self._next(play, START_TIMEOUT_S, before_model=True)
        if not isinstance(event, Turn):
            errors = [*(e for t in event.traces for e in t.errors), *event.errors]
            raise InfraError(
                f"{self.spec.name}: the verifiers episode ended before the model's first turn: "
                f"{_errors(errors) or 'no error recorded'}"
            )
        episode.messages = [_message(m) for m in event.messages]
        play.seen = len(event.messages)
        return play

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Answer the waiting model request; what the environment says next, or its rewards."""
        play: Play = episode.state
        play.answer(message.content)
        event = self._next(play, self.step_timeout_s or START_TIMEOUT_S, before_model=False)
        if isinstance(event, Turn):
            return Feedback(messages=[_message(m) for m in self._said(play, event)])
        components, reward = self._rewards(play, event)
        return Feedback(done=True, components=components, info={"verifiers_reward": reward})

    def on_truncate(self, episode: Episode) -> dict[str, float]:
        """Stop the verifiers episode: envhub cut its own short (turn budget, ``finish``)."""
        if isinstance(episode.state, Play):
            episode.state.abandon()
        return {}

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Not offered: a multi-turn environment scores whole episodes."""
        raise NotSupported(
            f"{self.spec.name} is a multi-turn verifiers environment: it scores whole "
            "episodes; play one with reset() and step()"
        )

    def close(self) -> None:
        """Abandon the episode in flight; the environment that made the bridge stops it too."""
        if self._episode is not None and isinstance(self._episode.state, Play):
            self._episode.state.abandon()
        if self._owner and "bridge" in self._shared:
            self._shared.pop("bridge").close()

    # ------------------------------------------------------------------ helpers

    def _next(self, play: Play, timeout: float, *, before_model: bool) -> Turn | vf.Episode:
        try:
            return play.next(timeout)
        except TimeoutError:
            play.abandon()
            raise InfraError(
                f"{self.spec.name}: the verifiers environment sent no request and did not "
                f"end within {timeout:g} s"
                + (" (its chat program did not start)" if before_model else "")
            ) from None

    def _said(self, play: Play, turn: Turn) -> list[dict[str, Any]]:
        """What the environment said since the model's last message.

        The request must go on the conversation envhub holds: the earlier request, the
        model's reply, then the new messages.
        """
        reply = turn.messages[play.seen] if len(turn.messages) > play.seen else {}
        continues = reply.get("role") == "assistant"
        if not continues:
            play.abandon()
            raise EpisodeError(
                f"{self.spec.name}: the verifiers environment asked the model for a turn of "
                "another conversation (several agents, or a compacted context); envhub plays "
                "one conversation per episode"
            )
        said, play.seen = turn.messages[play.seen + 1 :], len(turn.messages)
        return said

    def _rewards(self, play: Play, episode: vf.Episode) -> tuple[dict[str, float], float]:
        """The rewards of the policy's trace; a failed episode raises whose fault it was."""
        traces = [t for t in episode.traces if t.agent.config.model == play.model]
        errors = [*(e for t in traces for e in t.errors), *episode.errors]
        if any(e.type in MACHINERY for e in errors):
            raise InfraError(f"{self.spec.name}: verifiers failed: {_errors(errors)}")
        if episode.is_timeout or any(t.is_timeout for t in traces):
            raise VerifierTimeout(f"the verifiers episode ran past its deadline: {_errors(errors)}")
        if errors:  # the environment's or the task's own code raised on the model's message
            log.warning("%s: the environment failed: %s", self.spec.name, _errors(errors))
            raise InvalidAction(
                f"the verifiers environment could not take the model's message: {_errors(errors)}"
            )
        if not traces:
            raise InfraError(f"{self.spec.name}: the verifiers episode has no trace of the model")
        trace = traces[-1]
        scores = {name: r.score for name, r in trace.rewards.items() if r is not None}
        return scores, float(trace.reward or 0.0)


def _message(wire: dict[str, Any]) -> Message:
    """An OpenAI-style message of a model request as an envhub message."""
    role = wire.get("role") if wire.get("role") in ROLES else "user"
    content = wire.get("content") or ""
    if not isinstance(content, str):  # content parts: keep the text ones
        content = "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return Message(role=role, content=content)


def _errors(errors: list[vf.Error]) -> str:
    return "; ".join(f"{e.type}: {e.message}" for e in errors[-3:])
