"""Pins ``envhub.envs.math.latex._convert``, the LaTeX-to-sympy-text step, case by case.

Written before ``_convert`` was split into a table of small handlers: the outputs and the
errors below are the ones the single 67-line loop gave.
"""

import pytest

from envhub.envs.math.latex import MAX_DEPTH, AnswerSyntaxError, _convert

CONVERTED = [
    (r"\frac{1}{2}", "((1)/(2))"),
    (r"\frac12", "((1)/(2))"),
    (r"\sqrt{2}", "sqrt(2)"),
    (r"\sqrt[3]{x+1}", "root(x+1,3)"),
    (r"\frac{\sqrt{3}}{2}", "((sqrt(3))/(2))"),
    (r"x^2", "x**(2)"),
    (r"x^{2y}", "x**(2y)"),
    (r"x^ \pi", "x**( pi )"),
    (r"e^x", "e**(x)"),
    (r"|x-1|+2", "Abs(x-1)+2"),
    (r"5!", "5!"),
    (r"50%", "50/100"),
    (r"{a}(b)", "(a)(b)"),
    (r"\pi r^2", " pi  r**(2)"),
    (r"2 \cdot 3", "2  *  3"),
]

REJECTED = [
    (r"\left( x \right)", "unsupported LaTeX command \\left"),
    (r"\foo", "unsupported LaTeX command \\foo"),
    (r"\sqrt[3", "unclosed \\sqrt[ index"),
    (r"x^", "'^' without an exponent"),
    (r"|x", "unclosed |...|"),
    (r"a&b", "unexpected character '&'"),
    ("\\", "unsupported command at '\\\\'"),
]


@pytest.mark.parametrize(("latex", "text"), CONVERTED)
def test_convert_output_is_pinned(latex, text):
    assert _convert(latex) == text


@pytest.mark.parametrize(("latex", "message"), REJECTED)
def test_convert_rejects_with_the_same_message(latex, message):
    with pytest.raises(AnswerSyntaxError) as err:
        _convert(latex)
    assert str(err.value) == message


def test_convert_bounds_the_nesting():
    with pytest.raises(AnswerSyntaxError, match="nested too deeply"):
        _convert("{" * (MAX_DEPTH + 2) + "1" + "}" * (MAX_DEPTH + 2))
