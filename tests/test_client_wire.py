"""The client's one protocol: both wires speak it, the session lives in one place.

:class:`~envhub.client.remote_env.RemoteEnv` holds a :class:`~envhub.client.transport.Wire` and
delegates; a wire written from the protocol alone must drive it through an episode, and the
session's id, secret and step count must live in the wire's one
:class:`~envhub.client.transport.Session`, whichever wire carried the episode.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
from pathlib import Path

import pytest
from serving import running

import envhub
from envhub.client import remote_env
from envhub.client.http_wire import HttpWire
from envhub.client.plan import Pause
from envhub.client.pool import Pool
from envhub.client.remote_env import RemoteEnv, Wires
from envhub.client.transport import Session, Wire
from envhub.client.ws_wire import WsWire
from envhub.errors import EpisodeStateError, TransportError
from envhub.server.app import ServerSettings, create_app
from envhub.types import Info, Message, Score, Status, StepResult
from envhub.wire import ResetResponse, Transient


@pytest.fixture
def count_url(dummy_registry):
    with running(create_app(envhub.make("count"), ServerSettings())) as url:
        yield url


def _members(cls) -> dict[str, list[str]]:
    """Each public member of ``cls`` and, for a method, its parameter names."""
    out = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("_"):
            continue
        params = inspect.signature(member).parameters if inspect.isfunction(member) else {}
        out[name] = list(params)
    return out


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_both_wires_speak_the_protocol_with_its_signatures(count_url, transport):
    with RemoteEnv(count_url, transport=transport) as env:
        wire = env._wire
        assert isinstance(wire, Wire) and wire.name == transport
        assert type(wire) is {"ws": WsWire, "http": HttpWire}[transport]
    protocol = _members(Wire)
    for cls in (HttpWire, WsWire):
        members = _members(cls)
        for name, params in protocol.items():
            assert members.get(name) == params, f"{cls.__name__}.{name} differs from Wire's"


class FakeWire:
    """A wire written from the protocol alone: no server, canned answers, a log of calls."""

    name = "fake"

    def __init__(self) -> None:
        self.session = Session()
        self.http = self
        self.calls: list[tuple] = []
        self.described = None

    def made_by(self, pool: Pool) -> FakeWire:
        """Take the served description, renamed: what ``info`` answers comes from here."""
        self.described = pool.info.model_copy(update={"name": "fake-served"})
        return self

    @property
    def info(self):
        return self.described

    def reset(self, seed, task_id, aio):
        self.calls.append(("reset", seed, task_id, aio))
        yield Pause(0.0)
        hello = [Message(role="user", content=f"task {task_id}")]
        answer = ResetResponse(
            session_id="s-1", session_secret="k-1", messages=hello, info=Info(task_id=task_id)
        )
        return self.session.opened(answer)

    def step(self, message_json, aio):
        self.calls.append(("step", message_json, aio, self.session.steps + 1))
        yield Pause(0.0)
        if message_json == '"crash"':
            raise Transient("the fake server fell over")
        done = self.session.steps == 1
        info = Info(task_id="t", turn=self.session.steps + 1)
        result = StepResult(
            messages=[], reward=float(done), terminated=done, truncated=False, info=info
        )
        return self.session.stepped(result)

    def finish(self, aio):
        self.calls.append(("finish", aio))
        raise Transient("no finish here")
        yield  # a plan

    def verify(self, items):
        self.calls.append(("verify", len(items)))
        yield Pause(0.0)
        return [Score(reward=1.0) for _ in items]

    def tasks(self, split):
        self.calls.append(("tasks", split))
        raise Transient("listing failed")
        yield  # a plan

    def close(self):
        self.calls.append(("close", self.session.live))
        self.session.end()


def test_a_wire_written_from_the_protocol_drives_an_episode(count_url, monkeypatch):
    fake = FakeWire()
    monkeypatch.setattr(Wires, "new", lambda wires, pool, limits: fake.made_by(pool))
    env = RemoteEnv(count_url)
    assert isinstance(fake, Wire) and env.info()["name"] == "fake-served"
    assert env.reset(task_id="t").messages[0].content == "task t"
    assert asyncio.run(env.astep("ünï")).info.turn == 1  # serialised once, by the env
    assert env.step({"role": "assistant", "content": "2"}).terminated
    with pytest.raises(EpisodeStateError):  # the fake's session ended the episode
        env.step("3")
    asyncio.run(env.areset(task_id="u"))
    crashed = env.step("crash")  # the wire's Transient is the machinery's: infra_error
    assert crashed.info.status == Status.INFRA_ERROR and "fell over" in crashed.info.error
    assert not fake.session.live
    env.reset(task_id="v")
    assert env.finish().info.status == Status.INFRA_ERROR
    assert [s.reward for s in env.verify_batch([("t", "a"), ("t", "b")])] == [1.0, 1.0]
    with pytest.raises(TransportError, match="listing failed"):
        env.tasks()
    env.close()
    assert fake.calls == [
        ("reset", None, "t", False),
        ("step", '{"role":"assistant","content":"ünï"}', True, 1),
        ("step", '{"role":"assistant","content":"2"}', False, 2),
        ("reset", None, "u", True),
        ("step", '"crash"', False, 1),
        ("reset", None, "v", False),
        ("finish", False),
        ("verify", 2),
        ("tasks", None),
        ("close", False),
    ]


def _holders(root: object, value: object) -> list[tuple[object, str]]:
    """``(object, attribute)`` for every client object reachable from ``root`` holding ``value``.

    Follows attributes (``__dict__`` and slots) into objects of ``envhub.client`` and the
    tuples and lists between them; a connection pool's or library's insides are not followed.
    """
    found, seen, todo = [], set(), [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, tuple | list):
            todo.extend(obj)
            continue
        names = list(getattr(obj, "__dict__", {}))
        names += [n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ())]
        for name in names:
            attr = getattr(obj, name, None)
            if type(attr) is type(value) and attr == value:
                found.append((obj, name))
            elif isinstance(attr, tuple | list) or type(attr).__module__.startswith(
                "envhub.client"
            ):
                todo.append(attr)
    return found


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_the_session_lives_in_one_place_whichever_wire(count_url, transport):
    with RemoteEnv(count_url, transport=transport) as env:
        env.reset(task_id="count-4")
        assert env.step("1").info.status == Status.OK
        asyncio.run(env.astep("2"))  # the async path too (over ws: its own connection)
        session = env._wire.session
        assert session.live and session.steps == 2
        assert _holders(env, session.secret) == [(session, "secret")]
        # a connection remembers which session it drives on the server, nothing else
        id_holders = {(type(o).__name__, name) for o, name in _holders(env, session.id)}
        assert id_holders <= {("Session", "id"), ("Channel", "attached")}
        for channel in getattr(env._wire, "_channels", ()):
            assert channel.session is session
        # the step's seq is read from that one Session: rewound, the server answers step 2
        # again from its record instead of applying "3"
        session.steps = 1
        replay = env.step("3")
        assert replay.info.turn == 2 and session.steps == 2
        assert [env.step(str(n)).info.status for n in (3, 4)] == [Status.OK] * 2
        assert not session.live


def test_sync_and_async_calls_on_one_ws_handle_continue_one_episode(count_url):
    with RemoteEnv(count_url, transport="ws") as env:
        env.reset(task_id="count-4")
        rewards = []
        for n in range(1, 5):  # each switch resumes the session on the other connection
            step = env.step(str(n)) if n % 2 else asyncio.run(env.astep(str(n)))
            assert step.info.status == Status.OK, step.info.error
            rewards.append(step.reward)
        assert rewards == [0.0, 0.0, 0.0, 1.0] and step.terminated
        assert asyncio.run(env.areset(task_id="count-4")).info.task_id == "count-4"
        assert env.step("1").info.turn == 1


def _calls(node: ast.AST, driver: str) -> set[str]:
    """The plans ``node`` hands to ``driver`` (``drive`` or ``adrive``): ``self._step`` -> ``_step``."""
    out = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == driver:
            plan = call.args[0]
            if isinstance(plan, ast.Call) and isinstance(plan.func, ast.Attribute):
                out.add(plan.func.attr)
    return out


def test_each_async_method_awaits_the_plan_its_sync_twin_drives():
    """No twin bodies: a public async method of the env is one line awaiting a plan that a
    sync method drives with blocking calls, so their logic cannot drift apart."""
    tree = ast.parse(Path(remote_env.__file__).read_text(encoding="utf-8"))
    env_class = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RemoteEnv")
    driven = _calls(env_class, "drive")
    asyncs = [n for n in env_class.body if isinstance(n, ast.AsyncFunctionDef)]
    assert {n.name for n in asyncs} == {"areset", "astep", "afinish", "averify"}
    for method in asyncs:
        body = [s for s in method.body if not isinstance(getattr(s, "value", None), ast.Constant)]
        assert len(body) == 1 and isinstance(body[0], ast.Return), method.name
        plans = _calls(method, "adrive")
        assert len(plans) == 1 and plans <= driven, f"{method.name} awaits {plans}, not driven"
