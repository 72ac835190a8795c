"""What the math environments pay for correctness, for the tests of the answer reader."""

from envhub.envs.math.answers import is_equivalent
from envhub.envs.math.extract import extract_answer


def scores(text: str, gold: str, tolerance: float | None = None) -> bool:
    """True when the response ``text`` earns correctness against ``gold`` (hedges earn none)."""
    found = extract_answer(text)
    if not found.answer or found.hedged:
        return False
    return is_equivalent(found.answer, gold, timeout=10.0, tolerance=tolerance)
