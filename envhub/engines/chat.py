"""Chat messages to token ids: :class:`ChatFormatter`.

Multi-turn training sequences are built piecewise so the model's own tokens are never
re-encoded: :meth:`ChatFormatter.prompt_ids` for the opening, then the engine's ids for each
model turn, then :meth:`ChatFormatter.continuation_ids` for each environment answer.
Torch-free: it only needs a transformers tokenizer with a chat template.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envhub.types import Message


def _as_dict(message: Message | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(message, Message):
        return message.model_dump(exclude_none=True)
    return dict(message)


class ChatFormatter:
    """Renders chat messages to token ids with the tokenizer's chat template.

    Multi-turn sequences are built piecewise so the model's own tokens are never re-encoded:
    :meth:`prompt_ids` for the opening, then the engine's ids for each model turn, then
    :meth:`continuation_ids` for each environment answer.
    """

    def __init__(self, tokenizer: Any) -> None:
        """Wrap ``tokenizer``; it must have a chat template and an EOS token."""
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError(
                "the tokenizer has no chat template; use an instruct model's tokenizer "
                "(for example the SmolLM2 one from envhub.engines.weights.smollm2_tokenizer_path())"
            )
        self.tokenizer = tokenizer
        self.eos_id: int = tokenizer.eos_token_id
        self._probe = "\x00probe\x00"

    def render(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        """The chat template's text for ``messages``."""
        kwargs: dict[str, Any] = {"tools": tools} if tools else {}
        return self.tokenizer.apply_chat_template(
            [_as_dict(m) for m in messages],
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            **kwargs,
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of template text (special tokens in the text are recognised)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        """Ids of the opening messages followed by the assistant's generation prompt."""
        return self.encode(self.render(messages, tools=tools))

    def continuation_ids(
        self, env_messages: Sequence[Message | Mapping[str, Any]], *, ended_with_eos: bool
    ) -> list[int]:
        """Ids that follow the model's last sampled token when the environment answers.

        They close the assistant turn (an EOS when the model did not emit one itself, then
        whatever the template puts after it), render ``env_messages`` and open the next
        assistant turn. Computed as a difference of two renderings around a probe assistant
        message, so it works for any template whose assistant turn ends with the EOS token.
        """
        base: list[dict[str, Any]] = [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": self._probe},
        ]
        before = self.render(base, add_generation_prompt=False)
        after = self.render(base + [_as_dict(m) for m in env_messages])
        if not after.startswith(before):
            raise ValueError("the chat template re-renders earlier turns; cannot continue")
        eos_text = self.tokenizer.eos_token
        tail = before[before.index(self._probe) + len(self._probe) :]
        if not tail.startswith(eos_text):
            raise ValueError(
                f"the chat template does not end assistant turns with the EOS token {eos_text!r}"
            )
        suffix = tail[len(eos_text) :] + after[len(before) :]
        closing = [] if ended_with_eos else [self.eos_id]
        return closing + self.encode(suffix)
