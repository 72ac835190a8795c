"""The server's worker threads: results, exceptions, and deadlines that count work, not queueing."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from envhub.server.workers import Overloaded, Stalled, Workers


def test_results_exceptions_an_abandoned_call_and_a_stalled_pool():
    workers = Workers(1)
    release = threading.Event()
    ran: list[str] = []

    def wedged() -> None:
        release.wait(5)
        ran.append("wedged")

    async def main():
        assert await workers.run(lambda a, b: a + b, 2, 3, queue_s=5, run_s=1) == 5
        with pytest.raises(ZeroDivisionError):
            await workers.run(lambda: 1 / 0, queue_s=5, run_s=1)
        with pytest.raises(TimeoutError):  # abandoned: its thread finishes on its own
            await workers.run(wedged, queue_s=5, run_s=0.1)
        with pytest.raises(Stalled):  # no worker took a call for a whole deadline
            await workers.run(ran.append, "never", queue_s=0.3, run_s=0.1)
        release.set()
        assert await workers.run(ran.append, "after", queue_s=5, run_s=1) is None

    asyncio.run(main())
    workers.shutdown()
    assert ran == ["wedged", "after"]  # the refused call never ran


def test_the_deadline_counts_from_the_start_and_a_long_wait_is_refused_unstarted():
    workers = Workers(1)
    ran: list[str] = []

    async def main():
        first = asyncio.ensure_future(workers.run(time.sleep, 0.3, queue_s=1, run_s=0.4))
        await asyncio.sleep(0.01)
        # 0.3 s queued + 0.3 s of work: past 0.4 s from its submission, within it from its start
        await workers.run(time.sleep, 0.3, queue_s=1, run_s=0.4)
        await first
        blocker = asyncio.ensure_future(workers.run(time.sleep, 0.4, queue_s=1, run_s=1))
        await asyncio.sleep(0.01)
        with pytest.raises(Overloaded):
            await workers.run(ran.append, "late", queue_s=0.1, run_s=1)
        await blocker
        await workers.run(ran.append, "next", queue_s=1, run_s=1)

    asyncio.run(main())
    workers.shutdown()
    assert ran == ["next"]  # the refused call was never started, even once a worker was free
