"""``check_env``: the conformance check every registered environment must pass.

It proves the contract (types, seed determinism, the episode lifecycle, a bad action handled
as data) and the verifier on gold: the environment's own reference action, played to the end,
must earn its primary component in full. Failures raise :class:`CheckError` naming the rule.
"""

from __future__ import annotations

from ..core import Env, Episode, TaskEnv
from ..errors import EnvhubError, EpisodeStateError, NotSupported
from ..types import Message, ResetResult, Score, Status, StepResult


class CheckError(EnvhubError):
    """An environment broke the contract; the message says which rule and how."""


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise CheckError(message)


def check_determinism(env: Env, seed: int = 1234) -> ResetResult:
    """The same seed gives the same task and opening messages."""
    first = env.reset(seed=seed)
    _require(isinstance(first, ResetResult), "reset() must return a ResetResult")
    _require(bool(first.messages), "reset() returned no opening messages")
    _require(bool(first.info.task_id), "reset() info lacks task_id")
    again = env.reset(seed=seed)
    _require(
        first.model_dump() == again.model_dump(),
        f"reset(seed={seed}) gave different results twice (task {first.info.task_id} vs "
        f"{again.info.task_id})",
    )
    by_id = env.reset(task_id=first.info.task_id)
    _require(by_id.info.task_id == first.info.task_id, "reset(task_id=...) ignored task_id")
    return first


def check_bad_action(env: Env, seed: int = 7) -> StepResult:
    """A nonsense action is data: a StepResult with a status, never an exception."""
    env.reset(seed=seed)
    result = env.step(Message(role="assistant", content="\x00 not an answer {{[(\ufffd"))
    _require(isinstance(result, StepResult), "step() must return a StepResult")
    _require(isinstance(result.info.status, Status), "step() info.status must be a Status")
    _require(
        result.info.status not in (Status.INFRA_ERROR, Status.ENV_ERROR),
        f"a nonsense answer gave status {result.info.status}: {result.info.error}",
    )
    while not result.done:
        result = env.step("still not an answer")
    try:
        env.step("one step too many")
    except EpisodeStateError:
        pass
    else:
        raise CheckError("step() after the episode ended must raise EpisodeStateError")
    return result


def check_gold(
    env: TaskEnv, seeds: tuple[int, ...] = (0, 1, 2), skip_infra: bool = False
) -> list[StepResult]:
    """Playing the reference action earns the primary component in full, status ok.

    With ``skip_infra`` an episode that ends in ``infra_error`` (a sandbox or judge that is
    down) proves nothing either way and is left out instead of failing the check.
    """
    finals = []
    for seed in seeds:
        env.reset(seed=seed)
        episode: Episode | None = env._episode
        _require(episode is not None, "reset() did not start an episode")
        assert episode is not None
        result = None
        while result is None or not result.done:
            action = env.reference_action(episode)
            if action is None:
                return finals
            result = env.step(action)
        if skip_infra and result.info.status is Status.INFRA_ERROR:
            continue
        comp = env.primary_component
        value = result.info.components.get(comp)
        _require(
            result.info.status is Status.OK and value == 1.0,
            f"gold on task {episode.task.task_id} scored {comp}={value} with status "
            f"{result.info.status} ({result.info.error}); the verifier or the gold is wrong",
        )
        _require(result.terminated, "a solved episode must end with terminated=True")
        finals.append(result)
    return finals


def check_verify(env: TaskEnv, seed: int = 0) -> Score | None:
    """Stateless verification agrees with the episode on the gold answer."""
    env.reset(seed=seed)
    episode = env._episode
    assert episode is not None
    action = env.reference_action(episode)
    if action is None or env.spec.max_turns > 1:
        return None
    try:
        score = env.verify(episode.task, action)
    except NotSupported:
        return None
    _require(score.status is Status.OK, f"verify(gold) status {score.status}: {score.error}")
    _require(
        score.components.get(env.primary_component) == 1.0,
        f"verify(gold) gave {score.components} on task {episode.task.task_id}",
    )
    return score


def check_env(env: Env) -> None:
    """Run every check; raises :class:`CheckError` on the first broken rule."""
    check_determinism(env)
    check_bad_action(env)
    if isinstance(env, TaskEnv):
        check_gold(env)
        check_verify(env)
    env.close()
    env.close()
