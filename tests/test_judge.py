"""The LLM-judge reward component against a scripted endpoint that answers, fails, hangs and
babbles: answers become components; every failure is infra_error, never a reward of 0."""

import re
import threading
import time

import pytest

from envhub.errors import ConfigError
from envhub.evaluate.scripted import ScriptedEndpoint, ScriptedHTTPError, last_user_text
from envhub.localserver import free_port
from envhub.make import make_local
from envhub.preflight import PreflightError, check_spec
from envhub.spec import EnvSpec
from envhub.types import Status


def _responder(body):
    text = last_user_text(body)
    if "judgefail" in text:
        raise ScriptedHTTPError(500, "the judge fell over")
    if "ramble" in text:
        return {"content": "Well, it depends on what one means by a word, really."}
    if "scored" in text:
        return {"content": "Score: 7"}
    return {"content": "Yes." if "Answer: alpha" in text else "No, it is not."}


@pytest.fixture(scope="module")
def endpoint():
    with ScriptedEndpoint(_responder) as ep:
        yield ep


def _spec(base_url, weights, **judge):
    cfg = {
        "base_url": base_url,
        "model": "scripted",
        "prompt": "Task: {task}\nGold: {gold}\nAnswer: {response}\nRight? yes or no",
        **judge,
    }
    return EnvSpec.model_validate(
        {
            "name": "judged-echo",
            "entry_point": "dummy_envs:EchoEnv",
            "reward": {"weights": weights, "judges": {"style": cfg}},
        }
    )


def test_judge_composed_with_programmatic_components(endpoint):
    env = make_local(_spec(endpoint.base_url, {"correctness": 1.0, "style": 0.5}))
    env.reset(task_id="train/0")  # "Say alpha"
    good = env.step("alpha")
    assert good.info.status is Status.OK
    assert good.info.components == {"correctness": 1.0, "format": 1.0, "style": 1.0}
    assert good.reward == 1.5
    score = env.verify("train/0", "bravo")
    assert score.components["style"] == 0.0 and score.reward == 0.0 and score.status is Status.OK
    body = endpoint.bodies[-1]
    assert body["model"] == "scripted" and "Gold: alpha" in body["messages"][-1]["content"]


def test_judge_alone_with_a_score_verdict(endpoint):
    spec = _spec(
        endpoint.base_url, {"style": 1.0}, prompt="{response} scored?", verdict={"kind": "score"}
    )
    assert make_local(spec).verify("train/1", "x").reward == pytest.approx(0.7)


def test_cached_by_exact_input(endpoint):
    env = make_local(_spec(endpoint.base_url, {"style": 1.0}))
    before = endpoint.requests
    for _ in range(3):
        env.verify("train/0", "alpha cached")
    env.verify("train/0", "alpha cached!")
    assert endpoint.requests - before == 2


@pytest.mark.parametrize(
    ("response", "error"),
    [
        ("judgefail", r"HTTP 500: .*the judge fell over"),
        ("ramble on", r"cannot parse a yes_no verdict from 'Well, it depends"),
    ],
)
def test_failing_or_babbling_judge_is_infra_error_never_zero(endpoint, response, error):
    env = make_local(_spec(endpoint.base_url, {"correctness": 1.0, "style": 0.5}))
    env.reset(task_id="train/0")
    result = env.step(response)
    assert result.info.status is Status.INFRA_ERROR
    assert result.info.components == {}  # no component pretends to be a score
    assert pytest.approx(0.0) == result.reward and result.truncated

    assert re.search(error, result.info.error)
    assert env.verify("train/0", response).status is Status.INFRA_ERROR


def test_hanging_and_unreachable_judges_are_infra_error():
    with ScriptedEndpoint(_responder, delay=3.0) as slow:
        env = make_local(_spec(slow.base_url, {"style": 1.0}, timeout_s=0.3))
        started = time.monotonic()
        score = env.verify("train/0", "alpha")
        assert time.monotonic() - started < 2.5
        assert score.status is Status.INFRA_ERROR and "no answer within 0.3s" in score.error
    dead = f"http://127.0.0.1:{free_port()}/v1"
    score = make_local(_spec(dead, {"style": 1.0})).verify("train/0", "alpha")
    assert score.status is Status.INFRA_ERROR and "unreachable" in score.error


def test_concurrency_cap():
    with ScriptedEndpoint(_responder, delay=0.3) as ep:
        env = make_local(_spec(ep.base_url, {"style": 1.0}, max_concurrency=1))
        threads = [
            threading.Thread(target=env.verify, args=("train/0", f"alpha {i}")) for i in range(4)
        ]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert time.monotonic() - started >= 1.2  # one at a time: 4 x 0.3 s
        assert ep.requests == 4


def test_registration_checks_know_judge_components(endpoint):
    check_spec(_spec(endpoint.base_url, {"correctness": 1.0, "style": 0.5}))
    with pytest.raises(PreflightError, match="did you mean 'style'"):
        check_spec(_spec(endpoint.base_url, {"stlye": 1.0}))
    clash = _spec(endpoint.base_url, {"correctness": 1.0})
    clash = clash.model_copy(
        update={
            "reward": clash.reward.model_copy(
                update={"judges": {"format": clash.reward.judges["style"]}}
            )
        }
    )
    with pytest.raises(ConfigError, match="give the judge another name"):
        make_local(clash)


def test_a_judge_that_is_down_does_not_block_registration_but_fails_check(tmp_path):
    import envhub
    from envhub.registry import unregister
    from envhub.selfcheck import run_check

    dead = f"http://127.0.0.1:{free_port()}/v1"
    f = tmp_path / "j.yaml"
    f.write_text(
        "name: judged-down\nentry_point: dummy_envs:EchoEnv\nreward:\n"
        "  weights: {correctness: 1.0, style: 0.5}\n"
        f"  judges: {{style: {{base_url: '{dead}', model: m, prompt: '{{response}}?'}}}}\n"
    )
    [spec] = envhub.register(f)  # infra_error proves nothing either way: not refused
    try:
        result = run_check(spec, "gold")
        assert result.outcome == "failed" and "infra_error" in result.detail
    finally:
        unregister("judged-down")
