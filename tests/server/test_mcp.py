"""``envhub serve search --mcp``: the harness starts episodes, the agent plays them with tools.

The harness holds ``/mcp/control`` (``start_episode``, ``finish_episode``); the agent (the
policy) gets ``/mcp?episode=ID``: the environment's tools and ``final_answer``, on that
episode only. The attacks: an agent that restarts its episode or acts on another session's,
and a stateless client that opens episodes until the table is full.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx
from mcp import Client
from serving import running

import envhub
from envhub.server.app import ServerSettings, create_app


def _answer(task) -> dict:
    return {"text": f"<answer>{task.answer}</answer>"}


SECRETS: dict[str, str] = {}
"""Each started episode's session_secret, which the harness puts in the agent's URL."""


async def _start(control: Client, **args) -> str:
    started = await control.call_tool("start_episode", args)
    assert not started.is_error, started.content[0].text
    return _remember(started)


def _remember(started) -> str:
    episode = started.structured_content["episode_id"]
    SECRETS[episode] = started.structured_content["session_secret"]
    return episode


def _agent(url: str, episode: str, secret: str | None = None, **kw) -> Client:
    secret = secret or SECRETS.get(episode, "")
    return Client(f"{url}/mcp?episode={episode}&secret={secret}", **kw)


def test_an_agent_plays_the_episode_the_harness_started_and_gets_the_reward():
    env = envhub.make("search")
    task = env.tasks()[0]
    with running(create_app(env, mcp=True)) as url:

        async def play():
            async with Client(url + "/mcp/control") as control:
                opening = await control.call_tool("start_episode", {"task_id": task.task_id})
                episode = _remember(opening)
                assert opening.structured_content["agent_url"] == (
                    f"/mcp?episode={episode}&secret={SECRETS[episode]}"
                )
                async with _agent(url, episode) as agent:
                    tools = (await agent.list_tools()).tools
                    found = await agent.call_tool("search", {"query": task.prompt})
                    final = await agent.call_tool("final_answer", _answer(task))
                    versions = (control.protocol_version, agent.protocol_version)
                    return versions, tools, opening, found, final

        versions, tools, opening, found, final = asyncio.run(play())
    assert max(versions) < "2026"  # handshake-era sessions (Mcp-Session-Id), not stateless
    names = [t.name for t in tools]
    assert set(names) == {"search", "open", "final_answer"}  # no episode control for the agent
    assert not any("episode_id" in t.input_schema.get("properties", {}) for t in tools)
    assert task.prompt in opening.content[0].text
    assert opening.structured_content["previous"] is None
    assert found.content[0].text and not found.is_error
    assert found.structured_content["done"] is False
    assert final.structured_content["done"] is True
    assert final.structured_content["status"] == "ok"
    assert final.structured_content["components"]["correctness"] == 1.0
    assert final.structured_content["reward"] > 0


def test_two_concurrent_agents_play_independent_episodes():
    env = envhub.make("search")
    tasks = env.tasks()[:2]
    with running(create_app(env, mcp=True)) as url:

        async def rollout(task, answer: dict, started: asyncio.Event, other: asyncio.Event):
            async with Client(url + "/mcp/control") as control:
                episode = await _start(control, task_id=task.task_id)
                async with _agent(url, episode) as agent:
                    started.set()
                    await other.wait()  # both episodes are open before either answers
                    return await agent.call_tool("final_answer", answer)

        async def both():
            a, b = asyncio.Event(), asyncio.Event()
            return await asyncio.gather(
                rollout(tasks[0], _answer(tasks[0]), a, b),
                rollout(tasks[1], {"text": "no idea"}, b, a),
            )

        right, wrong = asyncio.run(both())
        left = httpx.get(url + "/metrics").json()
    assert right.structured_content["components"]["correctness"] == 1.0
    assert wrong.structured_content["components"]["correctness"] == 0.0
    assert left["episodes"] == 2 and left["sessions"] == 0


def test_an_agent_cannot_restart_its_episode_to_pick_a_task_or_wipe_its_penalties():
    env = envhub.make("search")
    task, easier = env.tasks()[:2]
    with running(create_app(env, mcp=True)) as url:

        async def attack():
            async with Client(url + "/mcp/control") as control:
                episode = await _start(control, task_id=task.task_id)
                async with _agent(url, episode) as agent:
                    bad = await agent.call_tool("search", {"bogus": 1})  # a penalised call
                    restart = await agent.call_tool("start_episode", {"task_id": easier.task_id})
                    final = await agent.call_tool("final_answer", _answer(task))
                    return bad, restart, final, httpx.get(url + "/metrics").json()

        bad, restart, final, metrics = asyncio.run(attack())
    assert bad.structured_content["status"] == "invalid_action"
    assert restart.is_error and "started by the harness" in restart.content[0].text
    assert metrics["episodes"] == 1  # no episode was started by the agent
    components = final.structured_content["components"]
    assert components["correctness"] == 1.0  # still the harness's task
    assert components["invalid_calls"] == 1.0  # the penalty stands


def test_an_agent_cannot_touch_another_sessions_episode():
    env = envhub.make("search")
    mine, theirs = env.tasks()[:2]
    with running(create_app(env, mcp=True)) as url:

        async def attack():
            async with (
                Client(url + "/mcp/control") as control,
                Client(url + "/mcp/control") as other_control,
            ):
                a = await _start(control, task_id=mine.task_id)
                b = await _start(other_control, task_id=theirs.task_id)
                async with _agent(url, a) as attacker, _agent(url, b) as victim:
                    await victim.call_tool("search", {"query": theirs.prompt})  # b is bound
                    named = await attacker.call_tool("final_answer", {"text": "x", "episode_id": b})
                    async with _agent(url, b) as hijack:
                        joined = await hijack.call_tool("final_answer", {"text": "x"})
                    async with _agent(url, b, mode="2026-07-28") as stateless:
                        bare = await stateless.call_tool("final_answer", {"text": "x"})
                    honest = await victim.call_tool("final_answer", _answer(theirs))
                    return b, named, joined, bare, honest

        b, named, joined, bare, honest = asyncio.run(attack())
    assert named.is_error and f"cannot act on episode {b!r}" in named.content[0].text
    assert joined.is_error and "played by another MCP session" in joined.content[0].text
    assert bare.is_error and "played by another MCP session" in bare.content[0].text
    assert honest.structured_content["components"]["correctness"] == 1.0  # b was untouched
    assert honest.structured_content["components"]["tool_calls"] == 1.0


def test_a_harness_restart_is_paid_as_a_truncation():
    env = envhub.make("search")
    task = env.tasks()[0]
    with running(create_app(env, mcp=True)) as url:

        async def restart():
            async with Client(url + "/mcp/control") as control:
                first = await _start(control, task_id=task.task_id)
                async with _agent(url, first) as agent:
                    await agent.call_tool("search", {"bogus": 1})
                    again = await control.call_tool("start_episode", {})
                    late = await agent.call_tool("final_answer", _answer(task))
                    return again, late, httpx.get(url + "/metrics").json()

        again, late, metrics = asyncio.run(restart())
    previous = again.structured_content["previous"]
    assert previous["truncated"] is True and previous["done"] is True
    assert previous["components"]["invalid_calls"] == 1.0  # the old episode's accounting
    assert previous["reward"] < 0
    assert late.is_error and "episode is over" in late.content[0].text
    assert metrics["mcp_restarts"] == 1 and metrics["sessions"] == 1


def test_an_episode_ends_with_its_control_session_not_with_its_agent():
    env = envhub.make("search")
    with running(create_app(env, mcp=True)) as url:

        def live() -> int:
            return httpx.get(url + "/metrics").json()["sessions"]

        async def leave():
            async with Client(url + "/mcp/control") as control:
                episode = await _start(control, seed=0)
                async with _agent(url, episode) as agent:
                    await agent.call_tool("search", {"query": "x"})
                after_agent = live()
                finished = await control.call_tool("finish_episode", {})
                await _start(control, seed=1)
                return after_agent, finished, live()

        after_agent, finished, before_exit = asyncio.run(leave())
        after_control = live()
    assert after_agent == 1  # the agent leaving does not end the harness's episode
    assert finished.structured_content["truncated"] is True
    assert finished.structured_content["components"]["tool_calls"] == 1.0
    assert (before_exit, after_control) == (1, 0)  # the control DELETE ended the second one


def test_one_stateless_client_cannot_starve_another():
    env = envhub.make("search")
    task = env.tasks()[0]
    app = create_app(env, ServerSettings(max_sessions=16), mcp=True)  # 2 per stateless client
    with running(app) as url:

        async def flood_then_serve():
            async with Client(url + "/mcp/control", mode="2026-07-28") as flood:
                calls = [flood.call_tool("start_episode", {}) for _ in range(20)]
                starts = await asyncio.gather(*calls)  # all at once: no quota overrun
                held = httpx.get(url + "/metrics").json()["sessions"]
                mine = next(s for s in starts if not s.is_error)
                ended = {"episode_id": mine.structured_content["episode_id"]}
                await flood.call_tool("finish_episode", ended)
                freed = await flood.call_tool("start_episode", {})
                async with Client(url + "/mcp/control") as other:
                    episode = await _start(other, task_id=task.task_id)
                    async with _agent(url, episode) as agent:
                        served = await agent.call_tool("final_answer", _answer(task))
                return starts, held, freed, served

        starts, held, freed, served = asyncio.run(flood_then_serve())
    refused = [s for s in starts if s.is_error]
    assert len(refused) == 18 and held == 2
    assert "holds 2 live episodes started without an MCP session" in refused[0].content[0].text
    assert not freed.is_error  # finishing one of its own gave the slot back
    assert served.structured_content["components"]["correctness"] == 1.0


def test_one_client_holds_at_most_half_the_table_through_control_sessions():
    env = envhub.make("search")
    with running(create_app(env, ServerSettings(max_sessions=16), mcp=True)) as url:

        async def flood():
            async with contextlib.AsyncExitStack() as stack:
                sessions = [
                    await stack.enter_async_context(Client(url + "/mcp/control")) for _ in range(9)
                ]
                starts = [await c.call_tool("start_episode", {}) for c in sessions]
                reset = httpx.post(url + "/reset", json={"seed": 0})
                return starts, reset

        starts, reset = asyncio.run(flood())
    assert [s.is_error for s in starts] == [False] * 8 + [True]
    assert "holds 8 live episodes, the most one client may" in starts[-1].content[0].text
    assert reset.status_code == 200  # the table still has room for everyone else


def test_a_stateless_client_ends_only_its_own_episodes():
    with running(create_app(envhub.make("search"), mcp=True)) as url:

        async def attack():
            async with Client(url + "/mcp/control") as owner:
                theirs = await _start(owner, seed=0)
                async with Client(url + "/mcp/control", mode="2026-07-28") as stranger:
                    unnamed = await stranger.call_tool("finish_episode", {})
                    named = await stranger.call_tool("finish_episode", {"episode_id": theirs})
                    wrong = await owner.call_tool("finish_episode", {"episode_id": "nope"})
                return unnamed, named, wrong, httpx.get(url + "/metrics").json()["sessions"]

        unnamed, named, wrong, live = asyncio.run(attack())
    assert unnamed.is_error and "pass the episode_id" in unnamed.content[0].text
    assert named.is_error and "was not started by this client" in named.content[0].text
    assert wrong.is_error and "can end only the episode it started" in wrong.content[0].text
    assert live == 1


def test_an_episode_from_http_reset_is_playable_over_mcp():
    env = envhub.make("search")
    task = env.tasks()[0]
    with running(create_app(env, mcp=True)) as url:
        opened = httpx.post(url + "/reset", json={"task_id": task.task_id}).json()
        sid, secret = opened["session_id"], opened["session_secret"]

        async def play():
            async with _agent(url, sid, secret) as agent:
                return await agent.call_tool("final_answer", _answer(task))

        final = asyncio.run(play())
    assert final.structured_content["components"]["correctness"] == 1.0


def test_an_episode_id_without_its_secret_cannot_be_played_over_mcp():
    """The attack: a client that learned another's session id (a log, a URL) attaches an MCP
    agent to it. The id alone is no credential on /mcp, as on HTTP and /ws."""
    env = envhub.make("search")
    task = env.tasks()[0]
    with running(create_app(env, mcp=True)) as url:
        opened = httpx.post(url + "/reset", json={"task_id": task.task_id}).json()
        sid = opened["session_id"]

        async def attack():
            async with _agent(url, sid, "not-the-secret") as wrong:
                forged = await wrong.call_tool("final_answer", _answer(task))
            async with Client(f"{url}/mcp?episode={sid}") as bare:
                bare_call = await bare.call_tool("final_answer", _answer(task))
            async with _agent(url, sid, opened["session_secret"]) as owner:
                real = await owner.call_tool("final_answer", {"text": "<answer>no</answer>"})
            return forged, bare_call, real

        forged, bare_call, real = asyncio.run(attack())
    for refused in (forged, bare_call):
        assert refused.is_error and "session_secret" in refused.content[0].text
    assert real.structured_content["components"]["correctness"] == 0.0  # the owner's own answer


def test_an_agent_without_an_episode_gets_an_error_naming_the_fix(dummy_registry):
    with running(create_app(envhub.make("search"), mcp=True)) as url:

        async def call():
            async with Client(url + "/mcp") as agent:
                return await agent.call_tool("search", {"query": "x"})

        result = asyncio.run(call())
    assert result.is_error and "/mcp?episode=<episode_id>" in result.content[0].text


def test_a_call_after_the_episode_ended_is_an_mcp_error_saying_so(dummy_registry):
    with running(create_app(envhub.make("search"), mcp=True)) as url:

        async def play():
            async with Client(url + "/mcp/control") as control:
                async with _agent(url, await _start(control, seed=0)) as agent:
                    await agent.call_tool("final_answer", {"text": "no idea"})
                    return await agent.call_tool("search", {"query": "x"})

        over = asyncio.run(play())
    assert over.is_error and "episode is over" in over.content[0].text
