r"""From an answer as a model or a dataset writes it to a small, safe Python expression.

Two steps, both pure string work (no sympy, no ``eval``), after :func:`plain_digits` has made
every digit ASCII (``١٢٣``, ``１２３``) and removed invisible characters:

* :func:`clean` strips what never changes an answer's value: math delimiters (``$``,
  ``\(``), ``\text{}`` wrappers, ``\left``/``\right``, spacing commands, degree signs,
  thousands separators (``1,000``, ``1{,}000``, ``1\,000``, ``1.234,5``), a leading ``x =``,
  trailing punctuation; ``\dfrac``/``\tfrac`` become ``\frac``; unicode signs become LaTeX (``±``,
  ``²``).
* :func:`latex_to_py` turns one cleaned expression into Python syntax with explicit ``*``
  (``2\sqrt{3}x`` -> ``2*sqrt(3)*x``). Its output uses only numbers, ``+ - * / ** ( ) ,``,
  single-letter symbols and a whitelist of names, so :mod:`ast` can check it and
  :mod:`envhub.envs.math.symbolic` can build sympy values from it without ever calling ``eval``.

Anything outside that whitelist (unknown commands, underscores, quotes, ``\dots``) raises
:class:`AnswerSyntaxError`: for a prediction that is simply a wrong answer, for a gold answer
an environment bug.
"""

from __future__ import annotations

import re
import unicodedata

from . import numerals

MAX_ANSWER_CHARS = 1000
"""Longer answers are rejected before any parsing: no real final answer is this long."""
MAX_DEPTH = 40
"""Deepest bracket nesting accepted (deeper ones are hostile or broken)."""

FUNCTIONS = frozenset(
    {
        "sqrt",
        "root",
        "sin",
        "cos",
        "tan",
        "cot",
        "sec",
        "csc",
        "asin",
        "acos",
        "atan",
        "log",
        "exp",
        "Abs",
        "factorial",
    }
)
"""Names that are applied to an argument."""
CONSTANTS = frozenset({"pi", "oo", "E", "I"})
"""Names that stand for a value."""

_LATEX_NAMES = {
    "pi": "pi",
    "infty": "oo",
    "infinity": "oo",
    "cdot": "*",
    "times": "*",
    "ast": "*",
    "div": "/",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "cot": "cot",
    "sec": "sec",
    "csc": "csc",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "ln": "log",
    "log": "log",
    "exp": "exp",
}
_TEXT_COMMANDS = (
    "text",
    "textbf",
    "textit",
    "textrm",
    "textnormal",
    "mathrm",
    "mathbf",
    "mathit",
    "mbox",
    "operatorname",
    "boldsymbol",
    "bf",
    "rm",
)
_UNICODE = {
    "\u2212": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u00d7": "\\times ",
    "\u00f7": "\\div ",
    "\u00b7": "\\cdot ",
    "\u22c5": "\\cdot ",
    "\u03c0": "\\pi ",
    "\u221e": "\\infty ",
    "\u2264": "\\le ",
    "\u2265": "\\ge ",
    "\u222a": "\\cup ",
    "\u00a0": " ",
    "\u2009": " ",
    "\u202f": " ",
    "\u00b1": "\\pm ",
    "\u2213": "\\mp ",
    "\u2205": "\\{\\}",  # ∅
}
_PI = re.compile(r"(?<![\u0370-\u03ff])π|π(?![\u0370-\u03ff])")
"""π alone, not a letter of a Greek word (``λεπτά`` is minutes)."""
_SUBS = [
    (re.compile(r"\\\$"), ""),  # \$ (currency)
    (re.compile(r"\$|\\\(|\\\)|\\\[|\\\]"), ""),  # math delimiters
    (re.compile(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big|displaystyle)(?![a-zA-Z])"), ""),
    (re.compile(r"(?<=\d),\\!\s*(?=\d{3}(?!\d))"), ","),  # 11,\! 111: a thousands comma
    (re.compile(r"\\[,;:!]|\\quad|\\qquad"), ""),
    (re.compile(r"(?<=\d)\\ (?=\d{3}(?!\d))"), ""),  # 86\ 400: a spaced thousands group
    (re.compile(r"\\ "), " "),
    (re.compile(r"\\[dtc]frac(?![a-zA-Z])"), r"\\frac"),
    (re.compile(r"\\(?:leq?|leqslant)(?![a-zA-Z])"), r"\\le "),
    (re.compile(r"\\(?:geq?|geqslant)(?![a-zA-Z])"), r"\\ge "),
    (re.compile(r"\\lt(?![a-zA-Z])"), "<"),
    (re.compile(r"\\gt(?![a-zA-Z])"), ">"),
    (re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree|\u00b0|\u00ba"), ""),
    (re.compile(r"\\%"), "%"),
    (re.compile(r"\{,\}"), ","),
    (re.compile(r"\\mathbb\s*\{?\s*R\s*\}?"), r"(-\\infty, \\infty)"),
    (re.compile(r"\\(?:emptyset|varnothing)(?![a-zA-Z])"), r"\\{\\}"),
]
_MATRIX = re.compile(
    r"^\s*\\begin\{([pbvB]?matrix|array)\}(?:\{[^{}]*\})?(.*?)\\end\{\1\}\s*$", re.S
)
_BOXED = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z])\s*")
_BRACE = re.compile(r"(?<!\\)[{}]")
_BARE = re.compile(r"[^\s$]+")
_THOUSANDS = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?(?!\d|,\d)")
_DOT_THOUSANDS = re.compile(
    r"(?<![\d.,])[1-9]\d{0,2}(?:\.\d{3})+,(?:\d{1,2}|\d{4,})(?![\d.,])"  # 1.234,5
    r"|(?<![\d.,])[1-9]\d{0,2}(?:\.\d{3}){2,}(?![\d.,])"  # 1.234.567
)
"""A number written with dots between thousands, where that reading is the only one: a
decimal comma after them (``1.234,5``, not ``1.234,567``, which may be a list) or two dots
or more (``1.234.567``). ``1.234`` alone stays one point two three four."""
_LHS = re.compile(r"^\s*(?:[A-Za-z]|\\[a-zA-Z]+)\s*(?:=|\\in(?![a-zA-Z]))(?!=)\s*")
_SCIENTIFIC = re.compile(r"(\d)[eE]([-+]?\d+)(?![\d.])")
_TOKEN = re.compile(r"[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+|[A-Za-z]+|\*\*|[-+*/(),=<>]|\s+")
r"""Python's tokens; digits are ASCII (``\d`` would take ``\u0664`` and Python would not)."""


_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    "\ufe0f\u20e3]"
)
"""Invisible characters: zero-width space and joiners, word joiner, invisible operators,
direction marks, BOM, soft hyphen (Unicode's format characters that occur in text), and the
emoji selector and keycap of ``4️⃣``."""
_SEPARATORS = {
    0x066B: ".",
    0x066C: ",",
    0x2010: "-",
    0x2011: "-",
    0x2012: "-",
    0xFE63: "-",
    0x2796: "-",
    0x02D7: "-",
    0x060C: ",",
    0x061B: ";",
    0x06D4: ".",
    0x00A0: " ",
    0x2007: " ",
    0x2009: " ",
    0x202F: " ",
    0x2044: "/",
}
"""Dashes that write a minus (hyphen, non-breaking hyphen, figure dash, small and heavy minus,
modifier minus: ``‐5`` is -5, never 5), the Arabic decimal and thousands separators (``٫``,
``٬``), the Arabic comma, semicolon and
Urdu full stop (``،`` ``؛`` ``۔``: ``٢، ٣`` is the list ``2, 3``), the spaces that separate
thousands in many locales (no-break, figure, thin and narrow no-break: ``1 000``) as a space,
and the fraction slash (``3⁄4``) as ``/``."""


class _PlainTable(dict):
    """A :meth:`str.translate` table filled as characters are first met (at most 4096 kept).

    A decimal digit of any script (Unicode category Nd, what a regex reads as a digit) maps to
    its ASCII digit, a fullwidth form (``１``, ``．``, ``－``) to its ASCII character, a
    separator of :data:`_SEPARATORS` to its ASCII one, an invisible character to nothing;
    anything else to itself.
    """

    def __missing__(self, cp: int) -> str | int | None:
        ch = chr(cp)
        value: str | int | None = cp
        if unicodedata.category(ch) == "Nd":
            value = str(unicodedata.decimal(ch))
        elif 0xFF01 <= cp <= 0xFF5E:
            value = cp - 0xFEE0
        elif 0xFFE0 <= cp <= 0xFFE6:  # fullwidth ￥, ￡, ￠: the signs
            value = unicodedata.normalize("NFKC", ch)
        elif cp in _SEPARATORS:
            value = _SEPARATORS[cp]
        elif _INVISIBLE.match(ch):
            value = None
        elif 0x1D400 <= cp <= 0x1D7CB:  # mathematical italic, bold, ...: 𝑥 is x
            plain = unicodedata.normalize("NFKC", ch)
            value = plain if len(plain) == 1 else cp
        if len(self) < 4096:
            self[cp] = value
        return value


_DIGIT_TABLE = _PlainTable()


_VULGAR = re.compile("[\u00bc-\u00be\u2150-\u215e]")
"""Vulgar fractions: ``½``, ``¾``, ``⅞``."""


def _vulgar(m: re.Match) -> str:
    """``½`` -> ``1/2``; after a digit ``3½`` -> ``3 1/2`` (a mixed number)."""
    num, _, den = unicodedata.decomposition(m.group(0)).partition(" 2044 ")
    fraction = f"{chr(int(num.split()[-1], 16))}/{''.join(chr(int(c, 16)) for c in den.split())}"
    before = m.string[m.start() - 1] if m.start() else ""
    return f" {fraction}" if before.isdigit() else fraction


_LATIN_LOOKALIKES = str.maketrans(
    "аеорсхуіјѕԁһАВЕКМНОРСТХІЈЅοαεικνρτυχΟΑΒΕΗΙΚΜΝΡΤΧΖ",
    "aeopcxyijsdhABEKMHOPCTXIJSoaeikvptuxOABEHIKMNPTXZ",
)
"""Cyrillic and Greek letters that look like Latin ones."""
_MIXED_WORD = re.compile(
    r"\b(?=[^\W\d_]*[A-Za-z])(?=[^\W\d_]*[\u0370-\u03ff\u0400-\u04ff])[^\W\d_]+\b"
)
"""A word of Latin letters with Cyrillic or Greek look-alikes among them (``Prоbably``)."""


def plain_digits(text: str) -> str:
    """``text`` with every decimal digit in ASCII and invisible characters removed.

    ``１２３``, ``١٢٣``, ``۱۲۳`` and ``1\u200d23`` all read ``123``: a digit is a digit in any
    script (Unicode category Nd; superscripts such as ``²`` are not digits and stay), and
    fullwidth punctuation is its ASCII self (``１２．５`` is ``12.5``), and a mathematical letter
    its letter (``𝑥`` is ``x``). A vulgar fraction is written out (``½`` is ``1/2``, ``3½`` is
    ``3 1/2``, ``⁵⁄₈`` is ``(5/8)``), and so are circled numbers (``⑫``), Tamil and
    Ethiopic numerals (``௰௨``, ``፲፪``) and Han numerals (``四十二``, ``1.5万``:
    :func:`~envhub.envs.math.numerals.han_numbers`). A no-op on ASCII text.
    """
    if text.isascii():
        return text
    text = numerals.additive_numerals(numerals.circled(text.translate(_DIGIT_TABLE)))
    if _MIXED_WORD.search(text):  # "Prоbably" with a Cyrillic о: the Latin word
        text = _MIXED_WORD.sub(lambda m: m.group(0).translate(_LATIN_LOOKALIKES), text)
    text = numerals.han_numbers(text)
    text = numerals.slashed(text)  # ⁵⁄₈: 5/8
    return _VULGAR.sub(_vulgar, text) if _VULGAR.search(text) else text


class AnswerSyntaxError(ValueError):
    """The answer is not something the checker can read as math."""


def braced(s: str, start: int) -> tuple[str, int]:
    """The content of the ``{...}`` group opening at ``s[start]`` and the index after it.

    Raises:
        AnswerSyntaxError: The group is not closed.
    """
    depth = 0
    for j in range(start, len(s)):
        c = s[j]
        if c == "{" and (j == 0 or s[j - 1] != "\\"):
            depth += 1
        elif c == "}" and (j == 0 or s[j - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return s[start + 1 : j], j + 1
    raise AnswerSyntaxError(f"unbalanced braces in {s[:60]!r}")


def boxed_contents(text: str) -> list[str]:
    r"""Contents of every ``\boxed{...}`` / ``\fbox{...}`` (or ``\boxed 5``), in order.

    Linear in the text, however many braces are left open.
    """
    starts = list(_BOXED.finditer(text))
    if not starts:
        return []
    close_of: dict[int, int] = {}
    stack: list[int] = []
    for m in _BRACE.finditer(text):
        if m.group(0) == "{":
            stack.append(m.start())
        elif stack:
            close_of[stack.pop()] = m.start()
    out = []
    for m in starts:
        j = m.end()
        if j < len(text) and text[j] == "{":
            if j not in close_of:
                continue
            content = text[j + 1 : close_of[j]]
        else:
            bare = _BARE.match(text, j)
            content = bare.group(0) if bare else ""
        if content.strip():
            out.append(content.strip())
    return out


def _unwrap(s: str, names: tuple[str, ...]) -> str:
    r"""Replace ``\name{X}`` by `` X `` for each command in ``names``."""
    pattern = re.compile(r"\\(?:" + "|".join(names) + r")(?![a-zA-Z])\s*(?=\{)")
    for _ in range(50):
        m = pattern.search(s)
        if not m:
            return s
        content, end = braced(s, m.end())
        s = f"{s[: m.start()]} {content} {s[end:]}"
    return s


def _matrix(s: str) -> str:
    r"""A whole-answer ``\begin{pmatrix}...\end{pmatrix}`` as a tuple (of row tuples)."""
    m = _MATRIX.match(s)
    if not m:
        return s
    rows = [r for r in re.split(r"\\\\", m.group(2)) if r.strip()]
    cells = [[c.strip() for c in r.split("&")] for r in rows]
    if len(cells) == 1 or all(len(r) == 1 for r in cells):  # a vector
        return "(" + ", ".join(c for r in cells for c in r) + ")"
    return "(" + ", ".join("(" + ", ".join(r) + ")" for r in cells) + ")"


_REPEATING = re.compile(r"(\d*)\.(\d*)\\(?:overline|dot)\s*\{(\d{1,30})\}")


_TRIG = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc)(?![a-zA-Z])")
_TRIG_DEGREES = re.compile(r"(\d+(?:\.\d+)?)\s*\^\s*(?:\{\s*\\circ\s*\}|\\circ)")
_BARE_POWER_ARG = re.compile(
    r"\\(ln|log|exp|sin|cos|tan|cot|sec|csc)\s+([A-Za-z0-9.]+\s*\^\s*(?:\{[^{}]*\}|[A-Za-z0-9]))"
)


def _repeating(m: re.Match) -> str:
    r"""``0.1\overline{6}`` -> ``(1/6)``: a repeating decimal as its exact fraction."""
    whole, fixed, cycle = m.group(1) or "0", m.group(2), m.group(3)
    num = int(whole + fixed + cycle) - int(whole + fixed)
    den = (10 ** len(cycle) - 1) * 10 ** len(fixed)
    return f"({num}/{den})"


def clean(s: str) -> str:
    """Strip the notation around an answer that never changes its value (see module doc).

    Raises:
        AnswerSyntaxError: The answer is too long or has unbalanced braces.
    """
    if len(s) > MAX_ANSWER_CHARS:
        raise AnswerSyntaxError(f"answer longer than {MAX_ANSWER_CHARS} characters")
    for k, v in _UNICODE.items():
        if k in s:
            s = s.replace(k, v) if k != "π" else _PI.sub(r"\\pi ", s)
    if "overline" in s or "dot" in s:
        s = _REPEATING.sub(_repeating, s)
    boxes = boxed_contents(s)
    if boxes:
        s = boxes[-1]
    s = _unwrap(s, _TEXT_COMMANDS)
    s = _matrix(s)
    s = numerals.normalize(s)  # currency, scale words, locale digit groups, Unicode notation
    if _TRIG.search(s):  # \sin 30^\circ: degrees inside a function are an angle
        s = _TRIG_DEGREES.sub(r"(\1\\pi/180)", s)
    for pattern, repl in _SUBS:
        s = pattern.sub(repl, s)
    s = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), s)
    s = _DOT_THOUSANDS.sub(lambda m: m.group(0).replace(".", "").replace(",", "."), s)
    s = " ".join(s.split())
    s = s.rstrip(".;,: ").lstrip(":, ")
    if s.count("=") == 1 or re.match(r"^\s*[A-Za-z]\s*\\in(?![a-zA-Z])", s):
        s = _LHS.sub("", s, count=1)
    return s.strip()


# ---------------------------------------------------------------- LaTeX -> Python


def _arg(s: str, i: int) -> tuple[str, int]:
    """One macro argument at ``s[i]``: a braced group or a single character."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        raise AnswerSyntaxError("a command is missing its argument")
    if s[i] == "{":
        return braced(s, i)
    if s[i] == "\\":
        m = re.match(r"\\[a-zA-Z]+", s[i:])
        if m:
            return m.group(0), i + m.end()
    return s[i], i + 1


def _convert(s: str, depth: int = 0) -> str:
    """LaTeX-ish math to Python-ish text (implicit products still implicit).

    A scan left to right: the characters of :data:`_SPECIAL` go to their handler, ``|``
    opens and closes ``Abs(...)``, plain characters are copied, anything else is refused.
    """
    if depth > MAX_DEPTH:
        raise AnswerSyntaxError("answer nested too deeply")
    out: list[str] = []
    i, abs_open = 0, False
    while i < len(s):
        c = s[i]
        if c == "|":
            text, i, abs_open = (")" if abs_open else "Abs("), i + 1, not abs_open
        elif c in _SPECIAL:
            text, i = _SPECIAL[c](s, i, depth)
        elif c.isalnum() or c in _PLAIN:
            text, i = c, i + 1
        else:
            raise AnswerSyntaxError(f"unexpected character {c!r}")
        out.append(text)
    if abs_open:
        raise AnswerSyntaxError("unclosed |...|")
    return "".join(out)


_PLAIN = "+-*/()., =<>[]"
"""Characters copied as they are."""


def _command(s: str, i: int, depth: int) -> tuple[str, int]:
    r"""``\name...`` at ``s[i]``: ``\frac``, ``\sqrt`` or a name of :data:`_LATEX_NAMES`."""
    m = re.match(r"\\([a-zA-Z]+)", s[i:])
    if not m:
        raise AnswerSyntaxError(f"unsupported command at {s[i : i + 10]!r}")
    name, i = m.group(1), i + m.end()
    if name in _COMMANDS:
        return _COMMANDS[name](s, i, depth)
    if name in _LATEX_NAMES:
        return f" {_LATEX_NAMES[name]} ", i
    raise AnswerSyntaxError(f"unsupported LaTeX command \\{name}")


def _frac(s: str, i: int, depth: int) -> tuple[str, int]:
    r"""The two arguments of ``\frac`` from ``s[i]``."""
    num, i = _arg(s, i)
    den, i = _arg(s, i)
    return f"(({_convert(num, depth + 1)})/({_convert(den, depth + 1)}))", i


def _sqrt(s: str, i: int, depth: int) -> tuple[str, int]:
    r"""The optional ``[index]`` and the argument of ``\sqrt`` from ``s[i]``."""
    index = None
    if i < len(s) and s[i] == "[":
        close = s.find("]", i)
        if close < 0:
            raise AnswerSyntaxError("unclosed \\sqrt[ index")
        index, i = s[i + 1 : close], close + 1
    body, i = _arg(s, i)
    body = _convert(body, depth + 1)
    return (f"root({body},{_convert(index, depth + 1)})" if index else f"sqrt({body})"), i


def _group(s: str, i: int, depth: int) -> tuple[str, int]:
    """A ``{...}`` group at ``s[i]``, parenthesised."""
    body, i = braced(s, i)
    return f"({_convert(body, depth + 1)})", i


def _power(s: str, i: int, depth: int) -> tuple[str, int]:
    """``^`` at ``s[i]`` and its exponent: a group, a number, a letter or a command."""
    i += 1
    while i < len(s) and s[i] == " ":
        i += 1
    if i < len(s) and s[i] == "{":
        body, i = braced(s, i)
    else:
        m = re.match(r"\d+|[A-Za-z]|\\[a-zA-Z]+", s[i:])
        if not m:
            raise AnswerSyntaxError("'^' without an exponent")
        body, i = m.group(0), i + m.end()
    return f"**({_convert(body, depth + 1)})", i


_COMMANDS = {"frac": _frac, "sqrt": _sqrt}
"""LaTeX commands with arguments, by name."""

_SPECIAL = {
    "\\": _command,
    "{": _group,
    "^": _power,
    "!": lambda s, i, depth: ("!", i + 1),  # factorials are read after the conversion
    "%": lambda s, i, depth: ("/100", i + 1),
}
"""Characters that start something other than themselves, with their handler."""


def _factorials(text: str) -> str:
    """``5!`` -> ``factorial(5)``; a ``!`` after anything but a number is rejected."""
    text = re.sub(r"(\d+)\s*!", r"factorial(\1)", text)
    if "!" in text:
        raise AnswerSyntaxError("'!' is only supported after a number")
    return text


def _is_atom_end(tok: str) -> bool:
    return (
        tok == ")"
        or tok[0].isdigit()
        or tok[0] == "."
        or (tok[0].isalpha() and tok not in FUNCTIONS)
    )


def _is_atom_start(tok: str) -> bool:
    return tok == "(" or tok[0].isdigit() or tok[0] == "." or tok[0].isalpha()


MAX_SYMBOLS = 3
"""The longest run of letters read as a product of one-letter symbols (``xyz``); a longer
unknown word is words, not math ("Die Fahrt dauert 3" is never ``D*i*e*...*3``)."""


def _names(word: str) -> list[str]:
    """A known name stays whole; a short word is a product of one-letter symbols.

    Raises:
        AnswerSyntaxError: A word longer than :data:`MAX_SYMBOLS` letters that names nothing.
    """
    if word in FUNCTIONS or word in CONSTANTS:
        return [word]
    if len(word) == 1:
        return [{"e": "E", "i": "I"}.get(word, word)]
    if len(word) > MAX_SYMBOLS:
        raise AnswerSyntaxError(f"{word[:20]!r} is a word, not a product of symbols")
    return list(word)


_GLUED = re.compile(r"(?<![^\W\d_])([^\W\d_]+)\d")


def latex_to_py(s: str) -> str:
    r"""Convert one cleaned expression to Python syntax with explicit multiplication.

    A function's bare argument takes its power with it: ``\ln e^2`` is ``log(E**2)``.

    Raises:
        AnswerSyntaxError: The text uses anything outside the supported subset.
    """
    s = _BARE_POWER_ARG.sub(r"\\\1{\2}", s)
    text = _SCIENTIFIC.sub(r"\1*10**(\2)", _factorials(_convert(s)))
    for glued in _GLUED.finditer(text):
        if glued.group(1) not in FUNCTIONS:  # sin2x is sin(2x); v0, H0O, β0 are no products
            raise AnswerSyntaxError(f"a digit glued after a letter ({glued.group(0)[:20]!r})")
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise AnswerSyntaxError(f"unexpected text at {text[pos : pos + 10]!r}")
        pos = m.end()
        tok = m.group(0)
        if tok.isspace():
            continue
        if tok[0].isdigit():
            whole, dot, frac = tok.partition(".")
            tok = (whole.lstrip("0") or "0") + dot + frac  # Python rejects 05
        tokens.extend(_names(tok) if tok[0].isalpha() else [tok])
    out: list[str] = []
    pending_call = False
    for tok in tokens:
        if out and _is_atom_end(out[-1]) and _is_atom_start(tok):
            out.append("*")
        if pending_call and tok != "(":
            out.extend(["(", tok, ")"])
            pending_call = False
            continue
        pending_call = tok in FUNCTIONS
        out.append(tok)
    if pending_call:
        raise AnswerSyntaxError("a function is missing its argument")
    return "".join(out)
