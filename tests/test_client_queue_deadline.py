"""The client's deadline does not count the time a step queued in the server (issue 33, item 7).

A server with one worker thread runs two episodes' long steps one after the other: the second
waits in the server's queue, then runs. Its answer comes after the client's ``timeout`` of
work but within ``timeout`` plus the server's queue bound: the model's step, not a dropped
``infra_error``, on both wires.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from serving import running

import envhub
from envhub.client.remote_env import RemoteEnv
from envhub.server.app import ServerSettings, create_app
from envhub.types import Status

WORK_S = 1.2
TIMEOUT_S = 2.0


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_queueing_in_the_server_is_not_counted_against_the_step(dummy_registry, transport):
    settings = ServerSettings(threads=1, queue_timeout_s=3.0)
    with running(create_app(envhub.make("echo"), settings)) as url:
        first = RemoteEnv(url, timeout=TIMEOUT_S, transport=transport)
        second = first.fork()
        for env in (first, second):
            env.reset(seed=0)
        with ThreadPoolExecutor(2) as pool:
            steps = list(pool.map(lambda e: e.step(f"slow {WORK_S}"), (first, second)))
        first.close()
    assert [s.info.status for s in steps] == [Status.OK, Status.OK]
