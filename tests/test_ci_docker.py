"""`scripts/ci-docker.sh`: two CI runs on one machine each get a private Docker engine, and
stopping one touches nothing of the other, nor any daemon someone else started (issue 21,
point 2).

Each run serves a port from a container, as the Docker runner does; the second run finds the
shared data root held by the first and uses its own. No registry is needed: the image is empty
and the container runs the host's python3 from a read-only ``/usr``. Needs root, dockerd and
iproute2 (skips naming what is missing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "ci-docker.sh"
IMAGE = "envhub-ci-test:host-python"


def _missing() -> str:
    if os.geteuid() != 0:
        return "needs root (dockerd and a network bridge)"
    for tool in ("dockerd", "docker", "ip", "flock"):
        if shutil.which(tool) is None:
            return f"needs {tool} (apt: docker.io, iproute2, util-linux)"
    if not Path("/usr/bin/python3").exists():
        return "needs /usr/bin/python3 (the container runs the host's)"
    return ""


needs_dockerd = pytest.mark.skipif(bool(_missing()), reason=_missing())


def dockerd_pids() -> set[int]:
    return {int(p.name) for p in Path("/proc").iterdir()
            if p.name.isdigit() and _comm(p) == "dockerd"}  # fmt: skip


def _comm(proc: Path) -> str:
    try:
        return (proc / "comm").read_text().strip()
    except OSError:
        return ""


def start(data: Path) -> dict[str, str]:
    env = {**os.environ, "ENVHUB_DOCKER_DATA": str(data)}
    out = subprocess.run(["bash", str(SCRIPT), "start", "--engine-only"], capture_output=True,
                         text=True, env=env, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return dict(line.removeprefix("export ").split("=", 1) for line in out.stdout.splitlines())


def stop(run: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), "stop", run["ENVHUB_DOCKER_RUN_DIR"]],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def docker(run: dict[str, str], *args: str) -> str:
    env = {**os.environ, "DOCKER_HOST": run["DOCKER_HOST"]}
    out = subprocess.run(["docker", *args], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def serve(run: dict[str, str], rootfs: Path) -> tuple[str, str]:
    """A container on the run's default bridge serving HTTP on a 127.0.0.1 port: (ip, url)."""
    docker(run, "import", str(rootfs), IMAGE)
    name = docker(run, "run", "-d", "-p", "127.0.0.1::8000", "-v", "/usr:/usr:ro", IMAGE,
                  "/usr/bin/python3", "-m", "http.server", "8000")  # fmt: skip
    port = docker(run, "port", name, "8000/tcp").splitlines()[0].rsplit(":", 1)[1]
    ip = docker(run, "inspect", "-f", "{{.NetworkSettings.IPAddress}}", name)
    return ip, f"http://127.0.0.1:{port}/"


def answers(url: str, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.status == 200
        except OSError:
            time.sleep(0.3)
    return False


@pytest.fixture
def rootfs(tmp_path) -> Path:
    """An image root with nothing but the merged-/usr links (the host's /usr is mounted)."""
    root = tmp_path / "root"
    for d in ("tmp", "etc", "proc", "sys", "dev"):
        (root / d).mkdir(parents=True)
    for link in ("bin", "lib", "lib64"):
        (root / link).symlink_to(f"usr/{link}")
    tar = tmp_path / "rootfs.tar"
    with tarfile.open(tar, "w") as t:
        t.add(root, arcname=".")
    return tar


@needs_dockerd
def test_two_runs_coexist_and_each_stops_only_its_own(tmp_path, rootfs):
    others = dockerd_pids()  # someone else's daemons: must outlive both runs
    runs = []
    try:
        runs.append(start(tmp_path / "data"))
        runs.append(start(tmp_path / "data"))  # the data root is held: a private one instead
        a, b = runs
        assert a["DOCKER_HOST"] != b["DOCKER_HOST"]
        (ip_a, url_a), (ip_b, url_b) = serve(a, rootfs), serve(b, rootfs)
        assert ip_a.rsplit(".", 1)[0] != ip_b.rsplit(".", 1)[0]  # distinct private bridges
        assert answers(url_a) and answers(url_b)
        assert len(docker(a, "ps", "-q").split()) == 1  # each engine sees its own container

        run_b = Path(b["ENVHUB_DOCKER_RUN_DIR"])
        pid_b = int((run_b / "launched.pid").read_text())
        # The default bridge, and one of a network like the runner's envhub-isolated.
        bridges_b = [(run_b / "bridge").read_text().strip(),
                     "br-" + docker(b, "network", "create", "--internal", "isolated")[:12]]  # fmt: skip
        assert stop(b).returncode == 0
        assert not Path(f"/proc/{pid_b}").exists() and not run_b.exists()
        for bridge in bridges_b:
            gone = subprocess.run(["ip", "link", "show", bridge], capture_output=True).returncode
            assert gone, f"{bridge} outlived its run"
        assert answers(url_a, within=5), "stopping run b broke run a's container"
        assert docker(a, "info", "-f", "{{.ID}}")
        runs.remove(b)
        assert others <= dockerd_pids(), "a daemon this test did not start was stopped"
    finally:
        for run in runs:
            stop(run)
    assert others <= dockerd_pids()


def test_stop_refuses_a_directory_start_did_not_make(tmp_path):
    out = subprocess.run(["bash", str(SCRIPT), "stop", str(tmp_path)], capture_output=True,
                         text=True, timeout=30)  # fmt: skip
    assert out.returncode == 2 and "not a run directory" in out.stderr
    assert tmp_path.exists()


def test_stop_without_a_run_says_which_is_needed():
    env = {k: v for k, v in os.environ.items() if k != "ENVHUB_DOCKER_RUN_DIR"}
    out = subprocess.run(["bash", str(SCRIPT), "stop"], capture_output=True, text=True,
                         env=env, timeout=30)  # fmt: skip
    assert out.returncode == 2 and "ENVHUB_DOCKER_RUN_DIR" in out.stderr
