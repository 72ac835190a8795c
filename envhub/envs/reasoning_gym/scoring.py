"""Reading a model's answer and scoring it with reasoning-gym's own ``score_answer``.

The answer format is the one reasoning-gym's prompts ask for: ``<answer>...</answer>``.
``<think>`` blocks are dropped first; the answer is the text of the closed ``<answer>`` blocks
(found in linear time, :mod:`envhub.tags`). Then:

* no ``<answer>`` block: no answer, correctness 0;
* blocks that disagree (after trimming blanks) are a **hedge**: correctness 0, whatever the
  scorer would say of any one of them; the same answer repeated is not a hedge;
* an answer over :func:`answer_limit` characters is not scored (0): no generator's answer is
  that long, and some scorers are slow on huge text;
* otherwise the generator's ``score_answer(answer, entry)`` gives correctness in [0, 1]. A
  scorer that raises on a strange answer scores it 0 (the model's answer, never a machine
  fault); the exception is named in the details.

``format`` is 1 when the message has exactly one non-empty ``<answer>`` block.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envhub.tags import block_text, tag_blocks, without_blocks

MIN_ANSWER_LIMIT = 4_000
"""Characters of an answer always scored; longer golds allow four times their length."""


@dataclass(frozen=True)
class Reading:
    """What a message answers."""

    answer: str | None
    """The answer (the last block's text), or ``None`` without a closed ``<answer>`` block."""
    blocks: int
    hedged: bool


def read_answer(content: str) -> Reading:
    """The ``<answer>`` of a message, how many blocks it had and whether it hedges."""
    thoughts = [b for b in tag_blocks(content, "think") if b.closed]
    text = without_blocks(content, thoughts)
    found = [block_text(text, b).strip() for b in tag_blocks(text, "answer") if b.closed]
    if not found:
        return Reading(None, 0, False)
    return Reading(found[-1], len(found), len(set(found)) > 1)


def answer_limit(gold: str | None) -> int:
    """The longest answer scored for a task whose gold is ``gold``."""
    return max(MIN_ANSWER_LIMIT, 4 * len(gold or ""))


def safe_score(
    scorer: Callable[[str | None, dict[str, Any]], Any], answer: str, entry: dict[str, Any]
) -> tuple[float, str | None]:
    """``scorer(answer, entry)`` clamped to [0, 1]; 0 and the error if it raises or is no number."""
    try:
        value = float(scorer(answer, entry))
    except Exception as e:  # noqa: BLE001 (a third-party scorer on the model's text)
        return 0.0, f"score_answer raised {type(e).__name__}: {str(e)[:200]}"
    if math.isnan(value):
        return 0.0, "score_answer returned NaN"
    return min(1.0, max(0.0, value)), None


def correctness(
    scorer: Callable[[str | None, dict[str, Any]], Any], reading: Reading, entry: dict[str, Any]
) -> tuple[float, str | None]:
    """Correctness of a reading (the rules in the module docstring) and why it is 0, if so."""
    if reading.answer is None:
        return 0.0, "no <answer>...</answer> block"
    if reading.hedged:
        return 0.0, f"hedged: {reading.blocks} <answer> blocks that disagree"
    limit = answer_limit(entry.get("answer"))
    if len(reading.answer) > limit:
        return 0.0, f"the answer is {len(reading.answer)} characters, over {limit}"
    return safe_score(scorer, reading.answer, entry)
