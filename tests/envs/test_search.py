"""The search environment: episodes, tool calls, rewards, invalid actions and the checker."""

import json

import pytest

import envhub
from envhub.authoring.checker import check_env
from envhub.envs.search.agent import ScriptedAgent
from envhub.envs.search.env import SearchEnv
from envhub.envs.search.results import parse_search
from envhub.envs.search.scoring import extract_answer, normalize, score_answer, token_f1
from envhub.spec import EnvSpec
from envhub.types import FunctionCall, Message, Status, ToolCall

WEIGHTS = {
    "correctness": 1.0,
    "f1": 0.5,
    "format": 0.1,
    "tool_calls": -0.01,
    "invalid_calls": -0.05,
}


def make_env(max_turns=10, **options):
    spec = EnvSpec(
        name="search-test",
        family="search",
        entry_point="envhub.envs.search.env:SearchEnv",
        dataset={"kind": "builtin", "size": 200},
        max_turns=max_turns,
        reward={"weights": WEIGHTS},
    )
    return SearchEnv(spec, **options)


@pytest.fixture(scope="module")
def env():
    with make_env() as e:
        yield e


def call(name, arguments, call_id="c1"):
    fn = FunctionCall(name=name, arguments=json.dumps(arguments))
    return Message(role="assistant", tool_calls=[ToolCall(id=call_id, function=fn)])


def play(env, task, structured=True):
    """Run the scripted agent through the env; returns the final step and the transcript."""
    agent = ScriptedAgent(task.prompt, env.toolset, structured=structured)
    transcript = list(env.reset(task_id=task.task_id).messages)
    while True:
        action = agent.act(transcript)
        result = env.step(action)
        transcript += [action, *result.messages]
        if result.done:
            return result, transcript


# ------------------------------------------------------------------ the scripted agent


@pytest.mark.parametrize("structured", [True, False])
def test_scripted_agent_solves_every_question_through_the_tools(env, structured):
    tasks = env.tasks("train")[:120] + env.tasks("test")[:40]
    for task in tasks:
        result, transcript = play(env, task, structured)
        assert result.info.status is Status.OK
        assert result.terminated and not result.truncated
        assert result.info.components["correctness"] == 1.0, (task, transcript[-1])
        calls = result.info.components["tool_calls"]
        assert calls >= task.metadata["hops"], "every hop needs its own search"
        assert result.reward == pytest.approx(1.0 + 0.5 + 0.1 - 0.01 * calls)


def test_structured_calls_get_tool_messages_with_ids(env):
    task = env.tasks()[0]
    _, transcript = play(env, task, structured=True)
    calls = [m for m in transcript if m.role == "assistant" and m.tool_calls]
    replies = [m for m in transcript if m.role == "tool"]
    assert [c.tool_calls[0].id for c in calls] == [r.tool_call_id for r in replies]
    assert all(r.name in ("search", "open") for r in replies)
    assert not any(m.role == "user" for m in transcript[2:])


def test_text_calls_get_tool_response_blocks(env):
    task = env.tasks()[1]
    _, transcript = play(env, task, structured=False)
    replies = [m for m in transcript[2:] if m.role == "user"]
    assert replies and all(m.content.startswith("<tool_response>") for m in replies)
    assert not any(m.role == "tool" for m in transcript)


def test_questions_need_several_documents(env):
    tasks = env.tasks("train")
    assert len(tasks) == 200
    assert {t.metadata["hops"] for t in tasks} == {2, 3}
    assert len({t.metadata["template"] for t in tasks}) == 8
    for t in tasks:
        path = t.metadata["path"]
        assert len(path) == t.metadata["hops"] == len(set(path))
    # The answer is not where the question starts: the anchor's own document lacks it.
    docs = env.index.by_id
    absent = sum(t.answer not in docs[t.metadata["path"][0]].text for t in tasks)
    assert absent / len(tasks) > 0.9


def test_splits_are_disjoint_and_seeded(env):
    train = {t.prompt for t in env.tasks("train")}
    test = {t.prompt for t in env.tasks("test")}
    assert not train & test
    again = make_env().tasks("train")
    assert [t.model_dump() for t in again] == [t.model_dump() for t in env.tasks("train")]


# ------------------------------------------------------------------ tools through the env


def test_search_returns_ranked_snippets_with_ids(env):
    task = env.get_task(env.reset(seed=0).info.task_id)
    anchor = task.metadata["anchor"]
    result = env.step(call("search", {"query": anchor, "k": 3}))
    assert result.info.status is Status.OK and not result.done and result.reward == 0.0
    hits = parse_search(result.messages[0].content)
    assert 1 <= len(hits) <= 3 and hits[0].title == anchor
    assert hits[0].doc_id == task.metadata["path"][0]
    assert all(len(h.snippet) <= 202 for h in hits)
    opened = env.step(call("open", {"doc_id": hits[0].doc_id}, call_id="c2"))
    assert opened.messages[0].content.startswith(f"{hits[0].doc_id} | {anchor}\n")
    assert opened.messages[0].tool_call_id == "c2"


def test_search_with_no_match(env):
    env.reset(seed=0)
    result = env.step(call("search", {"query": "zzzqqq xxyyzz"}))
    assert result.info.status is Status.OK
    assert result.messages[0].content.startswith("No document matches")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            Message(
                role="assistant",
                tool_calls=[
                    ToolCall(id="c1", function=FunctionCall(name="search", arguments="{bad json"))
                ],
            ),
            "not valid JSON",
        ),
        (call("lookup", {"query": "x"}), "unknown tool 'lookup'"),
        (call("search", {}), "missing the required argument 'query'"),
        (call("search", {"query": "x", "lang": "en"}), "unexpected argument(s) ['lang']"),
        (call("search", {"query": ["x"]}), "must be of type string"),
        (call("open", {"doc_id": "doc-99999"}), "no document has id 'doc-99999'"),
        (
            Message(role="assistant", content='<tool_call>{"name": "search",</tool_call>'),
            "not valid JSON",
        ),
    ],
)
def test_invalid_calls_flag_the_step_and_the_episode_goes_on(env, message, expected):
    first = env.reset(seed=3)
    result = env.step(message)
    assert result.info.status is Status.INVALID_ACTION
    assert expected in result.info.error
    assert not result.done and result.reward == 0.0
    [reply] = result.messages
    assert "Error: " in reply.content and expected in reply.content
    if message.tool_calls:
        assert reply.role == "tool" and reply.tool_call_id == "c1"
    else:
        assert reply.role == "user" and "<tool_response>" in reply.content
    task = env.get_task(first.info.task_id)
    final = env.step(f"<answer>{task.answer}</answer>")
    assert final.info.status is Status.OK
    assert final.info.components["invalid_calls"] == 1.0
    assert final.reward == pytest.approx(1.0 + 0.5 + 0.1 - 0.01 - 0.05)


def test_good_and_bad_calls_in_one_message(env):
    anchor = env.get_task(env.reset(seed=4).info.task_id).metadata["anchor"]
    body = json.dumps({"name": "search", "arguments": {"query": anchor}})
    result = env.step(f"<tool_call>{body}</tool_call><tool_call>{{nope</tool_call>")
    assert result.info.status is Status.INVALID_ACTION
    [reply] = result.messages
    blocks = reply.content.split("</tool_response>")
    assert anchor in blocks[0] and "Error:" in blocks[1]


def test_turn_budget_truncates_without_reward(env):
    short = make_env(max_turns=2)
    short.reset(seed=5)
    short.step(call("search", {"query": "a"}))
    result = short.step(call("search", {"query": "b"}))
    assert result.truncated and not result.terminated and result.messages == []
    assert result.info.components["correctness"] == 0.0
    assert result.info.components["tool_calls"] == 2.0
    assert result.reward == pytest.approx(-0.02)


# ------------------------------------------------------------------ answers and scoring


def test_answer_forms(env):
    first = env.reset(seed=6)
    gold = env.get_task(first.info.task_id).answer
    plain = env.step(f"It is {gold}.")
    assert plain.info.components["format"] == 0.0 and plain.info.components["f1"] > 0
    env.reset(seed=6)
    tagged = env.step(f"<think>search more?</think><answer>{gold.upper()}</answer>")
    assert tagged.info.components == {
        "correctness": 1.0,
        "f1": 1.0,
        "format": 1.0,
        "tool_calls": 0.0,
        "invalid_calls": 0.0,
    }
    assert tagged.info.answer == gold.upper()


def test_river_aliases(env):
    task = next(t for t in env.tasks() if t.metadata["template"] == "birthplace_river")
    for text in (task.answer, f"the {task.answer} River", f"{task.answer} river"):
        env.reset(task_id=task.task_id)
        assert env.step(f"<answer>{text}</answer>").info.components["correctness"] == 1.0


def test_squad_normalisation_and_f1():
    assert normalize("The  Ostrel-Systems, Inc.") == "ostrelsystems inc"
    assert token_f1("University of Velsa", "the University of Port Velsa") == pytest.approx(
        2 * 1.0 * 0.75 / 1.75
    )
    assert token_f1("", "x") == 0.0
    assert extract_answer("<answer>a</answer><answer>b</answer>") == ("b", False)
    assert extract_answer("<answer> </answer>") == ("", False)
    assert score_answer("Velsa", ["New Velsa", "Velsa"]) == (1.0, 1.0)


def test_missing_gold_is_an_env_error_not_a_zero(env):
    task = env.tasks()[0].model_copy(update={"answer": "  ..."})
    score = env.verify(task, "<answer>x</answer>")
    assert score.status is Status.ENV_ERROR and "gold" in score.error


def test_verify_is_stateless(env):
    task = env.tasks()[2]
    score = env.verify(task.task_id, f"<answer>{task.answer}</answer>")
    assert score.status is Status.OK and score.components["correctness"] == 1.0


# ------------------------------------------------------------------ contract and catalog


def test_opening_messages_describe_the_tools(env):
    first = env.reset(seed=0)
    system, user = first.messages
    assert system.role == "system" and "<tool_call>" in system.content
    assert '"name": "open"' in system.content and "<answer>" in system.content
    assert [t["function"]["name"] for t in first.info.tools] == ["search", "open"]
    assert user.content.endswith("?")


def test_reference_action_passes_the_shared_checker(env):
    check_env(env)


def test_registry_entry_runs():
    with envhub.make("search") as e:
        first = e.reset(seed=11)
        task = e.get_task(first.info.task_id)
        result, _ = play(e, task)
        assert result.info.components["correctness"] == 1.0
        assert e.spec.reward.weights["tool_calls"] < 0
    wiki = envhub.spec("search-wiki")
    assert "needs-data" in wiki.tags and wiki.options["corpus"]["kind"] == "contexts"


def test_bad_options_are_named():
    with pytest.raises(envhub.errors.ConfigError, match="unknown option"):
        make_env(top_kk=3)
    with pytest.raises(envhub.errors.ConfigError, match="top_k"):
        make_env(top_k=20)


def test_episode_over_http_matches_in_process(env):
    pytest.importorskip("fastapi")
    from serving import running

    from envhub.client.remote_env import RemoteEnv
    from envhub.server.app import create_app

    task = env.tasks()[7]
    local, local_transcript = play(env, task, structured=True)
    with running(create_app(make_env())) as url, RemoteEnv(url) as remote:
        first = remote.reset(task_id=task.task_id)
        assert [t["function"]["name"] for t in first.info.tools] == ["search", "open"]
        agent = ScriptedAgent(first.messages[-1].content, env.toolset, structured=True)
        transcript = list(first.messages)
        while True:
            action = agent.act(transcript)
            result = remote.step(action)
            transcript += [action, *result.messages]
            if result.done:
                break
        bad = remote.reset(task_id=task.task_id)
        flagged = remote.step(call("open", {"doc_id": "nope"}))
    assert transcript == local_transcript
    assert (result.reward, result.info.components) == (local.reward, local.info.components)
    assert bad.info.task_id == task.task_id
    assert flagged.info.status is Status.INVALID_ACTION and flagged.messages[0].role == "tool"
