"""Wire types: the one definition of messages, tasks, scores and step results.

Every runner (in-process, HTTP, Docker) and every consumer (trainer, evaluator, CLI) speaks
these pydantic models, so the HTTP schema is derived from them and never written twice.
Messages follow the OpenAI chat convention, tool calls included, so a model's output can be
passed through unchanged.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Status(str, enum.Enum):
    """How an episode step or a verification ended.

    ``ok`` means the reward is meaningful. Every other status says why it is not, so the
    trainer and the evaluator can drop or count the episode instead of learning from a
    silent 0.
    """

    OK = "ok"
    """The model's response was judged; the reward is meaningful."""
    TIMEOUT = "timeout"
    """Verification or the model's program ran past its deadline."""
    INVALID_ACTION = "invalid_action"
    """The response could not be acted on (malformed tool call, invalid move)."""
    INFRA_ERROR = "infra_error"
    """Sandbox, container or server failure: never the model's fault."""
    ENV_ERROR = "env_error"
    """A bug in the environment or its data (for example an unparseable gold answer)."""

    def __str__(self) -> str:
        return self.value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FunctionCall(_Model):
    """The function part of an OpenAI-style tool call."""

    name: str
    """Name of the tool to call."""
    arguments: str = "{}"
    """Arguments as a JSON-encoded object, exactly as OpenAI-compatible APIs send them."""


class ToolCall(_Model):
    """One tool call made by the assistant (OpenAI convention)."""

    id: str = ""
    """Call id; the tool's answer refers to it in ``tool_call_id``."""
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(_Model):
    """One chat message."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] | None = None
    """Structured tool calls of an assistant message."""
    tool_call_id: str | None = None
    """For ``role="tool"``: the call this message answers."""
    name: str | None = None
    """For ``role="tool"``: the tool's name."""

    @classmethod
    def coerce(cls, value: Message | str | dict[str, Any]) -> Message:
        """Accept a message, a plain string (taken as the assistant's text) or a dict."""
        if isinstance(value, Message):
            return value
        if isinstance(value, str):
            return cls(role="assistant", content=value)
        return cls.model_validate(value)


class Task(_Model):
    """One task of an environment: what the model is asked and what the verifier checks."""

    task_id: str
    """Stable id, unique within the environment (for example ``HumanEval/0``)."""
    prompt: str
    """The question or instruction, before the prompt template is applied."""
    answer: str | None = None
    """Gold answer as text, where the environment has one."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Environment-specific data (tests, database id, game parameters, ...)."""


class Info(BaseModel):
    """The info of ``reset`` and ``step``.

    Environments may add keys of their own (for example a game's board); the named fields are
    always present.
    """

    model_config = ConfigDict(extra="allow")

    task_id: str
    """The task this episode runs."""
    status: Status = Status.OK
    """``ok``, or why the reward is not meaningful."""
    components: dict[str, float] = Field(default_factory=dict)
    """Raw value of each named reward component; the reward is their weighted sum."""
    turn: int = 0
    """Number of assistant turns taken so far."""
    error: str | None = None
    """Human-readable error when ``status`` is not ``ok``."""

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The tools a ``reset`` offered for the episode (OpenAI function form), or None."""
        offered = (self.model_extra or {}).get("tools")
        return list(offered) if offered else None


class ResetResult(_Model):
    """What ``reset`` returns: the opening messages and the info."""

    messages: list[Message]
    info: Info


class StepResult(_Model):
    """What ``step`` returns, as in Gymnasium: observation, reward, terminated, truncated, info."""

    messages: list[Message]
    """The environment's answer (tool results, feedback), possibly empty."""
    reward: float
    terminated: bool
    """The episode reached a natural end (answer judged, game over)."""
    truncated: bool
    """The episode was cut short (turn budget, error)."""
    info: Info

    @property
    def done(self) -> bool:
        """True when the episode is over, for either reason."""
        return self.terminated or self.truncated


class Score(_Model):
    """The result of stateless verification: ``verify(task, response) -> Score``."""

    reward: float
    components: dict[str, float] = Field(default_factory=dict)
    """Raw value of each named component; ``reward`` is their weighted sum."""
    status: Status = Status.OK
    error: str | None = None
    info: dict[str, Any] = Field(default_factory=dict)
    """Verifier details, e.g. the extracted answer or the failing test."""


class EpisodeResult(BaseModel):
    """What one episode did and earned: the record both ``envhub eval`` and the trainer keep.

    Each part extends it with what only it needs: the evaluator's
    :class:`envhub.evaluate.store.EpisodeRecord` (run identity, pass, token counts, timing),
    the trainer's :class:`envhub.trainer.episodes.rollout.TrainingEpisode` (the token sequence, its
    loss mask
    and the engine's logprobs).
    """

    model_config = ConfigDict(extra="ignore")

    task_id: str | None = None
    """The task the episode ran (set by ``reset``)."""
    seed: int | None = None
    """The seed ``reset`` was given."""
    messages: list[Message] = Field(default_factory=list)
    """The transcript, where the part keeps one (the trainer keeps token ids instead)."""
    reward: float = 0.0
    """Sum of the rewards of the episode's steps."""
    components: dict[str, float] = Field(default_factory=dict)
    """Sum over the episode's steps of each raw reward component."""
    status: Status = Status.OK
    """How the episode went: the status of its last step (see :meth:`add_step`)."""
    error: str | None = None
    """What went wrong, when the status is not ``ok``."""
    turns: int = 0
    """Model turns taken."""

    def add_reward(self, reward: float, components: dict[str, float]) -> None:
        """Add one step's reward and its raw components to the episode's sums."""
        self.reward += reward
        for name, value in components.items():
            self.components[name] = self.components.get(name, 0.0) + value

    def add_step(self, step: StepResult) -> None:
        """Add one step: reward and components to the sums, status and error as the episode's.

        The episode's status is its last step's: ``envhub eval`` and the trainer keep the same
        record.
        """
        self.add_reward(step.reward, step.info.components)
        self.status, self.error = step.info.status, step.info.error
