"""The port an agent reaches serves no answers (issue 33, item 6).

``envhub serve NAME`` (plain, ``--openenv``, ``--nemo-gym``) answers ``/tasks`` (gold
answers) and ``/verify`` (a free oracle) with 403 unless started with ``--answers``; episodes
are served as ever. envhub's own runners start their servers with ``--answers``.
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
    if dialect != "nemo-gym":  # NeMo Gym's own /verify is its protocol, scored per episode row
        assert verify.status_code == 403 and "--answers" in verify.json()["error"]
    assert reset.status_code == 200


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
