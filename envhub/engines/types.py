"""What every generation engine and model backend speaks: sampling settings, completions.

One definition each, used by ``envhub eval`` (endpoint and local backends) and the trainer:

* :class:`SamplingParams`: how to sample one completion (one assistant turn);
* :class:`Generation`: one completion, as the engine sampled it or the endpoint sent it;
* :class:`GenerationEngine`: the token-level engine protocol (transformers, vLLM).

Logprobs are those of the sampled token under the temperature-scaled distribution
``log_softmax(logits / temperature)`` (``temperature=0`` counts as 1), before top-k/top-p
truncation: the same quantity the trainer computes, so the two can be compared token by token.

This module is torch-free: importing it (or :mod:`envhub.engines`) loads no heavy library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from envhub.types import Message, ToolCall

FinishReason = Literal["stop", "length", "tool_calls"]
"""``stop`` (EOS or a stop string), ``length`` (``max_tokens`` reached) or ``tool_calls``
(an endpoint that parsed tool calls itself)."""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion per prompt."""

    max_tokens: int = 128
    """Most new tokens per completion (one assistant turn)."""
    temperature: float = 1.0
    """Softmax temperature; 0 means greedy."""
    top_p: float = 1.0
    """Nucleus sampling mass (1 keeps all tokens)."""
    top_k: int = 0
    """Keep only the k most likely tokens (0 keeps all)."""
    stop: tuple[str, ...] = ()
    """Strings that end a completion when they appear in its text."""
    include_stop_str_in_output: bool = True
    """Keep the matched stop string at the end of ``Generation.text``."""
    seed: int | None = None
    """Seed of the sampler; the same seed, prompts and weights give the same completions."""

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        object.__setattr__(self, "stop", tuple(self.stop))


@dataclass
class Generation:
    """One completion: the text, and what the engine or endpoint reported about it."""

    text: str
    """Decoded text without special tokens, cut after the stop string if one matched."""
    finish_reason: FinishReason | str | None = None
    """Why it ended (see :data:`FinishReason`); ``None`` when an endpoint did not say."""
    token_ids: list[int] = field(default_factory=list)
    """Sampled token ids, EOS included when the model emitted it (empty from an endpoint)."""
    logprobs: list[float] = field(default_factory=list)
    """Logprob of each sampled token (see the module docstring); same length as ids."""
    stop_reason: str | None = None
    """The stop string that matched, ``<eos>`` for the EOS token, or ``None``."""
    weight_version: int | None = None
    """The refit version of the weights that sampled it (engine actors; None elsewhere)."""
    tool_calls: list[ToolCall] | None = None
    """Tool calls an endpoint parsed out of the turn (engines leave them in ``text``)."""
    prompt_tokens: int | None = None
    """Tokens of the prompt as the backend counted them; ``None`` if unreported."""
    completion_tokens: int | None = None
    """Tokens of the completion as the backend counted them; ``None`` if unreported."""

    @property
    def ended_with_eos(self) -> bool:
        """True when the last sampled token closed the turn by itself."""
        return self.finish_reason == "stop" and self.stop_reason == "<eos>"

    @property
    def message(self) -> Message:
        """The completion as the assistant message an environment steps with."""
        return Message(role="assistant", content=self.text, tool_calls=self.tool_calls)


@runtime_checkable
class GenerationEngine(Protocol):
    """What the trainer and the evaluator need from any engine (transformers, vLLM)."""

    max_model_len: int | None
    """Longest prompt + completion in tokens (None where the engine sets no bound)."""

    @property
    def tokenizer(self) -> Any:
        """The engine's tokenizer (a transformers tokenizer)."""

    def generate(
        self,
        prompts: list[list[int]],
        params: SamplingParams,
        seeds: list[int] | None = None,
    ) -> list[Generation]:
        """Sample one completion for each prompt (token ids), in order.

        ``seeds``: one per prompt. Prompt ``i`` is then sampled from its own generator seeded
        with ``seeds[i]`` (``params.seed`` unused), so its completion does not depend on the
        other prompts of the call: the same prompt, seed and weights give the same completion
        in any batch (up to the engine's batch-dependent numerics, see the engines' README).
        """
