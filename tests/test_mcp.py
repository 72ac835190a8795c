"""``envhub serve search --mcp``: an MCP client lists the tools, plays an episode, gets the reward.

The SDK's own ``Client`` (``mode="auto"``) opens a stateful MCP session: one session is one
episode, with no episode id to pass; a stateless client (the 2026-07-28 per-request protocol)
names the episode in every call.
"""

from __future__ import annotations

import asyncio

import httpx
from mcp import Client
from serving import running

import envhub
from envhub.server.app import create_app


def _answer(task) -> dict:
    return {"text": f"<answer>{task.answer}</answer>"}


def test_an_mcp_session_plays_a_search_episode_and_gets_the_reward():
    env = envhub.make("search")
    task = env.tasks()[0]
    with running(create_app(env, mcp=True)) as url:

        async def play():
            async with Client(url + "/mcp") as client:
                names = [t.name for t in (await client.list_tools()).tools]
                opening = await client.call_tool("start_episode", {"task_id": task.task_id})
                found = await client.call_tool("search", {"query": task.prompt})
                final = await client.call_tool("final_answer", _answer(task))
                await client.call_tool("start_episode", {"task_id": task.task_id})
                wrong = await client.call_tool("final_answer", {"text": "nope"})
                return client.protocol_version, names, opening, found, final, wrong

        version, names, opening, found, final, wrong = asyncio.run(play())
    assert version < "2026"  # a handshake-era session (Mcp-Session-Id), not stateless
    assert names[0] == "start_episode" and names[-1] == "final_answer"
    assert {"search", "open"} <= set(names)
    assert task.prompt in opening.content[0].text
    assert found.content[0].text and not found.is_error
    assert found.structured_content["done"] is False
    assert final.structured_content["done"] is True
    assert final.structured_content["status"] == "ok"
    assert final.structured_content["components"]["correctness"] == 1.0
    assert final.structured_content["reward"] > 0
    assert wrong.structured_content["components"]["correctness"] == 0.0


def test_two_concurrent_mcp_sessions_play_independent_episodes():
    env = envhub.make("search")
    tasks = env.tasks()[:2]
    app = create_app(env, mcp=True)
    with running(app) as url:

        async def session(task, answer: dict, started: asyncio.Event, other: asyncio.Event):
            async with Client(url + "/mcp") as client:
                await client.call_tool("start_episode", {"task_id": task.task_id})
                started.set()
                await other.wait()  # both episodes are open before either answers
                return await client.call_tool("final_answer", answer)

        async def both():
            a, b = asyncio.Event(), asyncio.Event()
            return await asyncio.gather(
                session(tasks[0], _answer(tasks[0]), a, b),
                session(tasks[1], {"text": "no idea"}, b, a),
            )

        right, wrong = asyncio.run(both())
        left = httpx.get(url + "/metrics").json()
    assert right.structured_content["components"]["correctness"] == 1.0
    assert wrong.structured_content["components"]["correctness"] == 0.0
    assert left["episodes"] == 2 and left["sessions"] == 0


def test_ending_the_mcp_session_closes_its_episode():
    env = envhub.make("search")
    task = env.tasks()[0]
    with running(create_app(env, mcp=True)) as url:

        async def open_and_leave():
            async with Client(url + "/mcp") as client:
                await client.call_tool("start_episode", {"task_id": task.task_id})
                return httpx.get(url + "/metrics").json()["sessions"]

        during = asyncio.run(open_and_leave())
        after = httpx.get(url + "/metrics").json()["sessions"]
    assert (during, after) == (1, 0)  # the client's DELETE ended the episode too


def test_a_stateless_client_names_the_episode_in_every_call():
    env = envhub.make("search")
    task = env.tasks()[0]
    with running(create_app(env, mcp=True)) as url:

        async def play():
            async with Client(url + "/mcp", mode="2026-07-28") as client:
                start = await client.call_tool("start_episode", {"task_id": task.task_id})
                ep = {"episode_id": start.structured_content["episode_id"]}
                unnamed = await client.call_tool("final_answer", _answer(task))
                final = await client.call_tool("final_answer", {**_answer(task), **ep})
                return unnamed, final

        unnamed, final = asyncio.run(play())
    assert unnamed.is_error and "episode_id" in unnamed.content[0].text
    assert final.structured_content["reward"] > 0


def test_a_tool_call_before_start_is_an_error_naming_the_fix(dummy_registry):
    with running(create_app(envhub.make("search"), mcp=True)) as url:

        async def call():
            async with Client(url + "/mcp") as client:
                return await client.call_tool("search", {"query": "x"})

        result = asyncio.run(call())
    assert result.is_error and "call start_episode first" in result.content[0].text


def test_a_call_after_the_episode_ended_is_an_mcp_error_saying_so(dummy_registry):
    env = envhub.make("search")
    task = env.tasks()[0]
    with running(create_app(env, mcp=True)) as url:

        async def play():
            async with Client(url + "/mcp") as client:
                await client.call_tool("start_episode", {"task_id": task.task_id})
                await client.call_tool("final_answer", {"text": "no idea"})
                return await client.call_tool("search", {"query": "x"})

        over = asyncio.run(play())
    assert over.is_error and "episode is over" in over.content[0].text
