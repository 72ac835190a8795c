"""The server's worker threads: results and exceptions come back; an abandoned call is dropped."""

from __future__ import annotations

import asyncio
import threading

import pytest

from envhub.server.workers import Workers


def test_results_exceptions_and_an_abandoned_call():
    workers = Workers(1)
    release = threading.Event()
    ran: list[str] = []

    def wedged() -> None:
        release.wait(5)
        ran.append("wedged")

    async def main():
        assert await workers.submit(lambda a, b: a + b, 2, 3) == 5
        with pytest.raises(ZeroDivisionError):
            await workers.submit(lambda: 1 / 0)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                await workers.submit(wedged)  # abandoned: its thread finishes on its own
        skipped = workers.submit(ran.append, "never")  # queued behind the wedged call
        skipped.cancel()
        release.set()
        assert await workers.submit(ran.append, "after") is None

    asyncio.run(main())
    workers.shutdown()
    assert ran == ["wedged", "after"]  # the cancelled call never ran
