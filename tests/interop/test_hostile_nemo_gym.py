"""A misbehaving NeMo Gym server is never the model's fault, and never a reward (issue 33).

Each misbehaviour of :mod:`hostile_nemo_gym` is played through ``NemoGymEnv``: the status is
the machinery's (``env_error``, ``infra_error``), correctness is never paid, and the step
returns within its deadline however the server trickles or floods. A server that does not
answer in time (slow, or trickling its headers or its body) is ``infra_error``, never the
model's ``timeout``.
"""

from __future__ import annotations

import json
import time

import pytest
from hostile_nemo_gym import HostileServer

import envhub
from envhub.types import Status

TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def hostile():
    server = HostileServer()
    yield server
    server.close()


def _env(tmp_path, base_url: str):
    rows = tmp_path / "train.jsonl"
    row = {
        "task_id": "t0",
        "responses_create_params": {"input": [{"role": "user", "content": "1+1?"}]},
    }
    rows.write_text(json.dumps(row) + "\n")
    (tmp_path / "nemo.yaml").write_text(
        "name: nemo-hostile\nentry_point: envhub.interop.nemo_gym:NemoGymEnv\n"
        f"dataset: {{kind: jsonl, path: {rows}}}\n"
        f"options: {{base_url: {base_url!r}, timeout_s: {TIMEOUT_S}}}\n"
    )
    envhub.register(tmp_path / "nemo.yaml")
    return envhub.make("nemo-hostile")


@pytest.mark.parametrize(
    ("mode", "status", "says"),
    [
        ("html", Status.ENV_ERROR, "answered with no JSON"),
        ("array", Status.ENV_ERROR, "not a JSON object"),
        ("reward-string", Status.ENV_ERROR, "reward='1', not a number"),
        ("reward-nan", Status.ENV_ERROR, "not a number"),
        ("reward-missing", Status.ENV_ERROR, "reward=None, not a number"),
        ("server-error", Status.INFRA_ERROR, "failed (500)"),
        ("rejected", Status.ENV_ERROR, "rejected the request (422)"),
        ("rate-limited", Status.INFRA_ERROR, "failed (429)"),
        ("reward-huge-int", Status.ENV_ERROR, "not a float"),
        ("trickle", Status.INFRA_ERROR, "did not answer within 2 s"),
        ("trickle-headers", Status.INFRA_ERROR, "did not answer within 2 s"),
        ("slow", Status.INFRA_ERROR, "did not answer within 2 s"),
        ("huge-declared", Status.ENV_ERROR, "over the"),
        ("huge-undeclared", Status.ENV_ERROR, "the rest was not read"),
    ],
)
def test_each_misbehaviour_is_the_servers_and_pays_nothing(
    hostile, tmp_path, clean_user_registry, mode, status, says
):
    with _env(tmp_path, f"{hostile.url}/{mode}") as env:
        env.reset(task_id="t0")
        started = time.monotonic()
        step = env.step("2")
        took = time.monotonic() - started
    assert (step.info.status, step.reward) == (status, 0.0)
    assert says in step.info.error
    assert took < TIMEOUT_S + 1.5


def test_a_well_behaved_server_still_pays(hostile, tmp_path, clean_user_registry):
    with _env(tmp_path, f"{hostile.url}/fine") as env:
        env.reset(task_id="t0")
        step = env.step("2")
    assert (step.info.status, step.reward) == (Status.OK, 1.0)
