"""A reward is always a finite number (issue 22, point 6).

The attacks: a YAML, an override or ``envhub register`` that sets a weight to ``nan``, ``inf``
or ``1e308`` (every reward ``nan`` or ``-inf``: one such sample poisons a batch's advantages),
and an environment whose component comes out ``nan`` or infinite, or whose weighted sum
overflows. Weights are refused where a spec is made, naming the field; a non-finite component
is the environment's bug: status ``env_error``, reward 0, never a ``nan`` reward.
"""

import math
import textwrap

import pytest

import envhub
from envhub.core import Feedback, TaskEnv
from envhub.errors import ConfigError, RegistryError
from envhub.rewards import MAX_WEIGHT, Rubric
from envhub.spec import EnvSpec
from envhub.types import Message, Status, Task

pytestmark = pytest.mark.usefixtures("clean_user_registry")

BAD_WEIGHTS = [".nan", ".inf", "-.inf", "1.0e+400", "1.0e+7", "-2000000", "1.0e+308"]
"""YAML spellings: ``.nan``/``.inf`` are YAML's, ``1.0e+400`` overflows to infinity."""


@pytest.mark.parametrize("weight", BAD_WEIGHTS)
def test_register_refuses_a_non_finite_or_huge_weight_naming_the_field(tmp_path, weight):
    f = tmp_path / "echoes.yaml"
    f.write_text(
        textwrap.dedent(f"""\
        name: echoes
        entry_point: dummy_envs:EchoEnv
        reward:
          weights:
            format: 0.5
            correctness: {weight}
        """)
    )
    with pytest.raises(RegistryError) as info:
        envhub.register(f)
    msg = str(info.value)
    assert f"{f}:6: environment 'echoes', field 'reward.weights.correctness'" in msg
    assert f"a weight must be a finite number from -{MAX_WEIGHT:.0f} to {MAX_WEIGHT:.0f}" in msg
    assert "Nothing was registered" in msg
    with pytest.raises(envhub.EnvNotFound):
        envhub.spec("echoes")


@pytest.mark.parametrize("weight", [math.nan, math.inf, -math.inf, 1e308, -1e7])
def test_every_other_way_to_set_a_weight_refuses_it(weight):
    with pytest.raises(ConfigError, match=r"'reward\.weights\.correctness'.*finite number"):
        envhub.make("gsm8k", reward={"weights": {"correctness": weight}})
    with pytest.raises(ValueError, match=r"(?s)reward\.weights\.correctness.*finite number"):
        EnvSpec(name="x", reward={"weights": {"correctness": weight}})
    with pytest.raises(ConfigError, match=r"reward\.weights\.correctness: .*finite number"):
        Rubric(weights={"correctness": weight})


def test_the_bound_itself_is_allowed():
    spec = EnvSpec(name="x", reward={"weights": {"a": MAX_WEIGHT, "b": -MAX_WEIGHT}})
    assert spec.reward.weights == {"a": MAX_WEIGHT, "b": -MAX_WEIGHT}


class NumbersEnv(TaskEnv):
    """The component is whatever number the model wrote, a bug an environment can have.

    ``count`` is a counter; the episode ends on ``stop``. Truncation measures ``count`` as the
    last number written.
    """

    components = frozenset({"score", "count"})
    counters = frozenset({"count"})

    def builtin_tasks(self, split, size, seed):
        return [Task(task_id="n", prompt="Write a number.")]

    def env_response(self, episode, message):
        text = message.content.strip()
        if text.startswith("stop "):
            return Feedback(done=True, components={"score": float(text.split()[1])})
        return Feedback(messages=[Message(role="user", content="more")])

    def score(self, task, response):
        return {"score": float(response.content)}, {}

    def on_truncate(self, episode):
        return {"count": float(episode.messages[-1].content.split()[-1])}


def numbers(**weights):
    weights = weights or {"score": 1.0}
    return NumbersEnv(EnvSpec(name="numbers", max_turns=2, reward={"weights": weights}))


@pytest.mark.parametrize("written", ["nan", "inf", "-inf"])
def test_a_non_finite_component_is_an_env_error_with_a_finite_reward(written):
    env = numbers()
    env.reset(seed=0)
    result = env.step(f"stop {written}")
    assert result.info.status == Status.ENV_ERROR and result.reward == 0.0
    assert "not finite" in result.info.error
    score = env.verify("n", written)
    assert score.status == Status.ENV_ERROR and score.reward == 0.0


def test_a_non_finite_component_with_weight_zero_is_still_refused():
    """Reported but not counted is still reported: 0 * nan is nan, and JSON has no nan."""
    env = numbers(score=1.0, count=0.0)
    env.reset(seed=0)
    env.step("1")
    result = env.step("go nan")  # the turn budget ends here: on_truncate measures nan
    assert result.info.status == Status.ENV_ERROR and result.reward == 0.0


def test_an_overflowing_sum_is_an_env_error():
    env = numbers(score=MAX_WEIGHT, count=MAX_WEIGHT)
    env.reset(seed=0)
    env.step("1")
    result = env.step("go 1e308")  # finite count, finite weight: the product overflows
    assert result.info.status == Status.ENV_ERROR and result.reward == 0.0
    assert "overflows" in result.info.error


def test_finish_on_a_non_finite_measure_is_an_env_error():
    env = numbers(score=1.0, count=1.0)
    env.reset(seed=0)
    env.step("nan")
    result = env.finish()
    assert result.info.status == Status.ENV_ERROR and math.isfinite(result.reward)


def test_finite_numbers_still_pay():
    env = numbers(score=2.0)
    env.reset(seed=0)
    assert env.step("stop 0.25").reward == 0.5
    assert env.verify("n", "0.5").reward == 1.0
