"""Attacks on the parsers of model output (issue 17, points 2, 7 and 8), one test each.

Every parser that reads what a model wrote maps every failure to the model's own status
(``invalid_action``), never ``env_error``; parsing is linear in the message; messages are
bounded; a step has a deadline whose expiry is ``timeout``.
"""

from __future__ import annotations

import json
import random
import re
import time

import pytest
from cpu_time import cpu_seconds

import envhub
from envhub.core import MAX_MESSAGE_CHARS, Feedback, TaskEnv
from envhub.envs.code.extract import MAX_PARSE_CHARS, build_program, defines
from envhub.envs.games.env import last_tag
from envhub.errors import InvalidAction
from envhub.tags import tag_blocks
from envhub.tools import ToolSet
from envhub.types import FunctionCall, Message, Status, Task, ToolCall

FAST_S = 1.0
"""CPU seconds any parse of one hostile message may take (the quadratic ones took 10+ s).
Process CPU time, not wall time, so a loaded CI machine does not make these flaky."""


def _step(env_id: str, message: Message | str, seed: int = 0):
    env = envhub.make(env_id)
    env.reset(seed=seed)
    start = time.process_time()
    result = env.step(message)
    return result, time.process_time() - start


def _text_call(name: str, arguments_json: str) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {arguments_json}}}</tool_call>'


# ---------------------------------------------------------------- point 8: linear tag parsing


def _lazy_regex_blocks(text: str, names: tuple[str, ...]) -> list[tuple[int, int]]:
    """The blocks the old quadratic pattern finds (the reference for the linear scanner)."""
    alt = "|".join(names)
    pattern = rf"<({alt})>(.*?)</\1\s*>"
    return [(m.start(), m.end()) for m in re.finditer(pattern, text, re.I | re.S)]


def test_tag_blocks_agree_with_the_lazy_regex_on_random_text():
    rng = random.Random(17)
    pieces = ["<move>", "</move>", "</move >", "<MOVE>", "<column>", "</column>", "x", "<", ">"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        got = [(b.start, b.end) for b in tag_blocks(text, "move", "column") if b.closed]
        assert got == _lazy_regex_blocks(text, ("move", "column")), text


def test_last_tag_keeps_its_meaning():
    assert last_tag("<move>3</move> then <move>5</move>", "move") == "5"
    assert last_tag("<guess>CRANE", "guess") == "CRANE"
    assert last_tag("<move>3</move><move>4", "move") == "4"
    assert last_tag("<move>3</move><move>4 <b>", "move") == "3"
    assert last_tag("<MOVE>2</move >", "move") == "2"
    assert last_tag("no tag", "move") is None


@pytest.mark.parametrize("tag", ["move", "guess", "moves", "column", "think"])
def test_last_tag_is_linear_on_20k_unclosed_tags(tag):
    assert cpu_seconds(last_tag, f"<{tag}>" * 20_000, tag) < FAST_S


@pytest.mark.parametrize(
    ("env_id", "text"),
    [
        ("connect4", "<move>" * 20_000),
        ("wordle", "<guess>" * 20_000),
        ("sokoban", "<moves>" * 20_000),
        ("search", "<tool_call>" * 20_000),
        ("search", "<answer>" * 20_000),
        ("search", "<think>" * 20_000 + "<answer>x</answer>"),
        ("sql-multiturn", "<tool_call>" * 20_000),
    ],
)
def test_20k_unclosed_tags_are_answered_fast_by_the_model_status(env_id, text):
    result, elapsed = _step(env_id, text)
    assert result.info.status in (Status.OK, Status.INVALID_ACTION)
    assert elapsed < FAST_S, f"{env_id} took {elapsed:.2f} s on 20k unclosed tags"


# ---------------------------------------------------------------- point 7: parser crashes


def test_connect4_move_of_thousands_of_digits_is_invalid_action():
    result, _ = _step("connect4", "<move>" + "9" * 5000 + "</move>")
    assert result.info.status == Status.INVALID_ACTION
    assert "off the board" in result.info.error
    assert not result.done


def test_connect4_leading_zeros_still_read_as_a_column():
    result, _ = _step("connect4", "<move>" + "0" * 5000 + "4</move>")
    assert result.info.status == Status.OK


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(("env_id", "tool"), [("search", "search"), ("sql-multiturn", "run_query")])
def test_deeply_nested_json_in_a_text_tool_call_is_invalid_action(env_id, tool):
    result, _ = _step(env_id, _text_call(tool, DEEP))
    assert result.info.status == Status.INVALID_ACTION
    assert "nested too deeply" in result.info.error


@pytest.mark.parametrize(("env_id", "tool"), [("search", "search"), ("sql-multiturn", "run_query")])
def test_deeply_nested_json_in_structured_arguments_is_invalid_action(env_id, tool):
    call = ToolCall(id="c1", function=FunctionCall(name=tool, arguments=DEEP))
    result, _ = _step(env_id, Message(role="assistant", content="", tool_calls=[call]))
    assert result.info.status == Status.INVALID_ACTION


def test_json_integer_over_the_digit_limit_is_invalid_action():
    tools = ToolSet(envhub.make("search").toolset.tools.values())
    msg = Message(role="assistant", content=_text_call("search", '{"k": ' + "9" * 5000 + "}"))
    (call,) = tools.parse(msg)
    assert call.error is not None and "cannot be read" in call.error


@pytest.mark.parametrize(
    ("env_id", "tool", "args"),
    [
        ("sql-multiturn", "run_query", '{"query": "SELECT \'\\ud800\'"}'),
        ("sql-multiturn", "submit_answer", '{"query": "SELECT \'\\ud800\'"}'),
        ("search", "search", '{"query": "\\ud800"}'),
        ("search", "open", '{"doc_id": "\\udfff"}'),
    ],
)
def test_lone_surrogate_escape_in_a_tool_argument_is_invalid_action(env_id, tool, args):
    result, _ = _step(env_id, _text_call(tool, args))
    assert result.info.status == Status.INVALID_ACTION
    assert "lone surrogate" in result.info.error


def test_lone_surrogate_in_the_text_becomes_the_replacement_character():
    env = envhub.make("search")
    env.reset(seed=0)
    result = env.step(_text_call("search", '{"query": "x"}').replace("x", "x\ud800"))
    assert result.info.status == Status.OK
    json.dumps(result.model_dump(), ensure_ascii=False).encode("utf-8")  # serialisable


@pytest.fixture(scope="module")
def search_http():
    with envhub.make("search", runner="http") as env:
        yield env


def test_lone_surrogate_escape_in_a_search_call_over_http_is_invalid_action(search_http):
    search_http.reset(seed=0)
    result = search_http.step(_text_call("search", '{"query": "\\ud800"}'))
    assert result.info.status == Status.INVALID_ACTION, result.info.error
    assert not result.done


def test_lone_surrogate_echoed_by_search_over_http_keeps_the_episode(search_http):
    search_http.reset(seed=0)
    result = search_http.step(_text_call("search", '{"query": "Vandoria"}').replace("V", "\ud800"))
    assert result.info.status == Status.OK, result.info.error
    assert "\ufffd" in result.messages[0].content
    result = search_http.step("<answer>\ud800</answer>")
    assert result.info.status == Status.OK and result.terminated


def test_a_search_query_over_its_bound_is_invalid_action_and_not_echoed():
    result, _ = _step("search", _text_call("search", json.dumps({"query": "w " * 30_000})))
    assert result.info.status == Status.INVALID_ACTION
    assert "at most 1000" in result.info.error
    assert len(result.messages[0].content) < 2000


# ---------------------------------------------------------------- point 2: ast.parse in the server


def test_defines_survives_a_deep_expression():
    assert defines("x = " + "+".join(["1"] * 30_000), "x") is False  # RecursionError inside


def test_code_over_the_parse_bound_is_refused_before_parsing():
    code = "x = " + "+".join(["1"] * 100_000)
    assert len(code) > MAX_PARSE_CHARS
    with pytest.raises(InvalidAction, match="characters long"):
        build_program(code, "def f():\n", "f")


def test_humaneval_100k_term_expression_is_invalid_action():
    text = "```python\nx = " + "+".join(["1"] * 100_000) + "\n```"
    result, elapsed = _step("humaneval", text)
    assert result.info.status == Status.INVALID_ACTION
    assert elapsed < FAST_S


def test_humaneval_verify_of_a_2mb_expression_does_not_parse_it():
    env = envhub.make("humaneval")
    text = "```python\nx = " + "+".join(["1"] * 1_000_000) + "\n```"
    start = time.process_time()
    score = env.verify("HumanEval/0", text)
    assert score.status == Status.INVALID_ACTION and score.reward == 0.0
    assert time.process_time() - start < FAST_S


def test_humaneval_deep_expression_under_the_bound_is_judged_in_the_sandbox():
    text = "```python\nx = " + "+".join(["1"] * 30_000) + "\n```"
    result, _ = _step("humaneval", text)
    assert result.info.status in (Status.OK, Status.INVALID_ACTION, Status.TIMEOUT)
    assert result.reward == 0.0


# ---------------------------------------------------------------- bounds and deadline of a step


def test_a_message_over_the_bound_is_invalid_action_and_the_game_goes_on():
    result, elapsed = _step("wordle", "<guess>CRANE</guess>" + "a" * MAX_MESSAGE_CHARS)
    assert result.info.status == Status.INVALID_ACTION
    assert "characters long" in result.info.error
    assert not result.done and elapsed < FAST_S


def test_structured_call_fields_count_towards_the_bound():
    call = ToolCall(id="c", function=FunctionCall(name="search", arguments="x" * MAX_MESSAGE_CHARS))
    result, _ = _step("search", Message(role="assistant", content="", tool_calls=[call]))
    assert result.info.status == Status.INVALID_ACTION and "characters long" in result.info.error


class _Slow(TaskEnv):
    """A test double whose step takes longer than its deadline."""

    step_timeout_s = 0.2

    def builtin_tasks(self, split, size, seed):
        return [Task(task_id="t0", prompt="p")]

    def env_response(self, episode, message):
        time.sleep(5.0)
        return Feedback(done=True, components={"correctness": 1.0})


def test_a_step_past_its_deadline_is_timeout_within_the_deadline():
    spec = envhub.catalog().spec("wordle").model_copy(update={"name": "slow"})
    env = _Slow(spec)
    env.reset(seed=0)
    start = time.perf_counter()
    result = env.step("anything")
    assert time.perf_counter() - start < 3.0  # the deadline (0.2 s), not the hook (5 s)
    assert result.info.status == Status.TIMEOUT and result.reward == 0.0 and result.truncated
