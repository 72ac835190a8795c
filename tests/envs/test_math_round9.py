"""Round 9 of the math reader: temperature changes, Tamil and Ethiopic numerals, Danish 60, tables.

Each row is a response, a gold and what it must earn. The near misses are the false positives
the last blind sets left: a rise of 10 °C converted to 50 °F as if it were a reading, Tamil
``௰௨`` read as its digit 2, Danish ``tres`` (60) read as Spanish 3, and a summing-up table's
last cell read instead of the conclusion before it.
"""

import pytest
from math_scoring import scores


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # a change of temperature converts without the scales' zeros
        ("Answer: the temperature rose by 50 °F.", "10 °C", False),
        ("Answer: the temperature rose by 18 °F.", "10 °C", True),
        ("Answer: it dropped by 68 °F", "20 °C", False),
        ("Answer: it dropped by 36 °F", "20 °C", True),
        ("It fell by 9 degrees Fahrenheit.", "5 °C", True),
        ("A drop of 41 °F.", "5 °C", False),
        ("The change in temperature is $\\boxed{18^\\circ F}$.", "10 °C", True),
        ("The change in temperature is $\\boxed{50^\\circ F}$.", "10 °C", False),
        ("The difference is 10 °C.", "10 °C", True),
        ("The temperature rose by 10 °C.", "10", True),
        ("The temperature rose by 10 °C.", "50 °F", False),
        # a reading still converts with them
        ("The temperature rose to 50 °F.", "10 °C", True),
        ("It is 50 °F outside.", "10 °C", True),
        ("It is 18 °F outside.", "10 °C", False),
        # Tamil numerals of tens, hundreds, thousands; Ethiopic numerals
        ("விடை: ௰௨", "12", True),
        ("விடை: ௰௨", "2", False),
        ("விடை: ௨௰௩", "23", True),
        ("விடை: ௨௰௩", "203", False),
        ("விடை: ௨௲௫௱௰", "2510", True),
        ("விடை: ௧௨", "12", True),
        ("6 நாற்காலிகள், 2 வரிசைகள்.\n\nவிடை: ௰௨", "2", False),
        ("መልሱ ፳፭ ነው።", "25", True),
        ("መልሱ ፳፭ ነው።", "5", False),
        ("መልሱ: ፲፪", "12", True),
        ("መልሱ: ፳፻፳፫", "2023", True),
        ("መልሱ: ፻፳፫", "123", True),
        ("መልሱ: ፫፼፭፻", "30500", True),
        ("መልሱ: ፲፪ ወይም ፲፫", "12", False),
        # Danish "tres" is 60; Spanish "tres" 3
        ("Der er 3 kasser med 20 æbler i hver.\n3 · 20 = 60.\nSvaret er tres æbler.", "60", True),
        ("Der er 3 kasser med 20 æbler i hver.\n3 · 20 = 60.\nSvaret er tres æbler.", "3", False),
        ("Svaret er toogtres.", "62", True),
        ("La respuesta es tres manzanas.", "3", True),
        ("La respuesta es tres.", "3", True),
        # a table after the conclusion sums up the working
        (
            "So she bought 7 items.\n\n| Item | Qty | Cost |\n|---|---|---|\n| Pens | 4 | $6 |\n"
            "| Notebooks | 3 | $9 |\n| **Total** | **7** | **$15** |",
            "7",
            True,
        ),
        (
            "So she bought 7 items.\n\n| Item | Qty | Cost |\n|---|---|---|\n| Pens | 4 | $6 |\n"
            "| Notebooks | 3 | $9 |\n| **Total** | **7** | **$15** |",
            "$15",
            False,
        ),
        (
            "Here it is:\n\n| Item | Cost |\n|---|---|\n| Pens | $6 |\n| **Total** | **$15** |",
            "$15",
            True,
        ),
    ],
)
def test_attack(text, gold, paid):
    assert scores(text, gold) is paid
