"""The Docker runner's client without an engine: its rules on a container's death are plans.

:class:`~envhub.docker.env.DockerEnv` changes :class:`RemoteEnv`'s calls only through
the plans that both forms drive (``reset`` and ``areset`` run one plan), and the replacement
of a dead container, a blocking call, runs on the caller's thread under the sync form and in
a worker thread under the async one. The container here is a stand-in that a test kills (the
real one is in ``test_docker.py``'s ``test_a_container_killed_from_outside_is_replaced``).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time

import pytest
from serving import serving_env

from envhub.client.plan import Pause
from envhub.client.pool import Pool
from envhub.client.remote_env import RemoteEnv, Wires
from envhub.client.transport import Session
from envhub.docker.containers import Death
from envhub.docker.env import DockerEnv
from envhub.types import Info, Score, Status, StepResult
from envhub.wire import ResetResponse, Transient

PLANS = {
    "_reset": ("reset", "areset"),
    "_step": ("step", "astep"),
    "_finish": ("finish", "afinish"),
    "_verify": ("verify_batch", "averify"),
}


def test_docker_env_changes_the_calls_only_through_the_plans_both_forms_drive():
    """No twin bodies: DockerEnv defines no public call and no async method; each method of
    RemoteEnv it overrides is a plan that RemoteEnv's sync method and its async twin both run."""
    own = {name: f for name, f in vars(DockerEnv).items() if inspect.isfunction(f)}
    assert [name for name, f in own.items() if inspect.iscoroutinefunction(f)] == []
    assert {name for name in own if hasattr(RemoteEnv, name)} == {*PLANS, "__init__", "fork"}
    for plan, pair in PLANS.items():
        assert inspect.isgeneratorfunction(own[plan]), plan
        for public in pair:
            assert getattr(DockerEnv, public) is getattr(RemoteEnv, public), public
            assert f"self.{plan}(" in inspect.getsource(getattr(RemoteEnv, public)), public


class Container:
    """A stand-in for :class:`~envhub.docker.containers.DockerHandle`: a container a
    test kills; :meth:`revive` replaces it, noting the thread it ran on."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.generation = 0
        self.deaths: list[Death] = []
        self.died_at: float | None = None
        self.revived_on: list[int] = []

    def kill(self, at: float | None = None) -> None:
        self.died_at = time.time() if at is None else at

    def revive(self, generation: int) -> Death | None:
        self.revived_on.append(threading.get_ident())
        if generation < self.generation:
            return self.deaths[generation]
        if self.died_at is None:
            return None
        self.deaths.append(Death("killed by the test", self.died_at))
        self.died_at, self.generation = None, self.generation + 1
        return self.deaths[-1]

    def close(self) -> None:
        self.died_at = time.time()


class ContainerWire:
    """A wire to a :class:`Container`: refused while it is dead; ``"die"`` kills it mid-call
    (as a program that brings the server down), ``"flake"`` fails on a live container."""

    name = "fake"

    def __init__(self, container: Container, pool: Pool) -> None:
        self.container, self.info = container, pool.info
        self.session = Session()
        self.http = self

    def _call(self, text: str = "") -> object:
        yield Pause(0.0)
        if text == '"die"':
            self.container.kill()
        if self.container.died_at is not None or text == '"flake"':
            raise Transient("connection refused")

    def reset(self, seed, task_id, aio):
        yield from self._call()
        answer = ResetResponse(
            session_id="s", session_secret="k", messages=[], info=Info(task_id=task_id)
        )
        return self.session.opened(answer)

    def step(self, message_json, aio):
        yield from self._call(message_json)
        ok = StepResult(
            messages=[], reward=0.0, terminated=False, truncated=False, info=Info(task_id="t")
        )
        return self.session.stepped(ok)

    def finish(self, aio):
        yield from self._call()
        self.session.end()
        return StepResult(
            messages=[], reward=0.0, terminated=True, truncated=False, info=Info(task_id="t")
        )

    def verify(self, items):
        yield from self._call(f'"{items[0][1]}"')
        return [Score(reward=1.0) for _ in items]

    def tasks(self, split):
        yield from self._call()
        return []

    def close(self):
        self.session.end()


BEFORE = time.time() - 60
"""A time of death before any call of the scenario began."""

SCENARIO = [  # (what the container suffers first, the call): the same for either form
    (None, ("reset",)),
    (None, ("step", "die")),  # running when it died: the model's timeout, episode over
    (None, ("reset",)),
    (BEFORE, ("step", "1")),  # found it dead: infra_error, the episode lost
    (BEFORE, ("reset",)),  # retried on the replacement
    (None, ("fork reset",)),
    (BEFORE, ("step", "1")),
    (None, ("fork step", "1")),  # its episode died too: told without a server call
    (None, ("reset",)),
    (BEFORE, ("finish",)),
    (BEFORE, ("verify", "1")),  # retried on the replacement
    (None, ("verify", "die")),  # running when it died: the model's timeout
    (None, ("reset",)),
    (None, ("step", "flake")),  # a live container: the machinery's infra_error, kept
]


def _outcome(result: object, container: Container) -> tuple:
    if isinstance(result, list):
        result = result[0]
    info = result if isinstance(result, Score) else result.info
    reward = getattr(result, "reward", None)  # a reset has none
    return info.status, reward, info.error, container.generation


async def _play(container: Container, aio: bool) -> tuple[list[tuple], int]:
    """The scenario with the sync calls, or the async ones on this event loop; the outcomes
    and the thread that made the calls."""
    env = DockerEnv(container)  # type: ignore[arg-type]
    fork, outcomes = env.fork(), []
    for death, (call, *args) in SCENARIO:
        if death is not None:
            container.kill(at=death)
        target = fork if call.startswith("fork ") else env
        name = call.removeprefix("fork ")
        args = ["count-1", *args] if name == "verify" else args
        kwargs = {"task_id": "count-2"} if name == "reset" else {}
        if aio:
            result = await getattr(target, f"a{name}")(*args, **kwargs)
        else:
            result = getattr(target, name)(*args, **kwargs)
        outcomes.append(_outcome(result, container))
    fork.close()
    env.close()
    return outcomes, threading.get_ident()


@pytest.mark.usefixtures("dummy_registry")
def test_a_death_is_decided_alike_sync_and_async_and_revived_off_the_loop(monkeypatch):
    runs = {}
    with serving_env("count") as url:
        for aio in (False, True):
            container = Container(url)
            monkeypatch.setattr(
                Wires, "new", lambda wires, pool, limits, c=container: ContainerWire(c, pool)
            )
            runs[aio] = (*asyncio.run(_play(container, aio)), container)
    (sync, sync_caller, sync_box), (aio, loop, aio_box) = runs[False], runs[True]
    ok, infra, timeout = Status.OK, Status.INFRA_ERROR, Status.TIMEOUT
    assert [(status, gen) for status, _, _, gen in sync] == [
        (ok, 0), (timeout, 1), (ok, 1), (infra, 2), (ok, 3), (ok, 3), (infra, 4), (infra, 4),
        (ok, 4), (infra, 5), (ok, 6), (timeout, 7), (ok, 7), (infra, 7),
    ]  # fmt: skip
    errors = [error for _, _, error, _ in sync]
    assert all("while it ran this" in errors[i] for i in (1, 11))
    assert all("before this call" in errors[i] for i in (3, 6, 7, 9))
    assert errors[13] == "connection refused"  # alive: the machinery's failure, as it was
    assert all(reward == 0.0 for status, reward, _, _ in sync if status is not ok)
    assert [reward for _, reward, _, _ in sync][10] == 1.0  # the verification sent again
    assert sync == aio  # the same statuses, rewards, errors and replacements
    assert len(sync_box.revived_on) == len(aio_box.revived_on) == 8  # not at the lost fork
    assert set(sync_box.revived_on) == {sync_caller}  # blocking, on the caller's thread
    assert loop not in aio_box.revived_on  # in a worker thread: the event loop runs on
