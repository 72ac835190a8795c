"""`envhub.interop.verifiers:VerifiersEnv`: a verifiers taskset (tests/support/vf_arith.py)
played through envhub, from the virtual environment envhub makes for verifiers, gives the
rewards verifiers itself gives the same completions.

The venv is the one of ``conftest.py``; where it cannot be made, the tests skip and say so.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import envhub
from envhub.types import Status

SUPPORT = Path(__file__).parents[1] / "support"


@pytest.fixture
def arith(tmp_path, clean_user_registry, venv_python):
    (tmp_path / "arith.yaml").write_text(
        "name: vf-arith\nentry_point: envhub.interop.verifiers:VerifiersEnv\n"
        f"options: {{environment: vf_arith, args: {{n: 4}}, venv: {str(venv_python.parents[1])!r}}}\n"
    )
    envhub.register(tmp_path / "arith.yaml")
    return "vf-arith"


COMPLETIONS = [("sum-0", "10"), ("sum-1", "12"), ("sum-2", "The answer is 14"), ("sum-3", "99")]


def _verifiers_rewards(python: Path) -> list[float]:
    lines = "".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in COMPLETIONS)
    out = subprocess.run([str(python), str(SUPPORT / "vf_parity.py")], input=lines, text=True,
                         capture_output=True, check=True, timeout=300, cwd=SUPPORT)  # fmt: skip
    return [json.loads(line)["reward"] for line in out.stdout.splitlines()]


def test_envhub_rewards_equal_verifiers_own_scores(arith, venv_python):
    expected = _verifiers_rewards(venv_python)
    assert expected == [1.25, 1.25, 0.0, 0.25]  # correct (weight 1) + brief (weight 0.25)
    got = []
    with envhub.make(arith) as env:
        assert env.info()["weights"] == {"correct": 1.0, "brief": 0.25}
        for task_id, completion in COMPLETIONS:
            opened = env.reset(task_id=task_id)
            assert [m.role for m in opened.messages] == ["system", "user"]
            step = env.step(completion)
            assert step.terminated and step.info.status is Status.OK
            got.append(step.reward)
        assert env.verify("sum-1", "12").components == {"correct": 1.0, "brief": 1.0}
    assert got == pytest.approx(expected)


def test_a_misspelt_option_of_the_factory_entry_is_refused_at_registration(
    tmp_path, clean_user_registry
):
    (tmp_path / "typo.yaml").write_text(
        "name: vf-typo\nentry_point: envhub.interop.verifiers:VerifiersEnv\n"
        "options: {enviroment: vf_arith}\n"
    )
    with pytest.raises(envhub.errors.EnvhubError, match="options.enviroment") as err:
        envhub.register(tmp_path / "typo.yaml")
    assert "environment" in str(err.value)


@pytest.mark.parametrize("reply", ["abc", "9" * 5000])
def test_a_reward_function_raising_on_the_reply_is_the_models_invalid_action(
    tmp_path, clean_user_registry, venv_python, reply
):
    """A single-turn task whose reward reads the reply with ``int()`` raises verifiers'
    ``TaskError`` on ``abc``: that was ``env_error``, so a model escaped its 0 by writing
    what the reward function cannot read. The multi-turn rule holds here too."""
    (tmp_path / "strict.yaml").write_text(
        "name: vf-strict\nentry_point: envhub.interop.verifiers:VerifiersEnv\n"
        f"options: {{environment: vf_strict, venv: {str(venv_python.parents[1])!r}}}\n"
    )
    envhub.register(tmp_path / "strict.yaml")
    with envhub.make("vf-strict") as env:
        env.reset(task_id="s-0")
        assert env.step("1").reward == 1.0
        env.reset(task_id="s-0")
        step = env.step(reply)
    assert (step.info.status, step.reward) == (Status.INVALID_ACTION, 0.0)
    assert "TaskError" in step.info.error
