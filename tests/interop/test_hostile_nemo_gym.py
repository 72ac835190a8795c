"""A misbehaving NeMo Gym server is never the model's fault, and never a reward (issue 33).

Each misbehaviour of :mod:`hostile_nemo_gym` is played through ``NemoGymEnv``: the status is
the machinery's (``env_error``, ``infra_error``), correctness is never paid, and the step
returns within its deadline however the server trickles or floods. A server that does not
answer in time (slow, or trickling its headers or its body) is ``infra_error``, never the
model's ``timeout``.

One refusal is the model's: a request too large for the server (413, or over the entry's
``options.max_body_bytes``, then never sent) whose bulk is the model's own answer is its
``invalid_action``, as a step over ``envhub serve``'s body limit is; one whose bulk is the
task's row stays the environment's ``env_error``.
"""

from __future__ import annotations

import json
import time

import pytest
from hostile_nemo_gym import READS, HostileServer

import envhub
from envhub.client.child_server import free_port
from envhub.types import Status

TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def hostile():
    server = HostileServer()
    yield server
    server.close()


def _env(tmp_path, base_url: str, row_pad: int = 0, options: str = ""):
    rows = tmp_path / "train.jsonl"
    row = {
        "task_id": "t0",
        "responses_create_params": {"input": [{"role": "user", "content": "1+1?"}]},
        **({"pad": "p" * row_pad} if row_pad else {}),
    }
    rows.write_text(json.dumps(row) + "\n")
    (tmp_path / "nemo.yaml").write_text(
        "name: nemo-hostile\nentry_point: envhub.interop.nemo_gym:NemoGymEnv\n"
        f"dataset: {{kind: jsonl, path: {rows}}}\n"
        f"options: {{base_url: {base_url!r}, timeout_s: {TIMEOUT_S}{options}}}\n"
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


LONG_ANSWERS = ["x" * 100_000, "\u4e2d" * 20_000]
"""Each under the environment's 256,000 characters, each over 64 KiB as JSON (``\\u4e2d``: 6)."""


@pytest.mark.parametrize("answer", LONG_ANSWERS, ids=["ascii", "cjk"])
def test_a_413_for_the_models_long_answer_is_its_invalid_action(
    hostile, tmp_path, clean_user_registry, answer
):
    with _env(tmp_path, f"{hostile.url}/reads-64k") as env:
        env.reset(task_id="t0")
        step = env.step(answer)
        score = env.verify("t0", answer)
    assert (step.info.status, step.reward) == (Status.INVALID_ACTION, 0.0)
    assert "answer in a shorter message" in step.info.error and "413" in step.info.error
    assert (score.status, score.reward) == (Status.INVALID_ACTION, 0.0)


def test_a_413_for_the_rows_bulk_stays_env_error(hostile, tmp_path, clean_user_registry):
    with _env(tmp_path, f"{hostile.url}/reads-64k", row_pad=2 * READS) as env:
        env.reset(task_id="t0")
        step = env.step("x" * 1000)
    assert (step.info.status, step.reward) == (Status.ENV_ERROR, 0.0)
    assert "the task's row) is too large for the server" in step.info.error


def test_a_short_answer_to_a_server_that_reads_64k_still_pays(
    hostile, tmp_path, clean_user_registry
):
    with _env(tmp_path, f"{hostile.url}/reads-64k") as env:
        env.reset(task_id="t0")
        step = env.step("2")
    assert (step.info.status, step.reward) == (Status.OK, 1.0)


@pytest.mark.parametrize(
    ("row_pad", "answer", "status"),
    [(0, "x" * 100_000, Status.INVALID_ACTION), (2 * READS, "2", Status.ENV_ERROR)],
)
def test_over_the_stated_bound_is_refused_unsent(
    tmp_path, clean_user_registry, row_pad, answer, status
):
    nobody = f"http://127.0.0.1:{free_port()}"  # a request sent here would be infra_error
    options = f", max_body_bytes: {READS}"
    with _env(tmp_path, nobody, row_pad=row_pad, options=options) as env:
        env.reset(task_id="t0")
        step = env.step(answer)
    assert (step.info.status, step.reward) == (status, 0.0)
    assert f"the {READS} bytes of options.max_body_bytes" in step.info.error
