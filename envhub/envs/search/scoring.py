"""Answer extraction and SQuAD-style answer scoring (normalised exact match and token F1)."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

from envhub.errors import GoldAnswerError
from envhub.tags import block_text, tag_blocks, without_thinking

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised strings are equal."""
    return float(normalize(prediction) == normalize(gold))


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall after normalisation."""
    pred, ref = normalize(prediction).split(), normalize(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def extract_answer(content: str) -> tuple[str, bool]:
    """The final answer in a message and whether it used the ``<answer>`` form.

    ``<think>`` blocks are dropped first. With exactly one non-empty ``<answer>`` block its
    text is the answer (well-formed); otherwise the last block's text, or the whole message
    when there is none (not well-formed). Linear in the message (:mod:`envhub.tags`).
    """
    text = without_thinking(content)
    blocks = [block_text(text, b) for b in tag_blocks(text, "answer") if b.closed]
    if blocks:
        answer = blocks[-1].strip()
        return answer, len(blocks) == 1 and bool(answer)
    return text.strip(), False


def score_answer(prediction: str, golds: Iterable[str]) -> tuple[float, float]:
    """Best exact match and best token F1 of ``prediction`` over the gold answers.

    Raises:
        GoldAnswerError: no gold answer survives normalisation (an environment bug, so
            never scored 0 or 1).
    """
    refs = [g for g in golds if g is not None and normalize(str(g))]
    if not refs:
        raise GoldAnswerError("the task has no usable gold answer (empty after normalising)")
    em = max(exact_match(prediction, g) for g in refs)
    f1 = max(token_f1(prediction, g) for g in refs)
    return em, f1
