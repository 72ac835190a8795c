"""Score math-verify's own test cases with envhub's checker (used by the bench and the tests).

``tests/envs/math_verify_cases.jsonl`` holds the 269 (gold, pred, expected) cases of
math-verify's test suite (huggingface/Math-Verify 0.8.0, Apache-2.0). Each ``pred`` is a
whole response: envhub extracts its final answer (hedging included) as the environment does,
then compares it with the gold. A case whose options set ``precision`` states how far answers
may be rounded: envhub reads it as the task's tolerance (``10 ** -precision``), the only way a
rounded decimal matches an exact value (see ``envhub/envs/math/README.md``).
"""

from __future__ import annotations

import json
from pathlib import Path

from . import answers, extract

CASES = Path(__file__).resolve().parents[3] / "tests" / "envs" / "math_verify_cases.jsonl"

WRONG_LABELS = {
    "tests/test_all.py::test_latex_notation[$9$-Answer $ \\n 9 \\n $-0]": True,
    "tests/test_all.py::test_latex_notation[$9$-Answer \\\\( \\n 9 \\n \\\\)-0]": True,
    "tests/test_yujianll.py::test_string_extraction"
    "[$1 - \\\\frac{1}{\\\\mathrm{e}}$-$1 + \\\\frac{1}{\\\\mathrm{e}}$-1]": False,
}
"""Cases whose label we hold to be wrong, with the right one (reasons in the README)."""


def load_cases(path: Path = CASES) -> list[dict]:
    """The cases, one dict a line."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def tolerance(case: dict) -> float | None:
    """The rounding the case allows (its ``precision`` option), or None: exact."""
    precision = (case.get("opts") or {}).get("precision")
    return None if precision in (None, 6) else 10.0**-precision


def envhub_verdict(case: dict, timeout: float = 5.0) -> bool | str:
    """Envhub's verdict on one case: True/False, or the name of the error it raised."""
    try:
        found = extract.extract_answer(case["pred"])
        answers.validate_gold(case["gold"])
        if found.answer is None or found.hedged:
            return False
        return answers.is_equivalent(
            found.answer, case["gold"], timeout=timeout, tolerance=tolerance(case)
        )
    except Exception as e:  # noqa: BLE001 (reported as a disagreement, never a verdict)
        return type(e).__name__
