"""One shared run over EVERY catalog entry: the checks of ``envhub check`` (the contract, bad
inputs, the gold self-check, gymnasium's checker, and the same seeds giving the same tasks and
rewards in-process and over HTTP). One code path: :mod:`envhub.authoring.selfcheck`.

The ~90 generated ``rg-`` entries (one class, reasoning-gym's generators) run these checks in
``tests/envs/test_reasoning_gym.py`` on a few tasks each (HTTP on a sample): a server per entry
here would take half an hour.

Entries tagged ``needs-data`` (real datasets that are not on this machine) are skipped with
that reason; everything else must pass offline.
"""

import pytest

import envhub
from envhub.authoring.selfcheck import CHECKS, FAILED, run_check

CATALOG = envhub.catalog()
IDS = [i for i in CATALOG.ids() if CATALOG.spec(i).family != "reasoning-gym"]


def _spec_or_skip(env_id):
    spec = CATALOG.spec(env_id)
    if "needs-data" in spec.tags:
        pytest.skip(f"{env_id} needs a dataset that is not available offline")
    return spec


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("env_id", IDS)
def test_envhub_check(env_id, check):
    result = run_check(_spec_or_skip(env_id), check)
    assert result.outcome != FAILED, f"{env_id}: {check}: {result.detail}"
