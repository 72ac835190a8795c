"""The port an agent reaches serves no answers (issue 33, item 6).

``envhub serve NAME`` (plain, ``--openenv``, ``--nemo-gym``) answers ``/tasks`` (gold
answers) and ``/verify`` (a free oracle; NeMo Gym's own ``/verify`` under ``--nemo-gym`` too)
with 403 unless started with ``--answers``; episodes are served as ever. envhub's own runners
start their servers with ``--answers``. Every route of every dialect is listed here as an
oracle (refused) or reviewed as serving no answers, so a new route cannot slip in unreviewed.
"""

from __future__ import annotations

import httpx
import pytest
from serving import running

import envhub
from envhub.server.app import ServerSettings, create_app


@pytest.mark.parametrize("dialect", [None, "openenv", "nemo-gym"])
def test_without_answers_tasks_and_verify_are_refused_and_episodes_still_play(
    dummy_registry, dialect
):
    app = create_app(envhub.make("echo"), ServerSettings(answers=False), dialect=dialect)
    with running(app) as url:
        tasks = httpx.get(url + "/tasks")
        verify = httpx.post(url + "/verify", json={"items": [{"task_id": "x", "response": "1"}]})
        reset = httpx.post(url + "/reset", json={"seed": 0})
    assert tasks.status_code == 403 and "--answers" in tasks.json()["error"]
    assert verify.status_code == 403 and "--answers" in verify.json()["error"]
    assert reset.status_code == 200


ORACLES = {("GET", "/tasks"), ("POST", "/verify")}
"""Routes that hand out gold answers or grade a guess outside an episode: behind --answers."""
REVIEWED = {
    ("GET", "/health"), ("GET", "/info"), ("GET", "/metrics"), ("GET", "/docs"),
    ("GET", "/docs/oauth2-redirect"), ("GET", "/redoc"), ("GET", "/openapi.json"),
    ("POST", "/reset"), ("POST", "/step"), ("POST", "/finish"), ("POST", "/close"),
    # OpenEnv's, and its 0.10 Task API (task ids and opening messages, no gold)
    ("GET", "/metadata"), ("GET", "/schema"), ("GET", "/state"),
    ("GET", "/list_environments"), ("GET", "/{env_name}/splits"),
    ("POST", "/{env_name}/tasks"), ("POST", "/{env_name}/num_tasks"),
    ("POST", "/{env_name}/task"), ("POST", "/{env_name}/task_range"),
    ("POST", "/seed_session"),  # NeMo Gym's: answers {}
}  # fmt: skip
"""Routes reviewed as serving no gold and grading nothing outside an episode."""


def _routes(app) -> set[tuple[str, str]]:
    from fastapi.routing import APIRoute

    return {
        (method, r.path)
        for r in app.routes
        if isinstance(r, APIRoute)
        for method in r.methods - {"HEAD"}
    } | {("GET", "/openapi.json")}


@pytest.mark.parametrize("dialect", [None, "openenv", "nemo-gym"])
def test_every_route_is_an_oracle_behind_answers_or_reviewed_as_serving_none(
    dummy_registry, dialect
):
    app = create_app(envhub.make("echo"), ServerSettings(answers=False), dialect=dialect)
    routes = _routes(app)
    unreviewed = routes - ORACLES - REVIEWED
    assert not unreviewed, f"review {unreviewed}: add each to ORACLES (and refuse it) or REVIEWED"
    with running(app) as url:
        for method, path in routes & ORACLES:
            answer = httpx.request(method, url + path, json={})
            assert answer.status_code == 403, (method, path, answer.text)


NEMO_ROW = {"responses_create_params": {"input": []}}


def _nemo_verify(url: str, guess: str, **names: str) -> httpx.Response:
    output = [{"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": guess}]}]  # fmt: skip
    return httpx.post(url + "/verify", json={**NEMO_ROW, "response": {"output": output}, **names})


@pytest.mark.parametrize(
    "names",
    [{"task_id": "train/0"}, {"expected_answer": "alpha"}, {"gold": "alpha"}],
    ids=["task_id", "expected_answer", "gold"],
)
def test_nemo_gyms_verify_is_no_oracle_without_answers(dummy_registry, names):
    """The attack: grade guesses for a task id (or a gold of one's own) on the agent's port."""
    env = envhub.make("echo")
    with running(create_app(env, ServerSettings(answers=False), dialect="nemo-gym")) as url:
        refused = [_nemo_verify(url, guess, **names) for guess in ("alpha", "beta")]
        seeded = httpx.post(url + "/seed_session", json={})
    assert [r.status_code for r in refused] == [403, 403]
    assert "reward" not in refused[0].text and "--answers" in refused[0].json()["error"]
    assert seeded.status_code == 200
    with running(create_app(env, ServerSettings(answers=True), dialect="nemo-gym")) as url:
        graded = _nemo_verify(url, "alpha", task_id="train/0")
    assert graded.status_code == 200 and graded.json()["envhub"]["components"]["correctness"] == 1.0


def test_the_serve_command_serves_no_answers_unless_told(monkeypatch):
    import contextlib

    from envhub.server import cli

    seen = []
    monkeypatch.setattr(cli, "_serve_here", lambda *a, **kw: seen.append(a[3]["answers"]))
    monkeypatch.setattr(cli, "stop_signals", contextlib.nullcontext)
    monkeypatch.setattr(cli, "follow_parent", lambda: None)
    cli.serve("echo", port=0)
    cli.serve("echo", port=0, openenv=True)
    cli.serve("echo", port=0, answers=True)
    assert seen == [False, False, True]


def test_envhubs_own_http_runner_still_lists_and_verifies(dummy_registry):
    with envhub.make("echo", runner="http") as env:
        task = env.tasks()[0]
        assert env.verify(task, "anything").status.value == "ok"


def test_the_docker_servers_follow_the_flag(dummy_registry):
    from envhub.docker.containers import envhub_service

    spec = envhub.catalog().spec("echo")
    assert "--answers" in envhub_service(spec).command  # the Docker runner's own server
    assert "--answers" not in envhub_service(spec, answers=False).command  # serve --docker
