"""``envhub serve search --mcp``: an MCP client lists the tools, plays an episode, gets the reward."""

from __future__ import annotations

import asyncio

from mcp import Client
from serving import running

import envhub
from envhub.server.app import create_app


def test_an_mcp_client_plays_a_search_episode_and_gets_the_reward():
    env = envhub.make("search")
    task = env.tasks()[0]
    with running(create_app(env, mcp=True)) as url:

        async def play():
            async with Client(url + "/mcp") as client:
                names = [t.name for t in (await client.list_tools()).tools]
                opening = await client.call_tool("start_episode", {"task_id": task.task_id})
                ep = {"episode_id": opening.structured_content["episode_id"]}
                found = await client.call_tool("search", {"query": task.prompt, **ep})
                final = await client.call_tool(
                    "final_answer", {"text": f"<answer>{task.answer}</answer>", **ep}
                )
                again = await client.call_tool("start_episode", {"task_id": task.task_id})
                ep = {"episode_id": again.structured_content["episode_id"]}
                wrong = await client.call_tool("final_answer", {"text": "nope", **ep})
                return names, opening, found, final, wrong

        names, opening, found, final, wrong = asyncio.run(play())
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
                start = await client.call_tool("start_episode", {"task_id": task.task_id})
                ep = {"episode_id": start.structured_content["episode_id"]}
                await client.call_tool("final_answer", {"text": "no idea", **ep})
                return await client.call_tool("search", {"query": "x", **ep})

        over = asyncio.run(play())
    assert over.is_error and "episode is over" in over.content[0].text
