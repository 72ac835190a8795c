r"""Answers as small typed structures, and the exact comparisons that need no sympy.

:func:`parse_answer` reads one answer into a tree of picklable named tuples:

* :class:`Expr`: one value, kept as safe Python text (see :mod:`envhub.envs.math.latex`), with its
  exact rational value when it has one (``3/4``, ``0.75``, ``6*7``, ``2^{10}``, ``5!``) and
  the unit written after it (``200 cm``; :mod:`envhub.envs.math.units`);
* :class:`Text`: a word answer (``Friday``, ``no solution``), compared case-insensitively;
* :class:`Equation`: ``lhs = rhs`` kept as ``lhs - (rhs)``;
* :class:`Items`: a bare comma list or ``\{...\}`` set, compared as a multiset;
* :class:`Seq`: a bracketed tuple or interval (``(1, 2]``), compared in order, brackets too;
* :class:`Union`: intervals joined by ``\cup``.

Each value's exact rational value is computed here where it is cheap, so that
:func:`envhub.envs.math.compare.quick_compare` can settle most comparisons without sympy. Hostile
values (``9**9**9**9``, ``100000!``) are caught here, by estimating their size from the syntax
tree, before anything evaluates them.
"""

from __future__ import annotations

import ast
import math
import re
from fractions import Fraction
from typing import NamedTuple

from .latex import (
    CONSTANTS,
    FUNCTIONS,
    MAX_ANSWER_CHARS,
    MAX_DEPTH,
    AnswerSyntaxError,
    clean,
    latex_to_py,
    plain_digits,
)
from .numerals import normalize
from .spelled import as_digits, language, leading_words_value, words_value
from .units import Unit, measure, scales

MAX_DIGITS = 5000
"""A value estimated to have more digits than this is rejected as implausible."""
PARSE_ERRORS = (AnswerSyntaxError, RecursionError, ValueError, ArithmeticError)
"""What envhub's parser raises on text it cannot read (anything else is a bug)."""


class Expr(NamedTuple):
    """One value."""

    py: str
    """Safe Python text of the value (``sqrt(2)/2``)."""
    decimal: bool
    """Written with a decimal point: may match an irrational value to 6 significant digits."""
    percent: bool
    """Written with ``%``: ``50%`` equals both ``50`` and ``0.5``."""
    value: Fraction | None
    """Exact rational value, or None when it has symbols or irrational parts."""
    unit: Unit | None = None
    """The unit written after the number (``cm``, ``km/h``), None for none or a label."""


class Text(NamedTuple):
    """A word answer, lower-cased."""

    words: str


class Equation(NamedTuple):
    """``lhs = rhs``, kept as the Python text of ``lhs - (rhs)``."""

    py: str


class Items(NamedTuple):
    r"""An unordered list (``2, 3``) or set (``\{2, 3\}``)."""

    items: tuple[Answer, ...]


class Seq(NamedTuple):
    r"""An ordered tuple or interval (``(1, 2)``, ``[0, \infty)``); a matrix is a tuple of rows."""

    left: str
    items: tuple[Answer, ...]
    right: str


class Union(NamedTuple):
    r"""Intervals joined by ``\cup``."""

    parts: tuple[Seq, ...]


Answer = Expr | Text | Equation | Items | Seq | Union

_OPEN, _CLOSE = "([{", ")]}"
_NOT_UNITS = FUNCTIONS | CONSTANTS | {"infty", "frac", "sqrt", "cup", "and", "or"}
_LINKS = frozenset({"of", "in", "on", "at", "to", "a", "an", "de", "di", "du", "da"})
"""Short words a label may hold: "6 bags of rice", "3/4 of the pizza", "1000000 de personas"."""
_LETTERS = "A-Za-zµμÀ-ɏḀ-ỿ"
_LETTER = f"[{_LETTERS}]"
_UNIT_TAIL = re.compile(
    r"(?P<num>[-+]?(?:\d+\s+(?=\d+/))?(?:\d+(?:\.\d*)?|\.\d+)(?:/\d+)?%?"
    r"|[-+]?(?:\d+\s*)?\\frac\{[-+]?\d+\}\{\d+\})"
    rf"(?P<gap>\s*)(?P<unit>{_LETTER}[{_LETTERS}.]*+(?:[ /]++{_LETTER}[{_LETTERS}\d.]*+)*+)"
    r"\s*(?:\^\s*\{?(?P<power>[23])\}?)?",
    re.ASCII,  # digits are ASCII: Python (and sympy) read no others
)
"""A number and the words after it: its unit or a label (``200 cm``, ``km / h``, ``6 molecules
of CO2``). Words are parted by blanks or ``/`` and every quantifier is possessive, so a
hostile answer is read in linear time."""
_PLAIN = re.compile(
    r"\s*(\\?\$\s*)?([-+\u2212]?)([1-9]\d{0,2}(?:,\d{3})+|[1-9]\d{0,2}(?: \d{3})+|\d+)"
    r"(\.\d+)?\s*(\\?%)?[.\s]*",
    re.ASCII,
)
_DOLLAR = measure("usd")
_MIXED = re.compile(r"([-+]?)\s*(\d+)\s*\\frac\{(\d+)\}\{(\d+)\}", re.ASCII)
_MIXED_SLASH = re.compile(r"([-+]?)\s*(\d+)\s+(\d+)\s*/\s*(\d+)", re.ASCII)
_WORDS = re.compile(r"[A-Za-z][A-Za-z' -]*")
_INEQ = re.compile(r"^([A-Za-z])\s*(<|>|\\le|\\ge)\s*(.+)$")
_INEQ_FLIP = re.compile(r"^(.+?)\s*(<|>|\\le|\\ge)\s*([A-Za-z])$")
_CHAIN = re.compile(r"^(.+?)\s*(<|\\le)\s*([A-Za-z])\s*(<|\\le)\s*(.+)$")
_CHAIN_DOWN = re.compile(r"^(.+?)\s*(>|\\ge)\s*([A-Za-z])\s*(>|\\ge)\s*(.+)$")
_DISJUNCTION = re.compile(r"\s+(?:or|\\lor|\\vee)\s+|\s*(?:\\lor|\\vee)\s*")
_CONJUNCTION = re.compile(r"\s+(?:and|\\land|\\wedge)\s+|\s*(?:\\land|\\wedge)\s*")
_SET_BUILDER = re.compile(r"^\\\{\s*([A-Za-z])\s*(?:\\mid|\||:)\s*(.+?)\s*\\\}$")


# ---------------------------------------------------------------- splitting


def split_top(s: str, sep: str) -> list[str]:
    """Split ``s`` at ``sep`` where it is outside every bracket (mismatched ones too)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(s):
        c = s[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif depth == 0 and s.startswith(sep, i):
            parts.append(s[start:i])
            start = i + len(sep)
            i = start
            continue
        if depth > MAX_DEPTH:
            raise AnswerSyntaxError("answer nested too deeply")
        i += 1
    parts.append(s[start:])
    return [p.strip() for p in parts]


def _wraps(s: str) -> bool:
    """True when the bracket opening ``s`` closes exactly at its end."""
    depth = 0
    for j, c in enumerate(s):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return j == len(s) - 1
    return False


_FLIP = {"<": ">", ">": "<", "\\le": "\\ge", "\\ge": "\\le"}
Bound = tuple[str, bool]
"""One end of an interval: its value as written, and whether it is included."""


def _bounds(s: str) -> tuple[str, Bound | None, Bound | None] | None:
    r"""``(variable, lower, upper)`` of one inequality or chain in one variable, else None.

    ``x \le 3``, ``3 \ge x``, ``1 < x \le 2`` and ``2 \ge x > 1`` are all read.
    """
    m = _CHAIN.match(s)
    if m:
        return m.group(3), (m.group(1), m.group(2) == "\\le"), (m.group(5), m.group(4) == "\\le")
    m = _CHAIN_DOWN.match(s)
    if m:
        return m.group(3), (m.group(5), m.group(4) == "\\ge"), (m.group(1), m.group(2) == "\\ge")
    m = _INEQ.match(s)
    if m:
        var, op, bound = m.groups()
    else:
        m = _INEQ_FLIP.match(s)
        if not m:
            return None
        bound, op, var = m.group(1), _FLIP[m.group(2)], m.group(3)
    end = (bound, op in ("\\le", "\\ge"))
    return (var, None, end) if op in ("<", "\\le") else (var, end, None)


def _inequality(s: str) -> str:
    r"""An inequality in one variable as interval notation; other text unchanged.

    ``x \le 3`` -> ``(-\infty, 3]``; ``1 < x \le 2``, ``2 \ge x > 1``, ``x > 1 \text{ and }
    x \le 2`` and ``\{x \mid 1 < x \le 2\}`` -> ``(1, 2]``.
    """
    either = _DISJUNCTION.split(s)
    if len(either) > 1:  # x < -10 or x > 4: the union of the two intervals
        halves = [_inequality(p.strip()) for p in either]
        variables = {_bounds(p.strip())[0] for p in either if _bounds(p.strip())}
        if len(variables) == 1 and all(h[:1] in "([" for h in halves):
            return " \\cup ".join(halves)
        return s
    builder = _SET_BUILDER.match(s)
    parts = [_bounds(p.strip()) for p in _CONJUNCTION.split(builder.group(2) if builder else s)]
    names = {p[0] for p in parts if p is not None} | ({builder.group(1)} if builder else set())
    if None in parts or len(parts) > 2 or len(names) != 1:
        return s
    lows = [p[1] for p in parts if p[1] is not None]
    highs = [p[2] for p in parts if p[2] is not None]
    if len(lows) > 1 or len(highs) > 1:
        return s
    low, high = (lows or [("-\\infty", False)])[0], (highs or [("\\infty", False)])[0]
    return f"{'[' if low[1] else '('}{low[0]}, {high[0]}{']' if high[1] else ')'}"


_RELATION_SIGN = re.compile(r"[<>≤≥]|\\[lg][et]")
_SET_JOIN = re.compile(r"\s*(?:,|;|\\text\{\s*or\s*\}|\bor\b|\\lor|\\vee|∨|\\cup|∪)\s*")
_RELATION_SPELLING = {
    "\\leq": "\\le",
    "\\geq": "\\ge",
    "≤": "\\le",
    "≥": "\\ge",
    "\\lt": "<",
    "\\gt": ">",
}


def relations_as_intervals(text: str) -> str | None:
    r"""``text`` as intervals when it is inequalities on one variable, listed or joined by "or".

    ``x < -10, x > 4`` and ``x<-10 \text{ or } x>4`` are ``(-\infty, -10) \cup (4, \infty)``:
    one set in pieces, not two answers. Anything else is None.
    """
    if not _RELATION_SIGN.search(text):
        return None  # (read before every answer's hedges: the common case costs one search)
    text = text.replace("$", "").strip()
    for written, read in _RELATION_SPELLING.items():
        text = text.replace(written, read)
    parts = _SET_JOIN.split(text)
    bounds = [_bounds(p) for p in parts]
    if None in bounds or len({b[0] for b in bounds if b}) != 1:
        return None
    return " \\cup ".join(_inequality(p) for p in parts)


# ---------------------------------------------------------------- parsing


def parse_answer(raw: str) -> Answer:
    """Read one answer (LaTeX-ish text) into an :data:`Answer` tree.

    Raises:
        AnswerSyntaxError: The text is empty, too long, malformed or unsupported.
    """
    if len(raw) > MAX_ANSWER_CHARS:
        raise AnswerSyntaxError(f"answer longer than {MAX_ANSWER_CHARS} characters")
    raw = plain_digits(raw)
    plain = plain_number(raw)
    if plain is not None:
        return plain
    s = clean(raw)
    if not s:
        raise AnswerSyntaxError("empty answer")
    return _parse(s)


def plain_number(raw: str) -> Expr | None:
    """The common case in one regex: ``42``, ``-3.5``, ``1,000``, ``$12`` (dollars), ``50%``.

    Gives exactly what :func:`parse_answer`'s general path gives for these, only faster.
    """
    m = _PLAIN.fullmatch(raw)
    if not m:
        return None
    dollar, sign, whole, frac, pct = m.groups()
    digits = whole.replace(",", "").replace(" ", "").lstrip("0") or "0"
    text = ("-" if sign and sign != "+" else "") + digits + (frac or "")
    return Expr(text, bool(frac), bool(pct), Fraction(text), _DOLLAR if dollar else None)


def _parse(s: str) -> Answer:
    s = s.strip()
    if not s:
        raise AnswerSyntaxError("empty item")
    spelled = _spelled(s)
    if spelled is not None:
        return spelled
    for sep, first, second in (("\\pm", "+", "-"), ("\\mp", "-", "+")):
        if s.count(sep) == 1:  # a sign: 1 \pm \sqrt{2}, \frac{2 \pm \sqrt{8}}{2}
            return Items((_parse(s.replace(sep, first)), _parse(s.replace(sep, second))))
    s = _inequality(s)
    cup = split_top(s, "\\cup") if "\\cup" in s else [s]
    if len(cup) > 1:
        parts = tuple(_parse(p) for p in cup)
        if not all(isinstance(p, Seq) for p in parts):
            raise AnswerSyntaxError("\\cup joins intervals only")
        return Union(parts)  # type: ignore[arg-type]
    if s.startswith("\\{") and s.endswith("\\}"):
        inner = s[2:-2].strip()
        return Items(tuple(_parse(p) for p in split_top(inner, ",")) if inner else ())
    if s[0] in "([" and s[-1] in ")]" and _wraps(s):
        parts = split_top(s[1:-1], ",")
        if len(parts) >= 2:
            return Seq(s[0], tuple(_parse(p) for p in parts), s[-1])
        if s[0] == "(" and s[-1] == ")":
            return _parse(parts[0])
    parts = [p for part in split_top(s, ",") for p in _AND_OR.split(part)]
    if len(parts) > 1:
        return Items(tuple(_parse(p) for p in parts))
    return _leaf(s)


COMPOUND_JOINER = (
    r"(?:,\s*|(?:and|und|et|y|e|en|i|a|och|og|ve|dan|và|ja|és|și|ir|un|и|і|और|અને)\s+|و\s*)"
)
"""What joins the two amounts of a compound: "2 h, 30 min", "5 godzin i 30 minut", "5 ساعات و30"."""
_COMPOUND = re.compile(
    rf"(?P<n1>\d+(?:\.\d+)?)\s*(?P<u1>[A-Za-zÀ-ÿ]+)\.?\s*{COMPOUND_JOINER}?"
    r"(?P<n2>\d+(?:\.\d+)?)\s*(?P<u2>[A-Za-zÀ-ÿ]+)\.?"  # 2 Std. 30 Min., 2 heures et 30
)


_AND_OR = re.compile(r"\s+(?:or|and|und|oder|et|ou|y|o)\s+")
"""Words that join the items of a list answer ("x = 3 und x = 5")."""
_DIGIT = re.compile(r"\d")
_JOINED = re.compile(r"(?i)\s(?:and|y|et|e|und|и|с)\s")
"""A word joining two amounts in words ("dos horas y media"): read as digits, then whole."""
_WORDED = re.compile(r"[^\W\d_](?:[^\W\d_]|[' -])*")


def _spelled(s: str) -> Answer | None:
    """A number in words (``quarante-deux``, ``two weeks``) or a compound (``2 hours 15 min``).

    Both are read before lists are split, where ``and`` would part them. A compound is two
    amounts of one dimension, the larger unit first; its value is in the base unit.
    """
    if not _WORDED.fullmatch(s):
        return compound(s)
    value = words_value(s)
    if value is not None:
        return Expr(f"({value})", False, False, value)
    leading = leading_words_value(s)  # twenty-eight dollars, two weeks, quarantadue matite
    if leading is None or not leading[1]:
        if not _JOINED.search(s):
            return None
        digits = as_digits(s, language(s))  # dos horas y media, twelve dollars and fifty cents
        return _parse(normalize(digits)) if digits != s and _DIGIT.search(digits) else None
    amount, rest = leading
    return _parse(normalize(f"{amount} {rest}"))  # dos horas y media: 2.5 h


_POUNDS = frozenset({"pound", "pounds", "quid"})
_POUND_STERLING = (("gbp", 1),)


def compound(s: str) -> Expr | None:
    """``2 hours 15 minutes``, ``6 feet 2 inches``, ``12 dollars and 50 cents``, else None.

    Two amounts of one dimension, the larger unit first; the value is in the base unit.
    """
    m = _COMPOUND.fullmatch(s)
    if m is None:
        return None
    big, small = measure(m.group("u1")), measure(m.group("u2"))
    if small is not None and small.dimension == _POUND_STERLING and m["u1"].lower() in _POUNDS:
        big = measure("gbp")  # 8 pounds and 40 pence: sterling, no weight
    both = scales(big, small) if big and small else None
    if big is None or both is None or both[0][0] <= both[1][0] or big.offset:
        return None
    value = Fraction(m.group("n1")) * both[0][0] + Fraction(m.group("n2")) * both[1][0]
    dimension = small.dimension if big.dimension == (("cents", 1),) else big.dimension
    return Expr(f"({value})", False, False, value, Unit(dimension, Fraction(1)))


def _units(s: str) -> tuple[str, Unit | None]:
    """Split a unit off a number: ``200 cm`` -> ``200`` in centimetres (see :mod:`.units`).

    Words that name no unit of the table are a label and are dropped (``42 apples`` ->
    ``42``); ``5 x`` stays (``x`` is not a unit), and so does ``6m`` (a one-letter unit is
    one only after a space: ``6 m``). A label is one only after a space too: ``42dollars`` and
    ``1AAA`` are no number (a number is a whole token), ``200cm`` is one.
    """
    m = _UNIT_TAIL.fullmatch(s)
    if not m:
        return _unit_after_value(s)
    phrase, words = m.group("unit"), m.group("unit").replace(".", " ").split()
    if len(words[0]) == 1 and not m.group("gap") and not m.group("power"):
        return s, None  # 6m, 2x: a product (24m^2 is an area)
    unit = measure(phrase, m.group("power") or "") or measure(words[0])  # 6 meters tall
    if unit is not None:
        return m.group("num"), unit
    if not m.group("gap"):
        return s, None  # 1AAA, 42dollars: a word glued to the number is no label
    for i, w in enumerate(words):
        lw = w.lower()
        named = any(c.isdigit() for c in lw) and len(words[0]) >= 3  # 6 molecules of CO2
        short = (i > 0 or len(words) > 1) and (lw in _LINKS or named)
        if lw in _NOT_UNITS or (len(lw) < 3 and not short) or "/" in lw:
            return s, None
    return m.group("num"), None


_VALUE_UNIT = re.compile(
    r"(?P<value>.*?(?:[\d}]|\\pi))\s+(?P<unit>[A-Za-zµμÀ-ɏḀ-ỿ][A-Za-zµμÀ-ɏḀ-ỿ /]*?)"
    r"\s*(?:\^\s*\{?(?P<power>[23])\}?)?",
)


def _unit_after_value(s: str) -> tuple[str, Unit | None]:
    r"""A unit after a value that is no plain number: ``3\sqrt{5} cm``, ``3 \times 10^{4} m``.

    Only a value without variables takes a unit so (``4\pi cm^2``; never ``x m``).
    """
    m = _VALUE_UNIT.fullmatch(s)
    if m is None or re.search(r"(?<!\\)\b[A-Za-z]\b", m.group("value").replace("\\pi", "")):
        return s, None
    unit = measure(m.group("unit"), m.group("power") or "")
    if unit is None and _GENERIC_UNITS.fullmatch(m.group("unit").strip()):
        return m.group("value"), None  # 36\pi cubic units: a label, as after a number
    return (m.group("value"), unit) if unit is not None else (s, None)


_GENERIC_UNITS = re.compile(r"(?i)(?:(?:square|sq|cubic|cu)\.?\s+)?units?(?:\s+(?:squared|cubed))?")


def _leaf(s: str) -> Answer:
    s, unit = _units(s.strip())
    if s.count("=") == 1 and re.match(r"^\s*[A-Za-z]\s*=", s):
        s = s.split("=", 1)[1].strip()
    if not s:
        raise AnswerSyntaxError("empty item")
    if _WORDS.fullmatch(s) and (" " in s.strip() or len(s) >= 3) and s not in CONSTANTS:
        if s.lower() not in FUNCTIONS | {"infty"}:
            return Text(" ".join(s.lower().split()))
    if "=" in s:
        lhs, _, rhs = s.partition("=")
        if "=" in rhs or not lhs.strip() or not rhs.strip():
            raise AnswerSyntaxError("only a single '=' is supported")
        py = f"({latex_to_py(lhs)})-({latex_to_py(rhs)})"
        check_py(py)
        return Equation(py)
    percent = s.endswith("%")
    if percent:
        s = s[:-1].rstrip()
    mixed = _MIXED.fullmatch(s) or _MIXED_SLASH.fullmatch(s)
    if mixed:  # 2\frac{1}{2} is two and a half, as MATH writes it
        sign, whole, num, den = mixed.groups()
        s = f"{sign}({whole} + {num}/{den})"
    py = latex_to_py(s)
    value = check_py(py)
    decimal = bool(re.search(r"(?<![\w.])\d*\.\d", py))
    return Expr(py, decimal, percent, value, unit)


# ---------------------------------------------------------------- safe evaluation


def check_py(py: str) -> Fraction | None:
    """Validate converted text; return its exact rational value when it has one.

    Raises:
        AnswerSyntaxError: Bad syntax, a construct outside the whitelist, or a value too
            large to be a real answer.
    """
    try:
        tree = ast.parse(py, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise AnswerSyntaxError(f"not a math expression: {py[:60]!r}") from e
    _mag, value = _walk(tree.body, py, 0)
    return value


def _log10(v: Fraction) -> float:
    return math.log10(abs(v)) if v else -30.0


def _walk(node: ast.AST, src: str, depth: int) -> tuple[float, Fraction | None]:
    """An upper estimate of log10 of the node's size, and its rational value where cheap.

    Symbols count as about 10. The estimate only has to tell real answers (a few hundred
    digits at most) from hostile ones (``9**9**9**9``), without evaluating anything big.
    """
    if depth > 4 * MAX_DEPTH:
        raise AnswerSyntaxError("answer nested too deeply")
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        text = ast.get_source_segment(src, node) or str(node.value)
        v = Fraction(text)
        return _log10(v), v
    if isinstance(node, ast.Name):
        if not (len(node.id) == 1 or node.id in CONSTANTS):
            raise AnswerSyntaxError(f"unknown name {node.id!r}")
        return 1.0, None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        mag, v = _walk(node.operand, src, depth + 1)
        return mag, (-v if isinstance(node.op, ast.USub) and v is not None else v)
    if isinstance(node, ast.BinOp):
        return _binop(node, src, depth)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id not in FUNCTIONS or node.keywords or not 1 <= len(node.args) <= 2:
            raise AnswerSyntaxError(f"unsupported call in {src[:60]!r}")
        args = [_walk(a, src, depth + 1) for a in node.args]
        if node.func.id != "factorial":
            return max(a[0] for a in args), None
        mag, v = args[0]
        if mag > 4:
            raise AnswerSyntaxError("factorial argument too large")
        if v is not None and v.denominator == 1 and v >= 0:
            digits = math.lgamma(float(v) + 1) / math.log(10)
            if digits > MAX_DIGITS:
                raise AnswerSyntaxError("value too large to be an answer")
            return digits, Fraction(math.factorial(int(v)))
        return MAX_DIGITS, None
    raise AnswerSyntaxError(f"unsupported construct in {src[:60]!r}")


def _binop(node: ast.BinOp, src: str, depth: int) -> tuple[float, Fraction | None]:
    (ma, a), (mb, b) = _walk(node.left, src, depth + 1), _walk(node.right, src, depth + 1)
    op = node.op
    if isinstance(op, ast.Pow):
        # |a**b| <= max(|a|, 1/|a|) ** |b|
        mag = -30.0 if a == 0 else max(abs(ma), 0.01) * 10 ** min(mb, 300.0)
        if mag > MAX_DIGITS:
            raise AnswerSyntaxError("value too large to be an answer")
        if a is not None and b is not None and b.denominator == 1 and not (a == 0 and b < 0):
            return mag, a ** int(b)
        return mag, None
    if isinstance(op, (ast.Add, ast.Sub)):
        mag = max(ma, mb) + 0.31
    elif isinstance(op, ast.Mult):
        mag = ma + mb
    elif isinstance(op, ast.Div):
        mag = ma + abs(mb)
    else:
        raise AnswerSyntaxError(f"unsupported operator in {src[:60]!r}")
    if mag > MAX_DIGITS:
        raise AnswerSyntaxError("value too large to be an answer")
    if a is None or b is None:
        return mag, None
    if isinstance(op, ast.Add):
        return mag, a + b
    if isinstance(op, ast.Sub):
        return mag, a - b
    if isinstance(op, ast.Mult):
        return mag, a * b
    return mag, (a / b if b != 0 else None)
