"""The trainer image (``envhub/trainer/Dockerfile``), built and run: two steps of the tiny example.

No registry here, so the image is built on an offline base made from this machine's files
(``scripts/offline-base-image.sh --extras trainer,math,server``: Python, torch CPU, Ray,
transformers, bash for Ray's workers), with ``PIP_ARGS="--no-index --no-build-isolation"``;
on a cluster the same Dockerfile starts from ``python:3.11-slim`` and pip's index. The test then
runs ``envhub train examples/tiny.yaml train.steps=2`` in a container (a private Ray inside it,
two FSDP2 ranks on gloo, the reference worker, the env worker) with the run folder mounted, and
reads the metrics, checkpoints and exported model it wrote. It removes the container, the image
and (when it made it) the base image.

Needs a Docker engine (``scripts/ci-docker.sh start``; skipped without one) and root (the base
image script's chroot check). About 2-3 minutes for the base the first time, 3-6 for the rest,
on this 2-core machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

docker = pytest.importorskip("docker")

REPO = Path(__file__).resolve().parents[2]
BASE = os.environ.get("ENVHUB_TRAINER_BASE_IMAGE", "envhub-base:trainer")
CONTEXT = ("pyproject.toml", "README.md", "registry.yaml", "envhub", "examples")
OFFLINE_ARGS = {"PIP_ARGS": "--no-index --no-build-isolation", "SMOLLM2": ""}


def _engine():
    try:
        client = docker.from_env()
        client.ping()
        return client
    except Exception as e:  # noqa: BLE001 (no socket, no daemon, permission denied: each skips)
        pytest.skip(f"no Docker engine ({type(e).__name__}: {e}); scripts/ci-docker.sh start")


def _base_image(client) -> tuple[str, bool]:
    """The offline trainer base (made here when absent); True if this test made it."""
    existed = bool(client.images.list(name=BASE))
    script = REPO / "scripts" / "offline-base-image.sh"
    cmd = [str(script), "--extras", "trainer,math,server", "--tag", BASE]
    env = {**os.environ, "PYTHON": sys.executable}
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    return BASE, not existed


def _context(tmp: Path) -> Path:
    """A small build context: what the Dockerfile copies, no caches or runs."""
    ctx = tmp / "context"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in CONTEXT:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, ctx / name, ignore=ignore)
        else:
            ctx.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, ctx / name)
    shutil.copy2(REPO / "envhub" / "trainer" / "Dockerfile", ctx / "Dockerfile")
    return ctx


def _build(client, ctx: Path, base: str, tag: str) -> None:
    args = {"BASE_IMAGE": base, **OFFLINE_ARGS}
    try:
        client.images.build(path=str(ctx), tag=tag, buildargs=args, rm=True, forcerm=True)
    except docker.errors.BuildError as e:
        lines = "".join(str(chunk.get("stream", chunk)) for chunk in e.build_log)
        pytest.fail(f"building the trainer image failed: {e}\n{lines[-4000:]}")


def _train(client, image: str, runs: Path) -> tuple[int, str]:
    """``envhub train`` in a container (no network); its exit code and log tail."""
    container = client.containers.run(
        image,
        ["envhub", "train", "examples/tiny.yaml", "train.steps=2", "--out", "/runs/tiny"],
        detach=True,
        init=True,
        shm_size="2g",
        network_mode="none",
        volumes={str(runs): {"bind": "/runs", "mode": "rw"}},
        labels={"envhub.test": "trainer-image"},
    )
    try:
        code = container.wait(timeout=900)["StatusCode"]
        return code, container.logs(tail=80).decode(errors="replace")
    finally:
        container.remove(force=True)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_trainer_image_builds_and_trains_two_steps(tmp_path):
    client = _engine()
    base, made_base = _base_image(client)
    tag = f"envhub-trainer:test-{uuid.uuid4().hex[:8]}"
    runs = tmp_path / "runs"
    runs.mkdir()
    try:
        _build(client, _context(tmp_path), base, tag)
        code, log = _train(client, tag, runs)
        assert code == 0, log
        rows = [json.loads(x) for x in (runs / "tiny" / "metrics.jsonl").read_text().splitlines()]
        assert [r["step"] for r in rows] == [1, 2]
        assert all(r["episodes"] > 0 and r["grad_norm"] > 0 for r in rows)
        assert abs(rows[-1]["token_mult_prob_error"] - 1.0) < 1e-3
        placement = json.loads((runs / "tiny" / "placement.json").read_text())
        assert {p["group"] for p in placement} >= {"policy", "reference", "env"}
        assert (runs / "tiny" / "final" / "config.json").is_file()
        assert (runs / "tiny" / "checkpoints" / "step_2").is_dir()
    finally:
        client.images.remove(tag, force=True)
        if made_base:
            client.images.remove(base, force=True)
        shutil.rmtree(runs, ignore_errors=True)  # root-owned files written in the container
