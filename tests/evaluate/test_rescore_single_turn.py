"""``rescore._single_turn``: which path re-verifies, and a bug in ``info()`` is not a verdict."""

from types import SimpleNamespace

import pytest

from envhub.errors import NotSupported
from envhub.evaluate.rescore import _single_turn


class Described:
    """An env handle whose ``info()`` answers ``result`` or raises it."""

    def __init__(self, result, max_turns=1):
        self.spec = SimpleNamespace(max_turns=max_turns)
        self.result = result

    def info(self):
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def test_one_turn_without_tools_is_batched():
    assert _single_turn(Described({"tools": []})) is True


def test_tools_or_several_turns_are_replayed():
    assert _single_turn(Described({"tools": [{"name": "search"}]})) is False
    assert _single_turn(Described({}, max_turns=3)) is False


def test_an_env_that_cannot_describe_itself_is_replayed():
    assert _single_turn(Described(NotSupported("no info"))) is False


def test_a_bug_in_info_propagates_instead_of_choosing_a_path():
    with pytest.raises(KeyError, match="spec"):
        _single_turn(Described(KeyError("spec")))
