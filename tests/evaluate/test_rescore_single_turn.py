"""``rescore._single_turn``: which path re-verifies (one batch, or turn by turn)."""

import pytest

import envhub
from envhub.evaluate.rescore import _single_turn


@pytest.mark.parametrize(
    ("name", "batched"),
    [("gsm8k", True), ("wordle", False), ("search", False)],
)
def test_one_turn_without_tools_is_batched_the_rest_replayed(name, batched):
    try:
        env = envhub.make(name)
    except envhub.errors.DependencyMissing as e:
        pytest.skip(str(e))
    with env:
        assert (env.spec.max_turns == 1 and not env.tools()) is batched  # the premise
        assert _single_turn(env) is batched
