"""The generic tool-call layer: schemas, both call forms, validation and result messages."""

import asyncio
import json

import pytest

from envhub.core import Feedback
from envhub.errors import ConfigError, InvalidAction, VerifierTimeout
from envhub.spec import EnvSpec
from envhub.tools import Param, Tool, ToolEnv, ToolSet, tool_result_messages
from envhub.types import FunctionCall, Message, Status, Task, ToolCall

SEARCH = Tool(
    "search",
    "Search documents.",
    (
        Param("query", "string", "Keywords.", min_length=1),
        Param("k", "integer", "Results.", required=False, default=5, minimum=1, maximum=10),
    ),
)
OPEN = Tool("open", "Open a document.", (Param("doc_id", "string", "Document id."),))
FLAGS = Tool(
    "configure",
    "Typed parameters.",
    (
        Param("ratio", "number", "A number."),
        Param("verbose", "boolean", "A flag."),
        Param("mode", "string", "A mode.", enum=("fast", "slow")),
        Param("tags", "array", "Tags.", required=False),
        Param("extra", "object", "Extra.", required=False),
    ),
)
TOOLS = ToolSet([SEARCH, OPEN, FLAGS])


def structured(name: str, arguments: str, call_id: str = "c1") -> Message:
    fn = FunctionCall(name=name, arguments=arguments)
    return Message(role="assistant", tool_calls=[ToolCall(id=call_id, function=fn)])


def text(*bodies: str, prefix: str = "Let me look.") -> Message:
    blocks = "".join(f"<tool_call>{b}</tool_call>" for b in bodies)
    return Message(role="assistant", content=f"{prefix}\n{blocks}")


def only_error(message: Message) -> str:
    calls = TOOLS.parse(message)
    assert len(calls) == 1 and not calls[0].ok
    with pytest.raises(InvalidAction) as info:
        TOOLS.parse_strict(message)
    assert str(info.value) == calls[0].error
    return calls[0].error


# ------------------------------------------------------------------ schema


def test_schema_is_an_openai_function_definition():
    schema = SEARCH.schema()
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "search" and fn["description"] == "Search documents."
    params = fn["parameters"]
    assert params["type"] == "object" and params["additionalProperties"] is False
    assert params["required"] == ["query"]
    assert params["properties"]["query"] == {
        "type": "string",
        "description": "Keywords.",
        "minLength": 1,
    }
    assert params["properties"]["k"] == {
        "type": "integer",
        "description": "Results.",
        "minimum": 1,
        "maximum": 10,
        "default": 5,
    }
    assert json.loads(json.dumps(TOOLS.schemas())) == TOOLS.schemas()
    assert [s["function"]["name"] for s in TOOLS.schemas()] == ["search", "open", "configure"]


def test_schema_validates_with_jsonschema():
    jsonschema = pytest.importorskip("jsonschema")
    params = SEARCH.schema()["function"]["parameters"]
    jsonschema.validate({"query": "x", "k": 3}, params)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query": "x", "bogus": 1}, params)


def test_bad_definitions_are_config_errors():
    with pytest.raises(ConfigError, match="tool name"):
        Tool("bad name", "x")
    with pytest.raises(ConfigError, match="twice"):
        Tool("t", "x", (Param("a", "string", "a"), Param("a", "integer", "a")))
    with pytest.raises(ConfigError, match="unique"):
        ToolSet([OPEN, OPEN])


def test_describe_explains_the_text_form():
    text_ = TOOLS.describe()
    assert "<tool_call>" in text_ and '"name": "search"' in text_ and "<tool_response>" in text_


# ------------------------------------------------------------------ well-formed calls


def test_structured_call_is_parsed_and_defaults_filled():
    [call] = TOOLS.parse_strict(structured("search", '{"query": "capital of Vandoria"}'))
    assert call.ok and call.structured and call.id == "c1" and call.name == "search"
    assert call.arguments == {"query": "capital of Vandoria", "k": 5}


def test_structured_calls_several_and_missing_ids():
    msg = Message(
        role="assistant",
        tool_calls=[
            ToolCall(function=FunctionCall(name="search", arguments='{"query": "a", "k": 2}')),
            ToolCall(function=FunctionCall(name="open", arguments='{"doc_id": "d1"}')),
        ],
    )
    calls = TOOLS.parse_strict(msg)
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_0", "search", {"query": "a", "k": 2}),
        ("call_1", "open", {"doc_id": "d1"}),
    ]


def test_text_calls_are_parsed_in_order():
    msg = text(
        '{"name": "search", "arguments": {"query": "Ostrel Systems"}}',
        ' {"name": "open", "arguments": {"doc_id": "doc-00001"}} ',
    )
    calls = TOOLS.parse_strict(msg)
    assert [(c.id, c.name, c.structured) for c in calls] == [
        ("call_0", "search", False),
        ("call_1", "open", False),
    ]
    assert calls[0].arguments == {"query": "Ostrel Systems", "k": 5}


def test_text_form_accepts_parameters_and_encoded_arguments():
    a = TOOLS.parse_strict(text('{"name": "open", "parameters": {"doc_id": "x"}}'))
    b = TOOLS.parse_strict(text(json.dumps({"name": "open", "arguments": '{"doc_id": "x"}'})))
    assert a[0].arguments == b[0].arguments == {"doc_id": "x"}


def test_structured_calls_win_over_text_and_plain_text_has_none():
    msg = structured("open", '{"doc_id": "a"}')
    msg = msg.model_copy(update={"content": '<tool_call>{"name": "search"}</tool_call>'})
    assert [c.name for c in TOOLS.parse_strict(msg)] == ["open"]
    plain = Message(role="assistant", content="<answer>Paris</answer>")
    assert TOOLS.parse(plain) == [] and not ToolSet.has_calls(plain)
    assert ToolSet.has_calls(text("{bad"))


def test_number_accepts_int_and_integer_accepts_integral_float():
    [call] = TOOLS.parse_strict(
        structured(
            "configure", '{"ratio": 2, "verbose": false, "mode": "fast", "tags": [1], "extra": {}}'
        )
    )
    assert call.arguments == {
        "ratio": 2,
        "verbose": False,
        "mode": "fast",
        "tags": [1],
        "extra": {},
    }
    [call] = TOOLS.parse_strict(structured("search", '{"query": "q", "k": 3.0}'))
    assert call.arguments["k"] == 3 and isinstance(call.arguments["k"], int)


# ------------------------------------------------------------------ malformed calls


def test_bad_json_in_structured_arguments():
    error = only_error(structured("search", '{"query": "x"'))
    assert "not valid JSON" in error and "'search'" in error


def test_bad_json_in_text_block():
    error = only_error(text('{"name": "search", "arguments": {"query": }}'))
    assert "not valid JSON" in error and "<tool_call>" in error


def test_unclosed_text_block():
    error = only_error(
        text('{"name": "search"}', prefix="").model_copy(
            update={"content": '<tool_call>{"name": "search", "arguments": {"query": "a"}}'}
        )
    )
    assert "not closed" in error


def test_text_block_without_a_name():
    assert "string 'name'" in only_error(text('{"arguments": {"query": "a"}}'))
    assert "string 'name'" in only_error(text('["search", {"query": "a"}]'))


def test_text_block_with_unexpected_keys():
    assert "unexpected key(s) ['tool']" in only_error(
        text('{"name": "search", "tool": 1, "arguments": {"query": "a"}}')
    )


def test_arguments_that_are_not_an_object():
    assert "must be a JSON object, got array" in only_error(structured("search", '["a"]'))


def test_unknown_tool_suggests_the_close_name():
    error = only_error(structured("serch", '{"query": "a"}'))
    assert "unknown tool 'serch'" in error and "did you mean 'search'" in error
    assert "search, open, configure" in error


def test_missing_argument():
    error = only_error(structured("open", "{}"))
    assert "missing the required argument 'doc_id'" in error


def test_extra_argument():
    error = only_error(structured("open", '{"doc_id": "a", "page": 2}'))
    assert "unexpected argument(s) ['page']" in error


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"query": 5}', "'query' of 'search' must be of type string, got integer"),
        ('{"query": "a", "k": "3"}', "must be of type integer, got string"),
        ('{"query": "a", "k": true}', "must be of type integer, got boolean"),
        ('{"query": "a", "k": 2.5}', "must be of type integer, got number"),
        ('{"query": "a", "k": 0}', "must be at least 1"),
        ('{"query": "a", "k": 11}', "must be at most 10"),
        ('{"query": "   "}', "at least 1 non-blank"),
        ('{"query": null}', "got null"),
    ],
)
def test_wrong_typed_arguments(arguments, expected):
    assert expected in only_error(structured("search", arguments))


def test_enum_and_boolean_checks():
    error = only_error(structured("configure", '{"ratio": 1, "verbose": 1, "mode": "fast"}'))
    assert "'verbose' of 'configure' must be of type boolean, got integer" in error
    error = only_error(structured("configure", '{"ratio": 1, "verbose": true, "mode": "x"}'))
    assert "must be one of ['fast', 'slow']" in error


def test_one_bad_call_does_not_spoil_the_others():
    calls = TOOLS.parse(text('{"name": "open", "arguments": {"doc_id": "a"}}', "{oops"))
    assert [c.ok for c in calls] == [True, False]
    with pytest.raises(InvalidAction):
        TOOLS.parse_strict(text('{"name": "open", "arguments": {"doc_id": "a"}}', "{oops"))


def test_too_many_calls_in_one_message():
    tools = ToolSet([OPEN], max_calls=2)
    body = '{"name": "open", "arguments": {"doc_id": "a"}}'
    calls = tools.parse(text(body, body, body))
    assert [c.ok for c in calls] == [True, True, False]
    assert "too many tool calls" in calls[2].error


# ------------------------------------------------------------------ results


def test_results_for_structured_calls_are_tool_messages():
    calls = TOOLS.parse(
        Message(
            role="assistant",
            tool_calls=[
                ToolCall(id="a", function=FunctionCall(name="open", arguments='{"doc_id": "1"}')),
                ToolCall(id="b", function=FunctionCall(name="open", arguments='{"doc_id": "2"}')),
            ],
        )
    )
    msgs = tool_result_messages([(calls[0], "one"), (calls[1], "two")])
    assert [(m.role, m.tool_call_id, m.name, m.content) for m in msgs] == [
        ("tool", "a", "open", "one"),
        ("tool", "b", "open", "two"),
    ]


def test_results_for_text_calls_are_one_user_message():
    calls = TOOLS.parse(text('{"name": "open", "arguments": {"doc_id": "1"}}', "{bad"))
    [msg] = tool_result_messages([(calls[0], "doc text"), (calls[1], "Error: bad")])
    assert msg.role == "user" and msg.tool_call_id is None
    assert msg.content == (
        "<tool_response>\ndoc text\n</tool_response>\n<tool_response>\nError: bad\n</tool_response>"
    )


def test_text_block_may_hold_a_list_of_calls():
    msg = text(
        '[{"name": "search", "arguments": {"query": "a"}}, '
        '{"name": "open", "arguments": {"doc_id": "b"}}]',
        '{"name": "open", "arguments": {"doc_id": "c"}}',
    )
    calls = TOOLS.parse_strict(msg)
    assert [(c.id, c.name) for c in calls] == [
        ("call_0", "search"),
        ("call_1", "open"),
        ("call_2", "open"),
    ]
    assert calls[2].arguments == {"doc_id": "c"}
    assert "JSON object" in only_error(text("[]"))


# ------------------------------------------------------------------ the tool loop (ToolEnv)


class _Counter(ToolEnv):
    """Only the hooks: ``add`` adds, ``slow`` times out, ``done`` ends; the answer is scored."""

    components = frozenset({"correctness", "tool_calls", "invalid_calls"})
    counters = frozenset({"tool_calls", "invalid_calls"})
    primary_component = "correctness"
    toolset = ToolSet(
        [
            Tool("add", "Add.", (Param("n", "integer", "How much.", maximum=9),)),
            Tool("slow", "Never answers in time."),
            Tool("done", "End the episode."),
        ]
    )

    def builtin_tasks(self, split, size, seed):
        return [Task(task_id="t0", prompt="Say 3.", answer="3")]

    def call_tool(self, episode, call):
        if call.name == "slow":
            raise VerifierTimeout("slow gave no answer in time")
        if call.name == "done":
            return Feedback(done=True, components={"correctness": 0.5})
        if call.arguments["n"] == 0:
            raise InvalidAction("adding 0 changes nothing; add at least 1")
        return f"added {call.arguments['n']}"

    def score(self, task, response):
        return {"correctness": float(response.content == task.answer)}, {}


def _calls(*bodies: str) -> Message:
    return text(*bodies, prefix="")


def test_a_tool_env_holds_the_loop_and_its_subclass_only_the_hooks():
    env = _Counter(EnvSpec(name="counter", max_turns=4, reward={"weights": {"correctness": 1}}))
    env.reset()
    r = env.step(_calls('{"name": "add", "arguments": {"n": 2}}', '{"name": "ad"}'))
    assert r.info.status is Status.INVALID_ACTION and not r.done
    assert "added 2" in r.messages[0].content and "did you mean 'add'" in r.info.error
    r = env.step(_calls('{"name": "add", "arguments": {"n": 0}}'))
    assert r.info.status is Status.INVALID_ACTION and "at least 1" in r.messages[0].content
    r = env.step(_calls('{"name": "slow"}', '{"name": "add", "arguments": {"n": 1}}'))
    assert r.info.status is Status.TIMEOUT and not r.done
    assert r.messages[0].content.count("Error:") == 2 and "not run" in r.messages[0].content
    final = env.step("3")
    assert final.info.components == {"correctness": 1.0, "tool_calls": 4.0, "invalid_calls": 3.0}


def test_a_tool_may_end_the_turn_and_truncation_pays_the_tallies_only():
    env = _Counter(EnvSpec(name="counter", max_turns=2, reward={"weights": {"correctness": 1}}))
    env.reset()
    r = env.step(_calls('{"name": "done"}', '{"name": "add", "arguments": {"n": 1}}'))
    assert r.done and r.info.components["correctness"] == 0.5
    env.reset()
    env.step(_calls('{"name": "add", "arguments": {"n": 1}}'))
    cut = env.step(_calls('{"name": "add", "arguments": {"n": 11}}'))
    assert cut.truncated and cut.info.components["correctness"] == 0.0
    assert cut.info.components["tool_calls"] == 2.0 and cut.info.components["invalid_calls"] == 1.0


class _AwaitingCounter(_Counter):
    """The same tools, awaited (``acall_tool``): a tool that calls a remote API."""

    async def acall_tool(self, episode, call):
        await asyncio.sleep(0.001)
        return _Counter.call_tool(self, episode, call)


def test_async_tools_run_the_same_loop_awaited():
    assert _AwaitingCounter.async_steps and not _Counter.async_steps
    messages = [
        _calls('{"name": "add", "arguments": {"n": 2}}', '{"name": "ad"}'),
        _calls('{"name": "slow"}', '{"name": "add", "arguments": {"n": 1}}'),
        _calls('{"name": "add", "arguments": {"n": 0}}'),
        "3",
    ]
    spec = EnvSpec(name="counter", max_turns=5, reward={"weights": {"correctness": 1}})

    def play_sync(env):
        env.reset()
        return [env.step(m) for m in messages]

    async def play_async(env):
        await env.areset()
        return [await env.astep(m) for m in messages]

    sync = play_sync(_Counter(spec))
    awaited = asyncio.run(play_async(_AwaitingCounter(spec)))
    in_process = play_sync(_AwaitingCounter(spec))  # its sync API runs the awaited loop too
    assert [r.model_dump() for r in awaited] == [r.model_dump() for r in sync]
    assert [r.model_dump() for r in in_process] == [r.model_dump() for r in sync]
    assert [r.info.status for r in sync] == [
        Status.INVALID_ACTION,
        Status.TIMEOUT,
        Status.INVALID_ACTION,
        Status.OK,
    ]
