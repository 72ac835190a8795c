"""The sympy-free identity test of two expressions in letters (``envhub.envs.math.identity``)."""

import random

import pytest

from envhub.envs.math.identity import identical


@pytest.mark.parametrize(
    ("a", "b", "verdict"),
    [
        ("x**(2)+6*x-27", "(x+9)*(x-3)", True),
        ("x**(2)+6*x-27", "(x+9)*(x-2)", False),
        ("a**(2)-b**(2)", "(a-b)*(a+b)", True),
        ("((x+1)/(x-1))", "1+2/(x-1)", True),
        ("x**(24)", "(x**(12))**(2)", True),
        ("x/y", "y/x", False),
        # what it does not read is undecided, never a verdict
        ("2*sqrt(13)", "sqrt(52)", None),
        ("sin(x)", "sin(x)", None),
        ("x*0.5", "x/2", None),
        ("x**(100)", "x**(100)", None),
        ("12", "12", None),
        ("x+", "x", None),
    ],
)
def test_identical(a, b, verdict):
    assert identical(a, b) is verdict


def test_an_expansion_is_its_product_and_a_changed_coefficient_is_not():
    draw = random.Random(7)
    for _ in range(200):
        r, s, t = (draw.randint(-9, 9) for _ in range(3))
        product = f"(x-({r}))*(x-({s}))*(y+({t}))"
        expanded = (
            f"x**(2)*y+({t})*x**(2)-({r + s})*x*y-({(r + s) * t})*x+({r * s})*y+({r * s * t})"
        )
        assert identical(product, expanded) is True
        assert identical(product, expanded + "+1") is False


def test_a_tower_is_refused_quickly():
    tower = "((((x**(24))**(24))**(24))**(24))**(24)"
    assert identical(tower, tower) is None
