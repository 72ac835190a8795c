r"""Final-answer extraction and answer equivalence for the math environments.

**Extraction** (:func:`extract_answer`) looks for the final answer in this order and stops
at the first rule that finds one; within a rule the *last* occurrence wins:

1. ``hash``: a GSM8K-style ``#### 42`` line;
2. ``boxed``: ``\boxed{42}`` (or ``\fbox{}``), braces balanced;
3. ``answer_is``: "the answer is 42", "Final answer: 42" (up to the end of the sentence);
4. ``last_number``: the last number in the text (``-3``, ``1,000``, ``2.5``, ``3/4``,
   ``\frac{3}{4}``, ``50%``).

A response **hedges** when its explicit final answers (every ``####`` line and every
``\boxed{}``; or, when neither is present, every "the answer is") do not all agree; a hedged
response earns no correctness. Agreement is decided exactly and without sympy, so
``\boxed{0.5}`` and ``\boxed{1/2}`` agree while ``\boxed{\sqrt 4}`` and ``\boxed{2}`` count
as two answers.

**Equivalence** (:func:`is_equivalent`) reads both answers with :mod:`envs.math.parse`:
delimiters, ``\text{}``, units after a number (``$42``, ``42 dollars``), thousands separators,
``x =`` and degree signs are dropped; ``\frac``/``\dfrac``, ``\sqrt``, powers, ``%``,
``\pi``, lists (as multisets), tuples and intervals (in order, brackets included), ``\cup``,
inequalities in one variable (``x \le 3`` is ``(-\infty, 3]``) and ``\pm`` are understood.

* Fast path, in-process: when both sides have exact rational values (integers, decimals,
  fractions, percentages, arithmetic on them) they are compared exactly with
  :class:`fractions.Fraction`. No sympy, no inter-process call: microseconds.
* Symbolic path: anything else (roots, ``\pi``, symbols, equations, unions) goes to sympy in a
  ``pebble`` worker process with a per-call timeout; a worker that runs over is killed and
  replaced and the call raises :class:`~envhub.errors.VerifierTimeout`.

Limits, on purpose: ``1,234`` is one thousand two hundred thirty-four, never a list (write
``1, 234``); an integer right before a numeric fraction is a mixed number (``2\frac{1}{2}`` is
``2.5``); ``1.5e3`` is scientific notation; a value written with a decimal
point matches an irrational one to a relative 1e-6, but rationals are compared exactly
(``0.333`` is not ``1/3``); one-word answers of one or two letters are read as products of
symbols. Values too large to be real answers (``9**9**9**9``, ``100000!``) and answers over
:data:`~envs.math.latex.MAX_ANSWER_CHARS` characters are rejected before any evaluation.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import re
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import lru_cache

from envhub.errors import GoldAnswerError, InfraError, VerifierTimeout

from . import symbolic
from .compare import quick_compare
from .latex import AnswerSyntaxError, boxed_contents
from .parse import Answer, parse_answer

__all__ = [
    "Extraction",
    "extract_answer",
    "format_score",
    "is_equivalent",
    "shutdown",
    "validate_gold",
    "warmup",
]

WORKERS = int(os.environ.get("ENVHUB_MATH_WORKERS", "2"))
"""Sympy worker processes (``ENVHUB_MATH_WORKERS``)."""
WORKER_MEMORY_MB = int(os.environ.get("ENVHUB_MATH_WORKER_MEMORY_MB", "2048"))
"""Address-space limit of one worker (``ENVHUB_MATH_WORKER_MEMORY_MB``; 0 for none)."""
MAX_RESPONSE_CHARS = 100_000
"""Extraction reads only this many characters from the end of a response."""
QUEUE_GRACE_S = 10.0
"""How long a call may wait for a free or restarting worker, on top of its timeout."""


# ---------------------------------------------------------------- extraction


@dataclass(frozen=True)
class Extraction:
    """The final answer found in a response."""

    answer: str | None
    """Final answer text as written (``\\frac{1}{2}``, ``1,000``); None if nothing found."""
    method: str | None
    """The rule that found it: ``hash``, ``boxed``, ``answer_is`` or ``last_number``."""
    hedged: bool
    """The response gives several different final answers: it earns no correctness."""


_HASH = re.compile(r"####[ \t]*([^\n]*)")
_ANSWER_IS = re.compile(r"\b(?:final\s+answer|answer)\s*(?:is|:|=)\s*:?\s*", re.IGNORECASE)
_FILLER = re.compile(r"(?:therefore|thus|simply|just|equal\s+to|exactly)\s+", re.IGNORECASE)
_SENTENCE_END = re.compile(r"\.(?=\s|$)|\n|\s+(?:because|since|which|as)\b", re.IGNORECASE)
_RESTATED = re.compile(r"(?:the\s+)?(?:final\s+)?answer\s*(?:is|:|=)\s*:?\s*", re.IGNORECASE)
_NUMBER = re.compile(
    r"\\[dt]?frac\{[-\u2212]?\d+\}\{\d+\}"
    r"|(?:(?<![\w)])[-\u2212])?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:/\d+)?|\.\d+)%?"
)


def _tidy(answer: str) -> str:
    return answer.strip().strip("*").strip().rstrip(".,;:").strip()


def _hash_answers(text: str) -> list[str]:
    return [a for a in (_tidy(m.group(1)) for m in _HASH.finditer(text)) if a]


def _answer_is(text: str) -> list[str]:
    """What follows each "the answer is" / "Answer:", up to the end of its sentence."""
    found = []
    for m in _ANSWER_IS.finditer(text):
        answer = text[m.end() : m.end() + 200]
        # "Final Answer: The final answer is $8$." (Minerva style) states it twice
        while (inner := _RESTATED.match(answer)) is not None:
            answer = answer[inner.end() :]
        filler = _FILLER.match(answer)
        if filler:
            answer = answer[filler.end() :]
        stop = _SENTENCE_END.search(answer)
        answer = _tidy(answer[: stop.start()] if stop else answer)
        if answer:
            found.append(answer)
    return found


@lru_cache(maxsize=8192)
def _read(answer: str) -> Answer | str:
    """Parsed answer, or its whitespace-normalised text when it does not parse."""
    try:
        return parse_answer(answer)
    except Exception:  # anything unreadable is compared as text
        return " ".join(answer.split()).lower()


def _same(a: str, b: str) -> bool:
    """True when two written answers are the same value, decided exactly and without sympy."""
    if a.split() == b.split():
        return True
    ra, rb = _read(a), _read(b)
    if ra == rb:
        return True
    if isinstance(ra, str) or isinstance(rb, str):
        return False
    return quick_compare(ra, rb) is True


def _disagree(answers: list[str], final: str) -> bool:
    """True when some of ``answers`` is not the same value as ``final``."""
    return any(not _same(a, final) for a in answers)


def extract_answer(text: str) -> Extraction:
    """Find the final answer of a response (rules and hedging in the module docstring).

    Only the last :data:`MAX_RESPONSE_CHARS` characters are read.
    """
    text = text[-MAX_RESPONSE_CHARS:]
    hashes = _hash_answers(text)
    boxes = boxed_contents(text) if "\\boxed" in text or "\\fbox" in text else []
    explicit = hashes + boxes
    if explicit:
        method, answer = ("hash", hashes[-1]) if hashes else ("boxed", boxes[-1])
        return Extraction(answer, method, _disagree(explicit, answer))
    stated = _answer_is(text)
    if stated:
        return Extraction(stated[-1], "answer_is", _disagree(stated, stated[-1]))
    numbers = _NUMBER.findall(text)
    if numbers:
        return Extraction(numbers[-1], "last_number", False)
    return Extraction(None, None, False)


def format_score(text: str, style: str) -> float:
    r"""1.0 when the final answer is given exactly once in ``style`` and unhedged, else 0.0.

    Args:
        text: The response.
        style: ``hash`` (``#### 42``) or ``boxed`` (``\boxed{42}``).

    Raises:
        ValueError: ``style`` is neither.
    """
    text = text[-MAX_RESPONSE_CHARS:]
    if style == "hash":
        markers = _hash_answers(text)
    elif style == "boxed":
        markers = boxed_contents(text)
    else:
        raise ValueError(f"format style must be 'hash' or 'boxed', got {style!r}")
    if len(markers) != 1:
        return 0.0
    return 0.0 if extract_answer(text).hedged else 1.0


# ---------------------------------------------------------------- equivalence


@lru_cache(maxsize=4096)
def _gold(gold: str) -> Answer:
    try:
        return parse_answer(gold)
    except (AnswerSyntaxError, RecursionError, ValueError, ArithmeticError) as e:
        raise GoldAnswerError(f"gold answer {gold[:80]!r} cannot be parsed: {e}") from e


def validate_gold(gold: str) -> None:
    """Raise :class:`~envhub.errors.GoldAnswerError` when ``gold`` cannot be read (cached).

    Call it even when the response has no answer to compare, so that a broken gold answer is
    reported as an error rather than hidden behind a reward of 0.
    """
    if not isinstance(gold, str):
        raise GoldAnswerError(f"gold answer must be text, got {type(gold).__name__}")
    _gold(gold)


def is_equivalent(pred: str, gold: str, *, timeout: float = 2.0) -> bool:
    """True when the predicted answer has the gold answer's value (rules in the module doc).

    Args:
        pred: The model's final answer (for example :attr:`Extraction.answer`).
        gold: The task's gold answer.
        timeout: Seconds allowed for the symbolic comparison, if one is needed.

    Raises:
        GoldAnswerError: ``gold`` cannot be parsed (never answered with True or False).
        VerifierTimeout: The symbolic comparison ran past ``timeout``.
        InfraError: A worker process died for another reason.
    """
    validate_gold(gold)
    gold_ans = _gold(gold)
    if not isinstance(pred, str) or not pred.strip():
        return False
    try:
        pred_ans = parse_answer(pred)
    except (AnswerSyntaxError, RecursionError, ValueError, ArithmeticError):
        return False  # an unreadable prediction is a wrong answer, not a crash
    quick = quick_compare(pred_ans, gold_ans)
    if quick is not None:
        return quick
    verdict = _run(symbolic.compare, (pred_ans, gold_ans), timeout)
    if verdict.startswith(symbolic.GOLD_ERROR):
        raise GoldAnswerError(f"gold answer {gold[:80]!r} cannot be evaluated: {verdict}")
    return verdict == symbolic.EQUAL


# ---------------------------------------------------------------- worker pool

_lock = threading.Lock()
_pool = None
_state = {"atexit": False}


def _get_pool():  # noqa: ANN202 (pebble is imported lazily)
    global _pool
    with _lock:
        if _pool is None or not _pool.active:
            from pebble import ProcessPool

            # fork: workers start in milliseconds with sympy already imported, and scripts
            # need no ``if __name__ == "__main__"`` guard (spawn/forkserver re-run them).
            symbolic.warm()  # sympy imported and warmed once here, inherited by each worker

            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            memory = WORKER_MEMORY_MB * 2**20 if WORKER_MEMORY_MB > 0 else None
            _pool = ProcessPool(
                max_workers=WORKERS,
                initializer=symbolic.init_worker,
                initargs=(memory,),
                context=ctx,
            )
            if not _state["atexit"]:
                atexit.register(shutdown)
                _state["atexit"] = True
        return _pool


def _run(fn, args: tuple, timeout: float) -> str:  # noqa: ANN001
    """Run ``fn(*args)`` in a worker; kill it after ``timeout`` seconds of running."""
    from pebble import ProcessExpired

    future = _get_pool().schedule(fn, args=args, timeout=timeout)
    try:
        return future.result(timeout=timeout + QUEUE_GRACE_S)
    except FutureTimeout as e:
        future.cancel()
        raise VerifierTimeout(
            f"symbolic answer check took longer than {timeout:g}s; the worker was restarted"
        ) from e
    except ProcessExpired as e:
        raise InfraError(f"math worker process died ({e}); it was restarted") from e


def warmup(timeout: float = 60.0) -> None:
    """Start the worker processes now rather than on the first symbolic comparison."""
    pool = _get_pool()
    for future in [pool.schedule(symbolic.ping) for _ in range(WORKERS)]:
        future.result(timeout=timeout)


def shutdown() -> None:
    """Stop the worker processes (a later comparison starts new ones)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.stop()
        pool.join(timeout=5)
