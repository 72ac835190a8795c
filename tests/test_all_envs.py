"""One shared run over EVERY catalog entry: the contract, the gold self-check, gymnasium's
checker, and the same seeds giving the same tasks and rewards in-process and over HTTP.

Entries tagged ``needs-data`` (real datasets that are not on this machine) are skipped with
that reason; everything else must pass offline.
"""

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import envhub
from envhub.checker import check_env
from envhub.core import TaskEnv

CATALOG = envhub.catalog()
IDS = CATALOG.ids()


def _spec_or_skip(env_id):
    spec = CATALOG.spec(env_id)
    if "needs-data" in spec.tags:
        pytest.skip(f"{env_id} needs a dataset that is not available offline")
    return spec


@pytest.mark.parametrize("env_id", IDS)
def test_contract_and_gold(env_id):
    _spec_or_skip(env_id)
    env = envhub.make(env_id)
    check_env(env)


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_checker(env_id):
    _spec_or_skip(env_id)
    env = gymnasium.make(f"envhub/{env_id}").unwrapped
    gym_check_env(env, skip_render_check=True)
    env.close()


def _transcript(env, seeds, actions):
    out = []
    for seed in seeds:
        first = env.reset(seed=seed)
        steps = []
        for action in actions[seed]:
            r = env.step(action)
            steps.append(
                (r.messages, r.reward, r.terminated, r.truncated, r.info.status, r.info.components)
            )
            if r.done:
                break
        out.append((first.messages, first.info.task_id, steps))
    return out


@pytest.mark.parametrize("env_id", IDS)
def test_http_runner_matches_in_process(env_id):
    _spec_or_skip(env_id)
    local = envhub.make(env_id)
    assert isinstance(local, TaskEnv)

    seeds = (0, 1, 5)
    actions = {}
    for seed in seeds:  # a wrong answer, then the reference answer, so rewards vary
        ref = local.fork()
        ref.reset(seed=seed)
        gold = ref.reference_action(ref._episode)
        actions[seed] = ["I am not sure.", gold or "x"] if ref.spec.max_turns > 1 else [gold or "x"]
        actions[seed + 1000] = ["I am not sure."]
    all_seeds = (*seeds, *(s + 1000 for s in seeds))
    with envhub.make(env_id, runner="http") as remote:
        got_remote = _transcript(remote, all_seeds, actions)
    got_local = _transcript(local, all_seeds, actions)
    assert got_local == got_remote
