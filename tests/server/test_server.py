"""The HTTP server's answers to bad input and load, and the client's parity with local."""

import asyncio
import time

import httpx
import pytest
from serving import running

import envhub
from envhub.client.remote_env import RemoteEnv
from envhub.errors import EpisodeStateError, TaskNotFound
from envhub.server.app import ServerSettings, create_app
from envhub.types import Status


def _app(name="echo", **settings):
    return create_app(envhub.make(name), ServerSettings(**settings))


@pytest.fixture
def echo_url(dummy_registry):
    with running(_app(session_ttl_s=0.5, max_body_bytes=4096)) as url:
        yield url


def test_health_info_tasks(echo_url):
    assert httpx.get(echo_url + "/health").json() == {"status": "ok"}
    info = httpx.get(echo_url + "/info").json()
    assert info["spec"]["name"] == "echo" and info["components"] == ["correctness", "format"]
    page = httpx.get(echo_url + "/tasks", params={"limit": 3, "offset": 2}).json()
    assert page["total"] == 8 and [t["task_id"] for t in page["tasks"]] == [
        "train/2",
        "train/3",
        "train/4",
    ]
    assert "/reset" in httpx.get(echo_url + "/openapi.json").json()["paths"]


def test_oversized_body_is_413(echo_url):
    r = httpx.post(
        echo_url + "/verify", json={"items": [{"task_id": "train/0", "response": "x" * 10_000}]}
    )
    assert r.status_code == 413 and r.json()["kind"] == "too_large"


@pytest.mark.parametrize(
    "body",
    [
        {"session_id": "s", "message": {"role": "robot", "content": "hi"}},
        {"session_id": "s"},
        {"session_id": "s", "message": {"role": "assistant"}, "extra": 1},
    ],
)
def test_malformed_step_is_422_with_field(echo_url, body):
    r = httpx.post(echo_url + "/step", json=body)
    assert r.status_code == 422
    assert (
        r.json()["kind"] == "invalid_request"
        and "message" in r.json()["error"]
        or "extra" in r.json()["error"]
    )


def test_verify_item_needs_one_task_source(echo_url):
    r = httpx.post(echo_url + "/verify", json={"items": [{"response": "x"}]})
    assert r.status_code == 422 and "exactly one of task_id, gold, task" in r.json()["error"]


def test_a_gold_the_env_cannot_read_is_the_callers_422_not_a_500(echo_url):
    items = [{"gold": "kilo", "response": "kilo"}, {"gold": " ", "response": "x"}]
    r = httpx.post(echo_url + "/verify", json={"items": items})
    assert r.status_code == 422 and r.json()["kind"] == "invalid_request"
    assert r.json()["error"].startswith("items[1]: gold ' ': the gold answer is empty")


def test_unknown_and_expired_sessions(echo_url):
    nope = {"session_id": "nope", "session_secret": "x", "message": {"role": "assistant"}}
    r = httpx.post(echo_url + "/step", json=nope)
    assert r.status_code == 404 and r.json()["kind"] == "unknown_session"
    opened = httpx.post(echo_url + "/reset", json={"seed": 1}).json()
    time.sleep(0.7)
    r = httpx.post(
        echo_url + "/step",
        json={
            "session_id": opened["session_id"],
            "session_secret": opened["session_secret"],
            "message": {"role": "assistant", "content": "a"},
        },
    )
    assert r.status_code == 410 and "expired" in r.json()["error"]


def test_unknown_task_is_404_and_client_raises_same_error(echo_url):
    r = httpx.post(echo_url + "/reset", json={"task_id": "missing"})
    assert r.status_code == 404
    with RemoteEnv(echo_url) as env, pytest.raises(TaskNotFound):
        env.reset(task_id="missing")


def test_crash_inside_episode_is_that_episodes_status(echo_url):
    with RemoteEnv(echo_url) as env:
        env.reset(seed=0)
        r = env.step("boom")
        assert r.info.status is Status.ENV_ERROR and r.done
        env.reset(seed=0)
        assert env.step(env.tasks()[0].answer or "").info.status is Status.OK
        with pytest.raises(EpisodeStateError):
            env.step("after the end")


def test_overload_answers_503_with_retry_after(dummy_registry):
    with running(_app(max_inflight=1, threads=2)) as url:

        async def go():
            async with httpx.AsyncClient(base_url=url, timeout=10) as c:
                slow = asyncio.create_task(
                    c.post(
                        "/verify", json={"items": [{"task_id": "train/0", "response": "slow 0.5"}]}
                    )
                )
                await asyncio.sleep(0.15)
                fast = await c.post(
                    "/verify", json={"items": [{"task_id": "train/0", "response": "alpha"}]}
                )
                return (await slow), fast

        slow, fast = asyncio.run(go())
    assert slow.status_code == 200
    assert fast.status_code == 503 and fast.headers["Retry-After"] == "1"


def test_health_stays_fast_while_verification_saturates(dummy_registry):
    """64 concurrent CPU-bound verifications; /health must still answer in < 100 ms p95."""
    with running(_app(threads=4, max_inflight=1000)) as url:

        async def go():
            async with httpx.AsyncClient(
                base_url=url, timeout=30, limits=httpx.Limits(max_connections=100)
            ) as c:
                load = [
                    asyncio.create_task(
                        c.post(
                            "/verify",
                            json={"items": [{"task_id": "train/0", "response": "slow 0.3"}]},
                        )
                    )
                    for _ in range(64)
                ]
                await asyncio.sleep(0.2)
                lat = []
                for _ in range(10):
                    t = time.perf_counter()
                    assert (await c.get("/health")).status_code == 200
                    lat.append(time.perf_counter() - t)
                    await asyncio.sleep(0.05)
                results = await asyncio.gather(*load)
                return lat, results

        lat, results = asyncio.run(go())
    assert all(r.status_code == 200 for r in results)
    assert sorted(lat)[8] < 0.1, lat
