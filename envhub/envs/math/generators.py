"""Offline math tasks: GSM8K-style word problems and a MATH-style set with symbolic answers.

Both generators are deterministic in ``(split, size, seed)`` and need no network.
``train`` and ``test`` are drawn from different seed streams and are disjoint by construction:
every question is assigned to a split by a hash of its text (one in five goes to ``test``), so
the same question can never appear in both, whatever the sizes and seeds.

* :func:`gsm_symbolic_tasks`: reasoning-gym's ``gsm_symbolic`` (GSM8K templates with fresh
  numbers; Apache-2.0). Answers are plain integers; the worked solution, ending in
  ``#### <answer>``, is kept in ``metadata["solution"]``.
* :func:`symbolic_math_tasks`: envhub's own generator of short competition-style problems
  whose answers are LaTeX: fractions, simplified radicals, polynomials, solution lists,
  intervals and unions, percentages, numbers with thousands separators.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Iterator
from fractions import Fraction

from envhub.errors import DependencyMissing
from envhub.install import install_command
from envhub.spec import Knob
from envhub.types import Task

SPLITS = ("train", "test")
TEST_SHARE = 5
"""One question in ``TEST_SHARE`` (by hash of its text) belongs to ``test``."""


def _split_of(question: str) -> str:
    return "test" if zlib.crc32(question.encode()) % TEST_SHARE == 0 else "train"


def _check(split: str, size: int) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if size < 1:
        raise ValueError(f"size must be a positive number of tasks, got {size}")


def _collect(
    split: str, size: int, items: Iterator[tuple[str, str, dict]], prefix: str
) -> list[Task]:
    """The first ``size`` distinct questions of ``items`` that belong to ``split``."""
    seen: set[str] = set()
    tasks: list[Task] = []
    for question, answer, meta in items:
        if question in seen or _split_of(question) != split:
            continue
        seen.add(question)
        tasks.append(
            Task(
                task_id=f"{prefix}/{split}/{len(tasks)}",
                prompt=question,
                answer=answer,
                metadata=meta,
            )
        )
        if len(tasks) == size:
            return tasks
    raise RuntimeError(f"{prefix}: could only generate {len(tasks)} distinct {split} tasks")


# ---------------------------------------------------------------- GSM8K-style


def solution_steps(solution: str) -> int:
    """The steps of a worked solution: its non-blank lines before the ``#### answer`` line."""
    return sum(1 for line in solution.split("####")[0].splitlines() if line.strip())


def gsm_symbolic_tasks(split: str, size: int, seed: int) -> list[Task]:
    """GSM8K-style word problems from reasoning-gym's ``gsm_symbolic`` generator.

    Args:
        split: ``train`` or ``test``.
        size: Number of tasks.
        seed: Seed of the stream; the same arguments always give the same tasks.

    Returns:
        Tasks with ids ``gsm_symbolic/<split>/<i>`` and plain integer answers.
    """
    _check(split, size)
    try:
        import reasoning_gym
    except ImportError as e:
        raise DependencyMissing(
            "reasoning-gym is needed for the offline GSM8K-style data; "
            f"install it with `{install_command(['math'])}`"
        ) from e

    def items() -> Iterator[tuple[str, str, dict]]:
        chunk = max(64, 2 * TEST_SHARE * size) if split == "test" else max(64, 2 * size)
        for round_ in range(50):
            stream = (seed * 1_000_003 + round_) * 2 + SPLITS.index(split)
            for row in reasoning_gym.create_dataset("gsm_symbolic", size=chunk, seed=stream):
                solution = row["metadata"].get("answer_cot", "")
                meta = {
                    "source": "reasoning_gym/gsm_symbolic",
                    "solution": solution,
                    "difficulty": solution_steps(solution),
                }
                yield row["question"], str(row["answer"]).strip(), meta

    return _collect(split, size, items(), "gsm_symbolic")


# ---------------------------------------------------------------- symbolic (MATH-style)


def _frac(q: Fraction) -> str:
    if q.denominator == 1:
        return str(q.numerator)
    sign = "-" if q < 0 else ""
    return f"{sign}\\frac{{{abs(q.numerator)}}}{{{q.denominator}}}"


def _radical(n: int) -> tuple[int, int]:
    """``n = k**2 * m`` with ``m`` square-free: returns ``(k, m)``."""
    k, m = 1, n
    f = 2
    while f * f <= m:
        while m % (f * f) == 0:
            m //= f * f
            k *= f
        f += 1
    return k, m


def _sqrt_tex(n: int, coef: int = 1) -> str:
    k, m = _radical(n)
    k *= coef
    if m == 1:
        return str(k)
    return f"{'' if k == 1 else k}\\sqrt{{{m}}}"


def _poly(coeffs: list[int]) -> str:
    """LaTeX of a polynomial in x from its coefficients, highest degree first."""
    deg = len(coeffs) - 1
    out = ""
    for i, c in enumerate(coeffs):
        p = deg - i
        if c == 0:
            continue
        mag = abs(c)
        body = ("" if mag == 1 and p > 0 else str(mag)) + ("x" if p >= 1 else "")
        body += f"^{p}" if p > 1 else ""
        out += ("-" if c < 0 else "") + body if not out else (" - " if c < 0 else " + ") + body
    return out or "0"


def _nz(rng: random.Random, lo: int, hi: int) -> int:
    return rng.choice([v for v in range(lo, hi + 1) if v != 0])


def _fraction_sum(rng: random.Random) -> tuple[str, str]:
    a, c = rng.randint(1, 9), rng.randint(1, 9)
    b, d = rng.randint(2, 12), rng.randint(2, 12)
    op = rng.choice(["+", "-"])
    value = Fraction(a, b) + (Fraction(c, d) if op == "+" else -Fraction(c, d))
    q = (
        f"Compute $\\frac{{{a}}}{{{b}}} {op} \\frac{{{c}}}{{{d}}}$. "
        "Express your answer as a common fraction in lowest terms."
    )
    return q, _frac(value)


def _fraction_product(rng: random.Random) -> tuple[str, str]:
    a, b, c, d = (rng.randint(1, 15) for _ in range(4))
    value = Fraction(a, b + 1) * Fraction(-c, d + 1)
    q = (
        f"Compute $\\frac{{{a}}}{{{b + 1}}} \\cdot \\left(-\\frac{{{c}}}{{{d + 1}}}\\right)$. "
        "Express your answer as a fraction in lowest terms."
    )
    return q, _frac(value)


def _linear_equation(rng: random.Random) -> tuple[str, str]:
    a, b, c = _nz(rng, -9, 9), rng.randint(-20, 20), rng.randint(-20, 20)
    lhs = _poly([a, b])
    return f"Solve for $x$: ${lhs} = {c}$.", _frac(Fraction(c - b, a))


def _simplify_sqrt(rng: random.Random) -> tuple[str, str]:
    k, m = rng.randint(2, 12), rng.choice([2, 3, 5, 6, 7, 10, 11, 13, 14, 15])
    return f"Simplify $\\sqrt{{{k * k * m}}}$.", _sqrt_tex(k * k * m)


def _quadratic_roots(rng: random.Random) -> tuple[str, str]:
    r1, r2 = rng.sample(range(-12, 13), 2)
    eq = _poly([1, -(r1 + r2), r1 * r2])
    return (
        f"Find all real solutions of ${eq} = 0$. Give them separated by commas.",
        f"{min(r1, r2)}, {max(r1, r2)}",
    )


def _quadratic_radical(rng: random.Random) -> tuple[str, str]:
    p, m = rng.randint(-6, 6), rng.choice([2, 3, 5, 6, 7, 10, 11])
    eq = _poly([1, -2 * p, p * p - m])
    roots = f"{p} - \\sqrt{{{m}}}, {p} + \\sqrt{{{m}}}" if p else f"-\\sqrt{{{m}}}, \\sqrt{{{m}}}"
    return f"Find all real solutions of ${eq} = 0$. Give them separated by commas.", roots


def _linear_inequality(rng: random.Random) -> tuple[str, str]:
    a, b, c = _nz(rng, -8, 8), rng.randint(-15, 15), rng.randint(-15, 15)
    strict = rng.random() < 0.5
    op = "<" if strict else "\\le"
    bound = _frac(Fraction(c - b, a))
    below = a > 0  # a x + b < c  ->  x < (c - b) / a  when a > 0
    if below:
        answer = f"(-\\infty, {bound}{')' if strict else ']'}"
    else:
        answer = f"{'(' if strict else '['}{bound}, \\infty)"
    return (
        f"Solve ${_poly([a, b])} {op} {c}$ for $x$. Write your answer in interval notation.",
        answer,
    )


def _abs_inequality(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(-9, 9), rng.randint(1, 9)
    inner = _poly([1, -a])
    if rng.random() < 0.5:
        return (
            f"Solve $|{inner}| \\le {b}$. Write your answer in interval notation.",
            f"[{a - b}, {a + b}]",
        )
    return (
        f"Solve $|{inner}| > {b}$. Write your answer in interval notation.",
        f"(-\\infty, {a - b}) \\cup ({a + b}, \\infty)",
    )


def _percent(rng: random.Random) -> tuple[str, str]:
    whole = rng.choice([40, 80, 120, 160, 200, 250, 400, 500, 800])
    pct = Fraction(rng.randint(1, 79) * 5, 2)
    part = whole * pct / 100
    shown = str(part.numerator) if part.denominator == 1 else f"{float(part):g}"
    p = str(pct.numerator) if pct.denominator == 1 else f"{float(pct):g}"
    return f"What percent of {whole} is {shown}?", f"{p}\\%"


def _expand(rng: random.Random) -> tuple[str, str]:
    a, b, c = _nz(rng, -9, 9), _nz(rng, -9, 9), rng.choice([1, 1, 2, 3])
    q = f"Expand ${'' if c == 1 else c}({_poly([1, a])})({_poly([1, b])})$."
    return q, _poly([c, c * (a + b), c * a * b])


def _rationalize(rng: random.Random) -> tuple[str, str]:
    a, m = rng.randint(1, 12), rng.choice([2, 3, 5, 6, 7, 10])
    q = Fraction(a, m)
    num = f"{'' if q.numerator == 1 else q.numerator}\\sqrt{{{m}}}"
    answer = num if q.denominator == 1 else f"\\frac{{{num}}}{{{q.denominator}}}"
    return (
        f"Rationalize the denominator: $\\frac{{{a}}}{{\\sqrt{{{m}}}}}$. Simplify your answer.",
        answer,
    )


def _decimal_to_fraction(rng: random.Random) -> tuple[str, str]:
    den = rng.choice([4, 8, 16, 20, 25, 40, 50, 125])
    value = Fraction(rng.randint(1, den - 1), den)
    dec = f"{float(value):.6f}".rstrip("0")
    return f"Write ${dec}$ as a common fraction in lowest terms.", _frac(value)


def _large_product(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(101, 999), rng.randint(1001, 9999)
    return (f"Compute ${a} \\times {b}$. Write the result with thousands separators.", f"{a * b:,}")


def _distance(rng: random.Random) -> tuple[str, str]:
    x1, y1, x2, y2 = (rng.randint(-9, 9) for _ in range(4))
    if (x1, y1) == (x2, y2):
        x2 += 3
    d2 = (x1 - x2) ** 2 + (y1 - y2) ** 2
    return (
        f"What is the distance between the points $({x1}, {y1})$ and $({x2}, {y2})$? "
        "Express your answer in simplest radical form.",
        _sqrt_tex(d2),
    )


KINDS: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    "fraction_sum": _fraction_sum,
    "fraction_product": _fraction_product,
    "linear_equation": _linear_equation,
    "simplify_sqrt": _simplify_sqrt,
    "quadratic_roots": _quadratic_roots,
    "quadratic_radical": _quadratic_radical,
    "linear_inequality": _linear_inequality,
    "abs_inequality": _abs_inequality,
    "percent": _percent,
    "expand": _expand,
    "rationalize": _rationalize,
    "decimal_to_fraction": _decimal_to_fraction,
    "large_product": _large_product,
    "distance": _distance,
}
"""Problem kinds of the symbolic set, drawn in turn."""


def symbolic_math_tasks(
    split: str, size: int, seed: int, kinds: list[str] | None = None
) -> list[Task]:
    """MATH-style problems with LaTeX answers, from envhub's own generator.

    Args:
        split: ``train`` or ``test``.
        size: Number of tasks.
        seed: Seed of the stream; the same arguments always give the same tasks.
        kinds: The problem kinds to draw, in turn (names of :data:`KINDS`); all by default.

    Returns:
        Tasks with ids ``symbolic/<split>/<i>``; ``metadata["kind"]`` names the problem kind,
        and so does ``metadata["difficulty"]``.
    """
    _check(split, size)
    names = sorted(set(kinds or KINDS))

    def items() -> Iterator[tuple[str, str, dict]]:
        for i in range(200 * size + 1000):
            rng = random.Random(f"envhub-symbolic:{seed}:{split}:{i}")
            kind = names[i % len(names)]
            question, answer = KINDS[kind](rng)
            yield question, answer, {"kind": kind, "difficulty": kind, "source": "envhub/symbolic"}

    return _collect(split, size, items(), "symbolic")


KNOBS: dict[str, tuple[Knob, ...]] = {
    "gsm_symbolic": (),
    "symbolic": (
        Knob(
            "kinds",
            "dataset.options",
            "The problem kinds drawn, in turn (each task's metadata['kind']).",
            sorted(KINDS),
            "choices",
            "a choice of kinds, not an order: a curriculum measures each kind's pass rate",
            choices=tuple(sorted(KINDS)),
        ),
    ),
}
"""Each generator's difficulty knobs. reasoning-gym's ``gsm_symbolic`` has none: its only
setting, ``difficulty``, accepts nothing but 1.0."""
TASK_DIFFICULTY = (
    "symbolic: the problem kind (metadata['kind']); gsm_symbolic: the number of steps of the "
    "worked solution; a dataset's own 'difficulty' column otherwise"
)
