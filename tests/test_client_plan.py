"""The client's plans: one generator, the same steps and result whether driven or awaited."""

import asyncio

import pytest

from envhub.client.plan import Http, Pause, adrive, drive


def _plan(log):
    """Sends a request again after a dropped connection, as ``RemoteEnv._http`` does."""
    for attempt in range(3):
        try:
            answer = yield Http("POST", "/step", {"content": b"{}"})
        except ConnectionError as e:
            log.append(f"dropped: {e}")
            yield Pause(0.0)
            continue
        return f"{answer} after {attempt} drops"
    raise RuntimeError("gave up")


def _performer(outcomes, seen):
    def perform(op):
        seen.append(type(op).__name__)
        if isinstance(op, Pause):
            return None
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return perform


def _async(perform):
    async def aperform(op):
        await asyncio.sleep(0)
        return perform(op)

    return aperform


def test_a_failed_step_is_thrown_into_the_plan_alike_sync_and_async():
    runs = []
    for mode in ("sync", "async"):
        log, seen = [], []
        perform = _performer([ConnectionError("reset by peer"), "200 OK"], seen)
        plan = _plan(log)
        result = (
            drive(plan, perform) if mode == "sync" else asyncio.run(adrive(plan, _async(perform)))
        )
        runs.append((result, log, seen))
    assert runs[0] == runs[1]
    assert runs[0][0] == "200 OK after 1 drops"
    assert runs[0][1] == ["dropped: reset by peer"]
    assert runs[0][2] == ["Http", "Pause", "Http"]


def test_an_error_the_plan_does_not_handle_reaches_the_caller_alike():
    for run in (
        lambda: drive(_plan([]), _performer([ValueError("bad answer")], [])),
        lambda: asyncio.run(adrive(_plan([]), _async(_performer([ValueError("bad answer")], [])))),
    ):
        with pytest.raises(ValueError, match="bad answer"):
            run()


def test_a_plan_that_ends_before_any_io_returns_alike():
    """A plan may decide without I/O (a wire that fails at once, an answer already known)."""

    def answered():
        if True:
            return "known"
        yield Pause(0.0)

    never = _performer([], [])
    assert drive(answered(), never) == "known"
    assert asyncio.run(adrive(answered(), _async(never))) == "known"
