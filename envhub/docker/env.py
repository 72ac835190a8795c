"""The Docker runner's client: an HTTP env that outlives its container.

A container can die under its server: killed from outside, or by a program (a fork tree past
the memory limit got the server OOM-killed; delegated cgroups, :mod:`.cgroup`, and the
sandbox's ``oom_score_adj`` now prevent that where they apply). Without care every later call
on the handle would fail as ``infra_error`` until a new ``make()``. :class:`DockerEnv`
notices the death on the call that fails, has :meth:`DockerHandle.revive` start a new
container at the same address, and scores the call:

- a step, ``finish`` or verification that was running when the container died is the model's:
  ``timeout``, reward as for any truncation (0 under the catalog's weights), the error saying
  what happened. The episode ends: its state died with the container.
- a call that found the container already dead (Docker's time of death is before the call
  began: killed from outside, or by another episode sharing it) is not: a step or ``finish``
  is ``infra_error`` (its episode is lost), a verification is retried on the new container.
- ``reset`` carries no model output: it is retried on the new container.

Later calls, on this handle and its forks, run on the new container. A call whose container is
alive and answers ``/health`` keeps its ``infra_error``: the machinery failed, not the model.

Each of these rules is written once: :class:`DockerEnv` overrides :class:`RemoteEnv`'s plans
(:mod:`envhub.client.plan`), which ``reset`` and ``areset`` (and each such pair) drive, and
the replacement, a blocking call, is a :class:`~envhub.client.plan.Call` step of the plan: on
the caller's thread under ``reset``, in a worker thread under ``areset``, off the event loop.
"""

from __future__ import annotations

import time
from typing import Any

from envhub.client.plan import Call, Plan
from envhub.client.remote_env import RemoteEnv
from envhub.client.transport import Items
from envhub.errors import EnvhubError, TransportError
from envhub.rewards import Rubric
from envhub.spec import EnvSpec
from envhub.types import Info, Message, ResetResult, Score, Status, StepResult

from .containers import Death, DockerHandle, start_container


class DockerEnv(RemoteEnv):
    """An environment served from a container that is replaced when a program kills it."""

    def __init__(self, handle: DockerHandle, **kwargs: Any) -> None:
        """Talk to ``handle``'s container; ``kwargs`` are :class:`RemoteEnv`'s (not ``url``)."""
        owner = None if kwargs.get("_shared") is not None else handle
        super().__init__(handle.url, owner=owner, **kwargs)
        self.handle = handle
        self._generation = handle.generation
        """The container generation the current episode lives on."""
        self._task_id = ""

    def fork(self) -> DockerEnv:
        """A second handle on the same container, with its own episode and a shared pool."""
        shared = (self._pool, self._wires)
        return DockerEnv(self.handle, timeout=self.timeout, retries=self.retries, _shared=shared)

    # ------------------------------------------------------------------ the contract, as plans

    # RemoteEnv's reset/areset, step/astep, finish/afinish and verify_batch/averify drive these
    # plans, blocking or awaited: each behaviour below is written once for both. The revive is
    # a blocking ``Call`` step: on the caller's thread, or in a worker thread off the loop.

    def _reset(self, aio: bool, seed: int | None, task_id: str | None) -> Plan[ResetResult]:
        """Start an episode; on a container that died, on its replacement."""
        generation = self.handle.generation
        try:
            return self._began((yield from super()._reset(aio, seed, task_id)))
        except TransportError:
            if (yield Call(self._revive, (generation,))) is None:
                raise
        self._wire.session.end()  # it died with the old container: nothing to close
        return self._began((yield from super()._reset(aio, seed, task_id)))

    def _step(self, aio: bool, action: Message | str) -> Plan[StepResult]:
        """One step; see the module docstring for a container's death."""
        return (yield from self._outlived(super()._step(aio, action)))

    def _finish(self, aio: bool) -> Plan[StepResult]:
        """End the episode from outside; see :meth:`_step` for a container's death."""
        return (yield from self._outlived(super()._finish(aio)))

    def _outlived(self, call: Plan[StepResult]) -> Plan[StepResult]:
        """``call`` (a step or ``finish``) scored as the module docstring says on a death."""
        if (lost := self._lost_already()) is not None:
            return lost  # ``call`` never started: nothing to close
        started = time.time()
        result = yield from call
        if result.info.status is not Status.INFRA_ERROR:
            return result
        death = yield Call(self._revive, (self._generation,))
        return self._scored(result, death, started)

    def _verify(self, items: Items) -> Plan[list[Score]]:
        """Verify; a batch that found the container dead already goes to the replacement."""
        generation, started = self.handle.generation, time.time()
        scores = yield from super()._verify(items)
        if not _all_infra(scores):
            return scores
        death = yield Call(self._revive, (generation,))
        if death is not None and death.before(started):
            return (yield from super()._verify(items))
        return _verdicts(scores, death)

    # ------------------------------------------------------------------ after a death

    def _began(self, result: ResetResult) -> ResetResult:
        self._generation = self.handle.generation
        self._task_id = result.info.task_id
        return result

    def _revive(self, generation: int) -> Death | None:
        """:meth:`DockerHandle.revive`; a replacement that fails is the machinery's (``None``)."""
        try:
            return self.handle.revive(generation)
        except Exception:  # noqa: BLE001 - the call keeps its infra_error; the next one retries
            return None

    def _lost_already(self) -> StepResult | None:
        """The episode's container died before this call (noticed by another handle)."""
        if not self._wire.session.live or self._generation == self.handle.generation:
            return None
        death = self.handle.deaths[self._generation]
        return self._ended(Status.INFRA_ERROR, f"{_told(death)} before this call: {LOST}")

    def _scored(self, result: StepResult, death: Death | None, started: float) -> StepResult:
        if death is None:
            return result  # the container is alive: the machinery failed, not the program
        if death.before(started):
            return self._ended(Status.INFRA_ERROR, f"{_told(death)} before this call: {LOST}")
        return self._ended(Status.TIMEOUT, f"{_told(death)} while it ran this call: {BLAMED}")

    def _ended(self, status: Status, error: str) -> StepResult:
        self._lost_step(TransportError(error))  # ends the session
        rubric = Rubric(weights=dict(self.spec.reward.weights))
        components = rubric.truncation({}) if status is Status.TIMEOUT else {}  # as truncated
        info = Info(task_id=self._task_id, status=status, components=components, error=error)
        reward = rubric.total(components)
        return StepResult(messages=[], reward=reward, terminated=False, truncated=True, info=info)


LOST = "the episode is lost (its state was in that container); reset() starts a new one there"
BLAMED = (
    "scored as the model's timeout (a program that outgrows the container's memory or "
    "processes kills it); the episode ended, the next reset() runs on the new container"
)


def _told(death: Death) -> str:
    return f"the environment's container died ({death.what}) and was replaced"


def _all_infra(scores: list[Score]) -> bool:
    return bool(scores) and all(s.status is Status.INFRA_ERROR for s in scores)


def _verdicts(scores: list[Score], death: Death | None) -> list[Score]:
    """The scores of a verification that was running when its container died."""
    if death is None:
        return scores
    error = f"{_told(death)} while it ran this verification: {BLAMED}"
    return [Score(reward=0.0, status=Status.TIMEOUT, error=error) for _ in scores]


def make_env(spec: EnvSpec, url: str | None = None, **kwargs: Any) -> Any:
    """The ``docker`` runner of ``envhub.make`` (entry point ``envhub.runners: docker``).

    Starts the environment's server in a container and returns a
    :class:`DockerEnv` that owns it (closing the env removes the
    container) and replaces it when a program kills it.
    """
    if url is not None:
        raise EnvhubError("url= is only for runner='http'; the docker runner starts its own")
    return DockerEnv(start_container(spec), **kwargs)
