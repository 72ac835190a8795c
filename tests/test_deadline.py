"""envhub.deadline: a call under a wall-clock deadline on reusable worker threads, and an await."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from envhub.deadline import DeadlineExceeded, await_within, call_within


def test_returns_the_result_and_reuses_its_worker():
    seen = {call_within(threading.get_ident, 5.0) for _ in range(20)}
    assert call_within(lambda: 41 + 1, 5.0) == 42
    assert len(seen) == 1  # one idle worker serves sequential calls


def test_reraises_what_the_call_raised():
    with pytest.raises(RecursionError, match="deep"):
        call_within(lambda: (_ for _ in ()).throw(RecursionError("deep")), 5.0)


def test_an_overrun_is_abandoned_and_never_starves_the_next_call():
    release = threading.Event()
    start = time.perf_counter()
    with pytest.raises(DeadlineExceeded):
        call_within(lambda: release.wait(10), 0.1)
    assert time.perf_counter() - start < 1.0
    assert call_within(lambda: "next", 1.0) == "next"  # a fresh worker, not the stuck one
    release.set()


def test_await_within_returns_raises_and_cancels_at_its_deadline():
    async def wait(seconds: float, error: BaseException | None = None) -> str:
        await asyncio.sleep(seconds)
        if error is not None:
            raise error
        return "done"

    async def run() -> None:
        assert await await_within(wait(0.01), 1.0) == "done"
        with pytest.raises(KeyError):
            await await_within(wait(0.01, KeyError("x")), 1.0)
        # the awaitable's own TimeoutError is not this deadline's
        with pytest.raises(TimeoutError) as own:
            await await_within(wait(0.01, TimeoutError("its own")), 1.0)
        assert not isinstance(own.value, DeadlineExceeded)
        task = asyncio.ensure_future(wait(5.0))
        t0 = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            await await_within(task, 0.05)
        assert time.monotonic() - t0 < 1.0
        await asyncio.sleep(0)
        assert task.cancelled()

    asyncio.run(run())
