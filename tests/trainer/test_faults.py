"""Surviving lost workers: engines and env workers restarted by Ray, a lost policy worker resumed.

- A restarted generation engine cannot sample with stale weights: it refuses a generate call
  for a weight version it does not hold, and the driver refits it from the newest weights'
  object first (checked here against a reference forward with those weights).
- A run whose engine and env worker processes are SIGKILLed mid-rollout finishes: the
  episodes they held are dropped and counted under ``dropped/infra_error``, and after the
  restart the engine's logprobs equal the trainer's, over the object store and over gloo
  (where the weight-transfer group is formed again to let the new engine process in).
- A run whose policy worker is SIGKILLed stops with a message naming ``--resume auto``; the
  same command with ``--resume auto`` continues from the newest checkpoint to the end.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

ray = pytest.importorskip("ray")

from envhub.engines.transformers_engine import TransformersEngine  # noqa: E402
from envhub.engines.types import SamplingParams  # noqa: E402
from envhub.trainer.config import Config  # noqa: E402
from envhub.trainer.refit.base import Push  # noqa: E402
from envhub.trainer.refit.syncs import ObjectStoreSync  # noqa: E402
from envhub.trainer.workers.cluster import Cluster  # noqa: E402
from envhub.trainer.workers.generation import EngineNotRefit, GenerationWorker, engine_score  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny.yaml"
SEQ = [1, 5, 9, 20, 33, 7, 41, 2]


def _perturbed(model_dir):
    engine = TransformersEngine.from_pretrained(model_dir)
    gen = torch.Generator().manual_seed(0)
    return {
        k: v + 0.05 * torch.randn(v.shape, generator=gen) if v.is_floating_point() else v
        for k, v in engine.model.state_dict().items()
    }


@contextlib.contextmanager
def private_ray(num_cpus=2):
    """A local Ray of this test's own (its temp dir removed after), reaching these tests."""
    tmp = tempfile.mkdtemp(prefix="envhub-ft-")
    path = os.pathsep.join([str(REPO), str(REPO / "tests" / "trainer")])
    env = {"PYTHONPATH": path, "TOKENIZERS_PARALLELISM": "false"}
    ray.init(
        address="local",
        num_cpus=num_cpus,
        _temp_dir=tmp,
        include_dashboard=False,
        runtime_env={"env_vars": env},
    )
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


def refit_engine(tiny_path, state):
    """A restartable engine actor refit (version 1) with ``state``, and its sync."""
    cfg = Config.model_validate({"cluster": {"placement": "split"}})
    engine = ray.remote(num_cpus=1, max_restarts=1)(GenerationWorker).remote(
        0, cfg.model_dump(mode="json"), str(tiny_path), 1
    )
    policy = ray.remote(num_cpus=0)(_FakePolicy).remote(state)
    sync = ObjectStoreSync([policy], [engine])
    sync.push(version=1)
    return cfg, engine, policy, sync


class _FakePolicy:
    """Rank 0 of a policy whose weights moved away from the checkpoint's."""

    def __init__(self, state):
        self.state = state

    def send(self, order):
        assert order == Push(1)
        return self.state


def test_an_engine_refuses_a_weight_version_it_does_not_hold(tiny_path):
    worker = GenerationWorker(0, Config().model_dump(mode="json"), str(tiny_path), 1)
    params = SamplingParams(max_tokens=2, seed=0)
    with pytest.raises(EngineNotRefit, match="holds weight version None, asked for 3"):
        worker.generate([SEQ], params, version=3)
    worker.receive(Push(3), worker.engine.model.state_dict())
    assert len(worker.generate([SEQ], params, version=3)) == 1


@pytest.mark.slow
def test_a_restarted_engine_is_refit_before_it_samples(tiny_path):
    state = _perturbed(str(tiny_path))
    reference = TransformersEngine.from_pretrained(str(tiny_path))
    reference.load_state_dict(state)
    [want] = engine_score(reference, [SEQ], [3], 1.0)
    with private_ray():
        cfg, engine, policy, sync = refit_engine(tiny_path, state)
        [got] = ray.get(engine.score.remote([SEQ], [3], 1.0))
        assert got == pytest.approx(want, abs=1e-5)

        pid = ray.get(engine.where.remote())["pid"]
        os.kill(pid, signal.SIGKILL)
        # the driver's view: Cluster.generate over this engine (no other worker needed)
        cluster = Cluster.over(cfg, [engine], [policy], sync)
        cluster.weights_version = 1
        out = cluster.generate([SEQ[:4]] * 2, SamplingParams(max_tokens=3, seed=0))
        assert len(out) == 2
        assert ray.get(engine.where.remote())["pid"] != pid  # a new process
        [again] = ray.get(engine.score.remote([SEQ], [3], 1.0))
        assert again == pytest.approx(want, abs=1e-5)  # it holds the newest weights again


def _start(out, *overrides):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "envhub.cli", "train", str(TINY), *overrides, "--out", str(out)]
    return subprocess.Popen(
        cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _wait_for_step(proc, out, step, timeout_s=400):
    metrics = Path(out) / "metrics.jsonl"
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= step:
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended before step {step}: {proc.stdout.read()[-4000:]}")
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    pytest.fail(f"no step {step} within {timeout_s} s")


def _finish(proc, timeout_s=600):
    """The run's log once it ends; killed (and the test failed) if it runs past ``timeout_s``."""
    try:
        return proc.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        log = proc.communicate()[0]
        pytest.fail(f"the run did not end within {timeout_s} s: {log[-3000:]}")


def _pids(out, group):
    rows = json.loads((Path(out) / "placement.json").read_text())
    return [r["pid"] for r in rows if r["group"] == group]


def _rows(out):
    return [json.loads(x) for x in (Path(out) / "metrics.jsonl").read_text().splitlines()]


FAST = [
    "loss.kl_beta=0",
    "train.skip_zero_advantage=false",  # token_mult_prob_error on every row
    "cluster.policy_workers=1",
    "checkpoint.export_final=false",
    # the tiny random model often gives every group one reward: such steps train on nothing, which
    # is no fault here (five in a row stopped a five-step run that had recovered)
    "watchdog.max_empty_steps=100",
]


ASYNC = [
    "generation.max_trajectory_age_steps=2",
    "generation.in_flight_updates=true",
    "train.steps=5",  # batches run ahead: steps after the one whose batch the kill emptied
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("transport", "mode"),
    [
        ("object_store", []),
        # gloo: the group formed again; and refits from the driver's thread while the rollout
        # thread revives the engine (a synchronous gloo run adds nothing to this but CI time)
        pytest.param("gloo", ASYNC, id="gloo-async-in-flight"),
    ],
)
def test_engine_and_env_worker_killed_mid_run(tmp_path, transport, mode):
    # gloo: the restarted engine cannot join the formed weight-transfer group; the group is
    # formed again with every member and the engine gets the current weights before sampling
    proc = _start(
        tmp_path,
        *FAST,
        f"generation.transport={transport}",
        "train.steps=3",
        *mode,
        "checkpoint.every=0",
        "cluster.placement=split",
        "cluster.num_cpus=3",
        "generation.verify_refit=true",
        "rollout.sampling.max_tokens=160",  # a long rollout: the kill lands inside it
        "cluster.engine_batch_size=1",  # one prompt at a time: generation fills the rollout
    )
    _wait_for_step(proc, tmp_path, 1)
    time.sleep(0.5)  # past the resets, into step 2's sampling
    for pid in _pids(tmp_path, "generation") + _pids(tmp_path, "env"):
        os.kill(pid, signal.SIGKILL)
    log = _finish(proc)
    assert proc.returncode == 0, log[-5000:]
    rows = _rows(tmp_path)
    assert [r["step"] for r in rows] == list(range(1, 6 if mode else 4))
    assert rows[0].get("dropped/infra_error", 0) == 0
    assert sum(r.get("dropped/infra_error", 0) for r in rows[1:]) > 0  # the in-flight ones
    last = rows[-1]
    assert last["episodes"] - last["dropped"] > 0  # the run went on with the new processes
    if not mode:  # on-policy: sampled with the trainer's weights
        assert abs(last["token_mult_prob_error"] - 1.0) < 1e-3
    assert last["refit/logprob_max_diff"] < 1e-3  # the engine holds the trainer's weights


@pytest.mark.slow
def test_lost_policy_worker_stops_then_resume_auto(tmp_path):
    args = [*FAST, "train.steps=3", "checkpoint.every=1", "rollout.sampling.max_tokens=64"]
    proc = _start(tmp_path, *args)
    _wait_for_step(proc, tmp_path, 1)
    for pid in _pids(tmp_path, "policy"):
        os.kill(pid, signal.SIGKILL)
    log = _finish(proc)
    assert proc.returncode != 0
    assert "--resume auto" in log and "policy" in log, log[-3000:]
    done = _rows(tmp_path)[-1]["step"]
    assert done < 3
    proc = _start(tmp_path, *args, "--resume", "auto")
    log = _finish(proc)
    assert proc.returncode == 0, log[-5000:]
    assert "resumed from" in log
    assert [r["step"] for r in _rows(tmp_path)][-(3 - done) :] == list(range(done + 1, 4))


# ---- hangs (SIGSTOP) and crashes: found within their deadline, recovered or stopped (issue 30)

QUICK_WATCH = ["watchdog.floor_s=8", "watchdog.progress_every_s=4"]
SPLIT = [*FAST, "cluster.placement=split", "cluster.num_cpus=3", "checkpoint.every=0"]


def _alive(pids):
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
    return alive


@pytest.mark.slow
def test_a_hung_engine_is_found_logged_and_restarted(tmp_path):
    proc = _start(
        tmp_path,
        *SPLIT,
        *QUICK_WATCH,
        "watchdog.generation_tokens_per_s=100",
        "train.steps=3",
        "rollout.sampling.max_tokens=64",
    )
    _wait_for_step(proc, tmp_path, 1)
    [pid] = _pids(tmp_path, "generation")
    os.kill(pid, signal.SIGSTOP)
    log = _finish(proc)
    assert proc.returncode == 0, log[-5000:]
    assert "generation engine 0 hung" in log and "stopped by a signal" in log, log[-5000:]
    assert "waiting on generation engine 0" in log  # a progress line while it waited
    rows = _rows(tmp_path)
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert sum(r["failures"] for r in rows) >= 1
    assert sum(r.get("dropped/infra_error", 0) for r in rows) > 0  # the hung call's prompts
    assert rows[-1]["kept"] > 0  # the restarted engine samples again
    assert _alive([pid]) == []  # the stopped process was killed, not left behind


@pytest.mark.slow
def test_a_hung_policy_worker_stops_the_run_with_exit_1_and_nothing_left(tmp_path):
    proc = _start(tmp_path, *SPLIT, *QUICK_WATCH, "train.steps=4")
    _wait_for_step(proc, tmp_path, 1)
    pids = [p for g in ("policy", "generation", "env") for p in _pids(tmp_path, g)]
    os.kill(_pids(tmp_path, "policy")[0], signal.SIGSTOP)
    t0 = time.monotonic()
    log = _finish(proc, timeout_s=300)
    assert proc.returncode == 1, log[-5000:]
    assert "policy worker rank 0 gave no answer" in log and "--resume auto" in log, log[-3000:]
    assert time.monotonic() - t0 < 200
    time.sleep(2)
    assert _alive(pids) == []


@pytest.mark.slow
def test_a_hung_environment_worker_is_restarted_and_the_run_goes_on(tmp_path):
    proc = _start(tmp_path, *SPLIT, *QUICK_WATCH, "env.timeout_s=5", "train.steps=3")
    _wait_for_step(proc, tmp_path, 1)
    [pid] = _pids(tmp_path, "env")
    os.kill(pid, signal.SIGSTOP)
    log = _finish(proc)
    assert proc.returncode == 0, log[-5000:]
    assert "environment worker of gsm8k hung" in log, log[-5000:]
    rows = _rows(tmp_path)
    assert sum(r.get("dropped/infra_error", 0) for r in rows) > 0
    assert rows[-1]["kept"] > 0
    assert _alive([pid]) == []


@pytest.mark.slow
def test_steps_that_all_fail_stop_the_run_naming_the_part(tmp_path):
    # every prompt longer than the episode's token budget: every episode dropped (env_error)
    proc = _start(tmp_path, *FAST, "rollout.max_seq_len=16", "train.steps=10")
    log = _finish(proc, timeout_s=400)
    assert proc.returncode == 1, log[-5000:]
    assert "3 consecutive steps failed" in log and "every episode was dropped" in log, log[-3000:]
    assert "env_error" in log and "exceeds rollout.max_seq_len=16" in log
    assert len(_rows(tmp_path)) == 3  # each failed step was still logged


@pytest.mark.slow
def test_an_engine_that_raises_is_restarted_with_its_weights(tiny_path):
    """A raising engine (vLLM is then left spinning) is killed, restarted and refit; the
    prompts of the failed call are failed (infra_error), and the next call samples."""
    state = _perturbed(str(tiny_path))
    with private_ray():
        cfg, engine, policy, sync = refit_engine(tiny_path, state)
        cluster = Cluster.over(cfg, [engine], [policy], sync)
        cluster.weights_version = 1
        pid = ray.get(engine.where.remote())["pid"]
        bad = [[10**9, 3]]  # a token id past the vocabulary: the engine raises
        [out] = cluster.generate(bad, SamplingParams(max_tokens=3, seed=0))
        assert isinstance(out, RuntimeError) and "raised while sampling" in str(out)
        assert "IndexError" in cluster.take_failures()[0]
        assert ray.get(engine.where.remote())["pid"] != pid  # restarted, not reused
        [ok] = cluster.generate([SEQ[:4]], SamplingParams(max_tokens=3, seed=0))
        assert len(ok.token_ids) >= 1 and ok.weight_version == 1  # refit before sampling


class _RaisingPolicy:
    """A policy rank whose update raises (a bug, an out-of-memory)."""

    def train(self, minibatches):
        raise ValueError("boom in the update")

    def where(self):
        return {"pid": os.getpid()}


def test_a_policy_worker_that_raises_stops_the_run_naming_it():
    from envhub.trainer.watchdog import RunFailed

    with private_ray(num_cpus=1):
        rank = ray.remote(num_cpus=0)(_RaisingPolicy).remote()
        cluster = Cluster.over(Config(), [], [rank])
        with pytest.raises(
            RunFailed,
            match="policy worker raised during the policy update: ValueError: boom in the update",
        ):
            cluster.train([[[]]])
