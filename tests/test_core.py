"""The environment contract, the episode boundary and reward composition (test doubles)."""

import asyncio
import threading

import pytest

import envhub
from envhub.errors import ConfigError, EpisodeStateError, VerifierTimeout, status_for
from envhub.rewards import Rubric
from envhub.types import Message, Status


@pytest.fixture
def echo(dummy_registry):
    with envhub.make("echo") as env:
        yield env


def test_reset_is_deterministic_and_selects_by_id(echo):
    a, b = echo.reset(seed=3), echo.reset(seed=3)
    assert a == b
    assert a.messages[-1].role == "user" and a.info.task_id
    assert echo.reset(task_id="train/5").info.task_id == "train/5"


def test_step_scores_and_ends(echo):
    first = echo.reset(task_id="train/1")
    assert first.messages[-1].content == "Say bravo"
    r = echo.step("bravo")
    assert (r.reward, r.terminated, r.truncated) == (1.5, True, False)
    assert r.info.components == {"correctness": 1.0, "format": 1.0}
    assert r.info.status is Status.OK and r.info.turn == 1
    with pytest.raises(EpisodeStateError, match="reset"):
        echo.step("again")


def test_step_before_reset_and_wrong_role(echo):
    with pytest.raises(EpisodeStateError):
        echo.step("x")
    echo.reset(seed=0)
    with pytest.raises(ValueError, match="assistant"):
        echo.step(Message(role="user", content="hi"))


@pytest.mark.parametrize(
    ("text", "status"),
    [("boom", Status.ENV_ERROR), ("infra", Status.INFRA_ERROR), ("invalid", Status.INVALID_ACTION)],
)
def test_failures_become_status_not_crash(echo, text, status):
    echo.reset(seed=0)
    r = echo.step(text)
    assert r.info.status is status and r.truncated and r.reward == 0.0
    assert r.info.error
    score = echo.verify(echo.tasks()[0], text)
    assert score.status is status and score.error


def test_infra_error_is_never_ok_zero(echo):
    score = echo.verify("train/0", "infra")
    assert not (score.status is Status.OK and score.reward == 0.0)


def test_verify_by_id_by_task_and_batch(echo):
    task = echo.get_task("train/2")
    assert echo.verify("train/2", "charlie").reward == 1.5
    assert echo.verify(task, "Charlie").components == {"correctness": 0.0, "format": 0.0}
    scores = echo.verify_batch([(task, "charlie"), (task, "boom"), (task, "x")])
    assert [s.status for s in scores] == [Status.OK, Status.ENV_ERROR, Status.OK]


def test_multi_turn_episode_and_truncation(dummy_registry):
    with envhub.make("count") as env:
        env.reset(task_id="count-3")
        assert env.step("1").messages[0].content == "go on"
        r2 = env.step("2")
        assert not r2.done and r2.reward == 0.0
        r3 = env.step("3")
        assert r3.terminated and r3.reward == 1.0
    with envhub.make("count", max_turns=2) as env:
        env.reset(task_id="count-4")
        env.step("1")
        r = env.step("2")
        assert r.truncated and not r.terminated and r.info.turn == 2


def test_multi_turn_crash_is_episode_error(dummy_registry):
    with envhub.make("count") as env:
        env.reset(task_id="count-2")
        r = env.step("crash")
        assert r.info.status is Status.ENV_ERROR and r.done


def test_reward_weights_from_overrides(dummy_registry):
    with envhub.make("echo", reward={"weights": {"format": 0.0}}) as env:
        assert env.verify("train/0", "alpha").reward == 1.0
    with envhub.make("echo", reward={"weights": {"length": -1.0}, "length_limit": 4}) as env:
        s = env.verify("train/0", "alphaalpha")
        assert s.components["length"] == 1.0 and s.reward == pytest.approx(-1.0 + 0.5)


def test_unknown_component_is_rejected(dummy_registry):
    with pytest.raises(ConfigError, match="offers"):
        envhub.make("echo", reward={"weights": {"speed": 1.0}})
    with pytest.raises(ConfigError):
        Rubric(weights={"x": 1.0}, offered=frozenset({"y"}))


def test_fork_shares_tasks_not_episodes(echo):
    child = echo.fork()
    echo.reset(task_id="train/0")
    child.reset(task_id="train/1")
    assert echo.step("alpha").reward == 1.5
    assert child.step("bravo").reward == 1.5
    assert child.tasks() is echo.tasks()


def test_unknown_option_is_a_config_error(dummy_registry):
    with pytest.raises(ConfigError, match="options"):
        envhub.make("echo", colour="blue")


async def test_async_api(echo):
    r = await echo.areset(seed=1)
    s = await echo.astep("x")
    assert r.info.task_id == s.info.task_id
    score = await echo.averify("train/0", "alpha")
    assert score.reward == 1.5


def _score_raising(exc):
    def score(task, response):
        raise exc

    return score


@pytest.mark.parametrize(
    "exc",
    [TimeoutError("the database did not answer"), asyncio.TimeoutError()],
    ids=["TimeoutError", "asyncio.TimeoutError"],
)
def test_a_raw_timeout_error_from_a_hook_is_env_error_not_the_models_timeout(
    echo, monkeypatch, exc
):
    """A raw TimeoutError says a wait ran out, not whose: never charged to the model as 0."""
    monkeypatch.setattr(echo, "score", _score_raising(exc))
    echo.reset(seed=0)
    r = echo.step("alpha")
    assert r.info.status is Status.ENV_ERROR and r.truncated
    assert r.reward == 0.0 and r.info.components == {}  # dropped, not scored
    score = echo.verify("train/0", "alpha")
    assert score.status is Status.ENV_ERROR and score.components == {}
    assert status_for(exc) is Status.ENV_ERROR


def test_the_models_timeout_is_declared_verifier_timeout_or_the_step_deadline(echo, monkeypatch):
    monkeypatch.setattr(echo, "score", _score_raising(VerifierTimeout("the program ran 20 s")))
    echo.reset(seed=0)
    r = echo.step("alpha")
    assert r.info.status is Status.TIMEOUT and r.info.components["correctness"] == 0.0
    assert echo.verify("train/0", "alpha").status is Status.TIMEOUT

    release = threading.Event()
    monkeypatch.setattr(echo, "score", lambda task, response: release.wait(5))
    monkeypatch.setattr(echo, "step_timeout_s", 0.05)
    echo.reset(seed=0)
    try:
        r = echo.step("alpha")
    finally:
        release.set()
    assert r.info.status is Status.TIMEOUT and "deadline" in r.info.error
