"""The Docker runner: engine errors, container policy, cleanup by label, relay, CLI.

Tests marked ``docker`` need a reachable engine (``scripts/ci-docker.sh start``); they skip with
the reason when there is none. The others run everywhere.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from children import SIGINT_IGNORED
from repo_scripts import load_script

from envhub.docker import containers as dk
from envhub.docker import image as di
from envhub.docker.cli import docker_app
from envhub.docker.relay import Relay
from envhub.errors import DependencyMissing, EnvhubError, TransportError
from envhub.install import install_command
from envhub.spec import DockerSpec, EnvSpec

REPO = Path(__file__).resolve().parents[2]


def _engine_or_skip():
    try:
        return dk.engine()
    except (DependencyMissing, dk.DockerUnavailable) as e:
        pytest.skip(f"no Docker engine: {e}")


@pytest.fixture(scope="module")
def engine():
    """The engine, with the image of the current code built once and pinned for the module."""
    client = _engine_or_skip()
    pinned = os.environ.get("ENVHUB_DOCKER_IMAGE")
    os.environ["ENVHUB_DOCKER_IMAGE"] = pinned or di.image_for(client, [])
    yield client
    if pinned is None:
        del os.environ["ENVHUB_DOCKER_IMAGE"]
    # No container of this test process may outlive the tests (checked by label).
    left = client.containers.list(all=True, filters={"label": f"{dk.LABEL_OWNER}={os.getpid()}"})
    assert [c.name for c in left] == []


def _spec(name: str = "search", **docker: object) -> EnvSpec:
    from envhub.registry.catalog import spec

    s = spec(name)
    return s.model_copy(update={"docker": DockerSpec(**{**s.docker.model_dump(), **docker})})


# ------------------------------------------------------------------ no engine needed


def test_unreachable_engine_says_what_is_missing(monkeypatch):
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/envhub-test.sock")
    monkeypatch.setattr(dk, "_clients", {})
    with pytest.raises(dk.DockerUnavailable) as err:
        dk.engine()
    msg = str(err.value)
    assert "unix:///nonexistent/envhub-test.sock" in msg and "DOCKER_HOST" in msg
    assert "ci-docker.sh start" in msg


def test_missing_sdk_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "docker", None)  # makes `import docker` fail
    monkeypatch.setattr(dk, "_clients", {})
    with pytest.raises(DependencyMissing, match=re.escape(install_command(["docker"]))):
        dk.engine()


def test_import_stays_light():
    code = "import sys, envhub.docker; print('docker' in sys.modules, 'fastapi' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_default_extras_serve_every_env_but_not_the_trainer():
    extras = di.default_extras()
    assert "server" in extras
    assert not {"trainer", "vllm", "dev", "all", "docker"} & set(extras)


def test_source_key_follows_the_code_not_the_caches(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "envhub"\n')
    (tmp_path / "envhub").mkdir()
    (tmp_path / "envhub" / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(di, "checkout", lambda: tmp_path)
    key = di.source_key(["server"])
    (tmp_path / "envhub" / "__pycache__").mkdir()
    (tmp_path / "envhub" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"junk")
    (tmp_path / "envhub" / ".cache").mkdir()
    (tmp_path / "envhub" / ".cache" / "index").write_text("junk")
    assert di.source_key(["server"]) == key
    assert di.source_key(["server", "math"]) != key
    (tmp_path / "envhub" / "a.py").write_text("x = 2\n")
    assert di.source_key(["server"]) != key


def test_pruning_after_a_build_keeps_every_image_of_the_current_code(monkeypatch):
    # A build that hits docker's cache keeps its old "Created" date, so age alone would
    # remove the image another test or server has pinned; only stale source may go.
    from types import SimpleNamespace

    monkeypatch.setattr(di, "source_key", lambda extras: "now-" + ",".join(sorted(extras)))

    def image(tag, key, extras, created):
        labels = {di.LABEL_IMAGE: "1", di.LABEL_KEY: key, di.LABEL_EXTRAS: extras}
        return SimpleNamespace(tags=[tag], id=tag, labels=labels, attrs={"Created": created})

    images = [
        image("cur-a", "now-server", "server", "2020-01-01"),  # current code, cached long ago
        image("cur-b", "now-code,server", "server,code", "2020-01-02"),
        image("old-1", "was-server", "server", "2026-01-03"),
        image("old-2", "was-server", "server", "2026-01-02"),
        image("old-3", "was-code,server", "code,server", "2026-01-01"),
    ]
    store = SimpleNamespace(list=lambda filters: list(images), remove=lambda t, noprune: None)
    client = SimpleNamespace(images=store)
    assert di.prune_images(client, keep=1, stale_only=True) == ["old-2", "old-3"]
    everything = ["old-1", "old-2", "old-3", "cur-b", "cur-a"]  # newest first
    assert di.prune_images(client, keep=0) == everything  # `docker clean --images`


def test_run_policy_from_spec():
    spec = _spec(memory_mb=300, pids_limit=64)
    kw = dk._run_kwargs(spec, "envhub:test", dk.NETWORK, {})
    assert kw["init"] is True and kw["read_only"] is True and kw["detach"] is True
    assert "/tmp" in kw["tmpfs"]
    assert kw["mem_limit"] == "300m" == kw["memswap_limit"] and kw["pids_limit"] == 64
    assert kw["cap_drop"] == ["ALL"] and "no-new-privileges" in kw["security_opt"]
    labels = kw["labels"]
    assert labels[dk.LABEL_MANAGED] == "1" and labels[dk.LABEL_ENV] == spec.name
    assert labels[dk.LABEL_OWNER] == str(os.getpid())
    assert kw["command"][:5] == [spec.name, "--host", "0.0.0.0", "--port", "8000"]
    assert EnvSpec.model_validate_json(kw["command"][6]).docker.memory_mb == 300
    # Only sandboxed environments get what bubblewrap needs in a container.
    assert kw["unmasked_proc"] is False and "seccomp=unconfined" not in kw["security_opt"]
    code = dk._run_kwargs(_spec("humaneval"), "envhub:test", dk.NETWORK, {})
    assert code["unmasked_proc"] is True and "seccomp=unconfined" in code["security_opt"]
    assert code["cap_drop"] == ["ALL"] and "no-new-privileges" in code["security_opt"]


def test_owner_alive_tells_dead_and_reused_pids():
    import socket

    host = socket.gethostname()
    me = {dk.LABEL_OWNER: str(os.getpid()), dk.LABEL_HOST: host,
          dk.LABEL_OWNER_START: dk._proc_start(os.getpid())}  # fmt: skip
    assert dk._owner_alive(me)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not dk._owner_alive({**me, dk.LABEL_OWNER: str(proc.pid)})
    assert not dk._owner_alive({**me, dk.LABEL_OWNER_START: "1"})  # pid reused by another
    assert dk._owner_alive({**me, dk.LABEL_OWNER: "999999999", dk.LABEL_HOST: "elsewhere"})


class _Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        body = f"hello {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_relay_forwards_loopback_connections():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    relay = Relay(("127.0.0.1", server.server_address[1]))
    try:
        assert relay.host == "127.0.0.1" and relay.port != server.server_address[1]
        with httpx.Client(base_url=f"http://127.0.0.1:{relay.port}") as http:
            assert [http.get(f"/{i}").text for i in range(20)] == [f"hello /{i}" for i in range(20)]

        def get(i: int, out: list) -> None:
            out.append(httpx.get(f"http://127.0.0.1:{relay.port}/p{i}").text)

        out: list[str] = []
        threads = [threading.Thread(target=get, args=(i, out)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(out) == sorted(f"hello /p{i}" for i in range(16))
    finally:
        relay.close()
        server.shutdown()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{relay.port}/", timeout=1)


def test_relay_to_a_dead_target_closes_the_client():
    relay = Relay(("127.0.0.1", 1))
    try:
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{relay.port}/health", timeout=2)
    finally:
        relay.close()


# ------------------------------------------------------------------ with an engine


def _ours(client, **labels: str) -> list:
    filters = [f"{dk.LABEL_MANAGED}=1"] + [f"{k}={v}" for k, v in labels.items()]
    return client.containers.list(all=True, filters={"label": filters})


@pytest.mark.docker
def test_container_policy_many_episodes_and_removal(engine):
    from envhub.client.remote_env import RemoteEnv

    spec = _spec(memory_mb=512, pids_limit=128)
    handle = dk.start_container(spec)
    try:
        assert handle.url.startswith("http://127.0.0.1:")
        attrs = engine.api.inspect_container(handle.container_id)
        host = attrs["HostConfig"]
        assert host["Init"] is True and host["ReadonlyRootfs"] is True
        assert host["Memory"] == 512 * 2**20 and host["PidsLimit"] == 128
        assert "/tmp" in host["Tmpfs"] and host["CapDrop"] == ["ALL"]
        assert list(attrs["NetworkSettings"]["Networks"]) == [dk.NETWORK]
        assert attrs["Config"]["User"] == "10001:10001"
        assert attrs["Config"]["Labels"][dk.LABEL_OWNER] == str(os.getpid())
        env = RemoteEnv(handle.url)
        firsts = [env.reset(seed=s).messages[-1].content for s in range(6)]  # a warm container
        assert len(set(firsts)) > 1
        result = env.step("I do not know.")
        assert result.info.status.value in ("ok", "invalid_action")
        env.close()
        probe = textwrap.dedent("""
            import socket, os
            try:
                socket.create_connection(("1.1.1.1", 80), timeout=1); print("net")
            except OSError:
                print("nonet")
            try:
                open("/envhub-probe", "w"); print("rw")
            except OSError:
                print("ro")
            open("/tmp/probe", "w").write("x"); print("tmp", os.getuid())
        """)
        code, out = engine.containers.get(handle.container_id).exec_run(["python", "-c", probe])
        assert out.decode().split() == ["nonet", "ro", "tmp", "10001"], out
    finally:
        handle.close()
    handle.close()  # idempotent
    assert handle.closed and _ours(engine, **{dk.LABEL_OWNER: str(os.getpid())}) == []


@pytest.mark.docker
def test_image_sandbox_keeps_the_answers_from_the_program(engine):
    """Issue 17.3: the image holds HumanEval's solutions; a program that globs for them (or
    asks the server on loopback) scores 0 with its own status, under bubblewrap in the image."""
    from answer_attack import attack, fenced

    handle = dk.start_container(_spec("humaneval"))
    try:
        host = engine.api.inspect_container(handle.container_id)["HostConfig"]
        assert host["MaskedPaths"] == [] and "seccomp=unconfined" in host["SecurityOpt"]
        assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
        # Positive control: outside the sandbox, as the server's own user, the attack finds
        # the solutions in the image.
        check = attack() + "\nprint(has_close_elements([1.0, 1.05], 0.1))\n"
        _, out = engine.containers.get(handle.container_id).exec_run(
            ["python3", "-I", "-S", "-c", check]
        )
        assert b"FOUND" in out and out.split()[-1] == b"True", out
        body = {"items": [{"task_id": "HumanEval/0", "response": fenced(attack())}]}
        for _ in range(3):
            r = httpx.post(handle.url + "/verify", json=body, timeout=120)
            score = r.json()["scores"][0]
            assert score["status"] == "ok" and score["components"]["correctness"] == 0.0, score
            assert score["info"]["sandbox"] == "bwrap"
            assert "FOUND" not in score["info"]["stdout"]
        # Issue 17.1 in the image: signals at the runner (pid 1 of the sandbox) stay the
        # program's failure, never infra_error or a timeout.
        for sig in ("SIGINT", "SIGALRM", "SIGTERM"):
            spam = textwrap.dedent(f"""
                import os, signal, threading
                def _spam():
                    while True:
                        os.kill(1, signal.{sig})
                threading.Thread(target=_spam, daemon=True).start()
                def has_close_elements(numbers, threshold):
                    return None
                """)
            body = {"items": [{"task_id": "HumanEval/0", "response": fenced(spam)}]}
            for _ in range(5):
                score = httpx.post(handle.url + "/verify", json=body, timeout=120).json()
                assert score["scores"][0]["status"] == "ok", (sig, score)
        gold = httpx.get(handle.url + "/tasks", params={"limit": 1}).json()["tasks"][0]["answer"]
        body = {"items": [{"task_id": "HumanEval/0", "response": fenced(gold)}]}
        score = httpx.post(handle.url + "/verify", json=body, timeout=120).json()["scores"][0]
        assert score["components"]["correctness"] == 1.0, score  # honest code still passes
    finally:
        handle.close()


@pytest.mark.docker
def test_network_when_the_spec_asks_for_it(engine):
    handle = dk.start_container(_spec(network=True))
    try:
        attrs = engine.api.inspect_container(handle.container_id)
        assert dk.NETWORK not in attrs["NetworkSettings"]["Networks"]
        ports = attrs["NetworkSettings"]["Ports"][f"{dk.CONTAINER_PORT}/tcp"]
        assert ports[0]["HostIp"] == "127.0.0.1"
        assert httpx.get(handle.url + "/health").status_code == 200
    finally:
        handle.close()


def _child(body: str) -> subprocess.CompletedProcess:
    code = (
        "import os, envhub.docker.containers as dk\nfrom envhub.registry.catalog import spec\n"
        + body
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=240)  # fmt: skip


@pytest.mark.docker
def test_interpreter_exit_removes_unclosed_containers(engine):
    out = _child("h = dk.start_container(spec('search'))\nprint(os.getpid())")
    assert out.returncode == 0, out.stderr
    assert _ours(engine, **{dk.LABEL_OWNER: out.stdout.split()[-1]}) == []


@pytest.mark.docker
def test_leftovers_of_a_crashed_run_are_found_and_removed(engine):
    out = _child(
        "h = dk.start_container(spec('search'))\nprint(os.getpid(), flush=True)\nos._exit(9)"
    )  # fmt: skip  (no atexit, no finalizers: a crash)
    pid = out.stdout.split()[-1]
    assert len(_ours(engine, **{dk.LABEL_OWNER: pid})) == 1
    removed = dk.clean()
    assert any(pid in name for name in removed)
    assert _ours(engine, **{dk.LABEL_OWNER: pid}) == []


@pytest.mark.docker
def test_a_new_run_sweeps_dead_owners(engine, monkeypatch):
    out = _child("h = dk.start_container(spec('search'))\nprint(os.getpid(), flush=True)\n"
                 "os._exit(9)")  # fmt: skip
    pid = out.stdout.split()[-1]
    monkeypatch.setattr(dk, "_swept", set())
    with dk.start_container(_spec()):
        assert _ours(engine, **{dk.LABEL_OWNER: pid}) == []


@pytest.mark.docker
def test_unhealthy_container_reports_its_log_and_is_removed(engine):
    spec = EnvSpec(name="broken-env", entry_point="no_such_module.sub:Nope")
    with pytest.raises(TransportError, match="no_such_module") as err:
        dk.start_container(spec, timeout=60)
    assert "broken-env" in str(err.value)
    assert _ours(engine, **{dk.LABEL_ENV: "broken-env"}) == []


@pytest.mark.docker
def test_make_docker_runner_end_to_end(engine):
    import envhub

    with envhub.make("search", runner="docker") as env:
        env.reset(seed=3)
        assert env.step("I do not know.").info.task_id
    assert _ours(engine, **{dk.LABEL_OWNER: str(os.getpid())}) == []


@pytest.mark.docker
def test_cli_ps_and_clean(engine):
    from typer.testing import CliRunner

    runner = CliRunner()
    with dk.start_container(_spec()) as handle:
        res = runner.invoke(docker_app, ["ps"])
        assert res.exit_code == 0 and handle.name in res.output
        res = runner.invoke(docker_app, ["clean"])  # our own live container stays
        assert res.exit_code == 0 and handle.status() == "running"
    res = runner.invoke(docker_app, ["ps"])
    assert handle.name not in res.output


@pytest.mark.docker
@pytest.mark.slow
def test_cli_build_makes_a_tagged_image(engine):
    from typer.testing import CliRunner

    base = os.environ.get("ENVHUB_DOCKER_BASE_IMAGE") or engine.images.get(
        "envhub:latest").labels[di.LABEL_BASE]  # fmt: skip
    res = CliRunner().invoke(docker_app, ["build", "--base-image", base, "-q"])
    assert res.exit_code == 0, res.output
    tag = res.output.strip().splitlines()[-1]
    labels = engine.images.get(tag).labels
    assert labels[di.LABEL_BASE] == base and "server" in labels[di.LABEL_EXTRAS].split(",")


@pytest.mark.docker
def test_build_without_a_base_image_says_how_to_make_one(engine):
    start = time.monotonic()
    with pytest.raises(EnvhubError, match="offline-base-image.sh"):
        di.build_image(engine, base_image="localhost:1/envhub-no-such-base:never")
    assert time.monotonic() - start < 30


# ------------------------------------------------------------------ offline base (no engine)


def _rootfs_module():
    return load_script("offline_rootfs.py")


def test_offline_rootfs_resolves_the_server_dependencies():
    rf = _rootfs_module()
    reqs = rf.project_requirements(REPO / "pyproject.toml", ["server"])
    dists, missing = rf.resolve(reqs + [rf.Requirement("pip")])
    assert missing == []
    assert {"pydantic", "pydantic-core", "fastapi", "uvicorn", "httpx", "pip"} <= set(dists)
    assert "torch" not in dists  # the trainer's stack stays out of the server image
    key = rf.content_key(dists, ["server"])
    assert key == rf.content_key(dists, ["server"]) != rf.content_key(dists, ["server", "x"])


@pytest.mark.docker
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_envhub_serve_docker_runs_until_stopped_then_removes(engine, sig):
    """Started as a script's background job is (SIGINT ignored), a signal still stops it."""
    import signal

    from envhub.client.child_server import free_port

    port = free_port()
    cmd = [sys.executable, "-m", "envhub.cli", "serve", "search", "--docker", "--port", str(port)]
    proc = subprocess.Popen(
        [*SIGINT_IGNORED, *cmd], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert httpx.get(f"http://127.0.0.1:{port}/info").json()["spec"]["name"] == "search"
        assert len(_ours(engine, **{dk.LABEL_OWNER: str(proc.pid)})) == 1
    finally:
        proc.send_signal(getattr(signal, sig))
        try:
            out = proc.communicate(timeout=60)[0].decode()
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    assert proc.returncode == 0, out
    assert _ours(engine, **{dk.LABEL_OWNER: str(proc.pid)}) == []


@pytest.mark.docker
def test_envhub_serve_docker_replaces_a_container_that_dies(engine):
    import signal

    from envhub.client.child_server import free_port

    port = free_port()
    cmd = [sys.executable, "-m", "envhub.cli", "serve", "search", "--docker", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, b"")))

    def serving(times: int) -> str:
        """The container once the server said it serves ``times`` times (start, replacements)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            said = sum(b"in container" in line or b"container died" in line for line in lines)
            if said >= times and httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                return _ours(engine, **{dk.LABEL_OWNER: str(proc.pid)})[0].id
            time.sleep(0.1)
        raise AssertionError(b"".join(lines).decode())

    reader.start()
    try:
        first = serving(1)
        engine.api.kill(first)
        assert serving(2) != first
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join()
    out = b"".join(lines).decode()
    assert proc.returncode == 0 and "the container died" in out, out
    assert _ours(engine, **{dk.LABEL_OWNER: str(proc.pid)}) == []


@pytest.mark.docker
@pytest.mark.parametrize("network", [False, True])
def test_a_taken_port_fails_cleanly(engine, network):
    import socket

    import docker.errors

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises((TransportError, docker.errors.APIError)) as err:
            dk.start_container(_spec(network=network), port=port)
    assert str(port) in str(err.value) or "address already in use" in str(err.value).lower()
    assert _ours(engine, **{dk.LABEL_OWNER: str(os.getpid())}) == []


# ------------------------------------------------------------------ programs that kill containers


def _bomb(children: int, mb: int, hostile: bool = False) -> str:
    """HumanEval/0 answered by a fork tree: ``children`` processes of ``mb`` MB each.

    ``hostile``: the program first undoes the sandbox's plea to the OOM killer (to take the
    run first), so that its children are no likelier victims than the server.
    """
    return textwrap.dedent(f"""
        import os, time
        def has_close_elements(numbers, threshold):
            if {hostile}:
                open("/proc/self/oom_score_adj", "w").write("0")
            for _ in range({children}):
                if os.fork() == 0:
                    try:
                        block = bytearray({mb} << 20)
                        for i in range(0, len(block), 4096):
                            block[i] = 1
                        time.sleep(3)
                    finally:
                        os._exit(0)
            time.sleep(3)
        """)


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def _docker_env(spec: EnvSpec):
    from envhub.docker.env import DockerEnv

    return DockerEnv(dk.start_container(spec))


@pytest.mark.docker
def test_a_fork_tree_past_the_memory_fails_alone_and_the_container_lives_on(engine):
    """Issue 22.7: 40 children of 50 MB (2 GB) against a 1 GB container. The programs' own
    cgroup (delegated from the host) takes the OOM kill: the program scores 0 with its own
    status, the server lives on, and a correct program on the same handle scores 1."""
    from envhub.docker import cgroup as dc

    if not dc.possible():
        pytest.skip("no cgroups to delegate here (needs root, cgroup v1, a local engine)")
    env = _docker_env(_spec("humaneval"))
    try:
        first = env.handle.container_id
        binds = engine.api.inspect_container(first)["HostConfig"]["Binds"]
        assert any(b.endswith(":/run/envhub-cgroup/memory:rw") for b in binds), binds
        gold = env.tasks()[0].answer
        env.reset(task_id="HumanEval/0")
        bomb = env.step(_fenced(_bomb(40, 50)))
        assert bomb.info.status.value in ("ok", "timeout") and bomb.reward == 0.0, bomb.info
        assert bomb.info.components["correctness"] == 0.0
        group = dc.HOST_ROOT / "memory" / dc.GROUP / env.handle.name
        cap = int((group / "memory.limit_in_bytes").read_text())
        peak = int((group / "memory.max_usage_in_bytes").read_text())
        # Charged there, not to the server, and bounded by the run's half of it (a loaded
        # machine may end the run at its deadline before the cap is reached).
        assert 100 << 20 < peak < cap // 2 + (32 << 20)
        env.reset(task_id="HumanEval/0")
        honest = env.step(_fenced(gold))
        assert honest.info.components["correctness"] == 1.0, honest.info
        assert env.handle.generation == 0 and env.handle.container_id == first
        assert env.handle.status() == "running"
    finally:
        env.close()
    assert not group.exists()  # the programs' groups go with the container


@pytest.mark.docker
def test_a_program_holding_every_process_it_can_starves_no_other(engine):
    """A program forks all it may (children of 30 MB that stay) and waits; a correct program
    verified meanwhile in the same container still scores 1: each run gets at most half of
    the programs' delegated processes and memory (without that, it scored 0 here)."""
    from envhub.docker import cgroup as dc

    if not dc.possible():
        pytest.skip("no cgroups to delegate here (needs root, cgroup v1, a local engine)")
    hog = textwrap.dedent("""
        import os, time
        for _ in range(300):
            try:
                if os.fork() == 0:
                    block = bytearray(30 << 20)
                    for i in range(0, len(block), 4096):
                        block[i] = 1
                    time.sleep(10)
                    os._exit(0)
            except OSError:
                break
        def has_close_elements(numbers, threshold):
            time.sleep(6)
        """)
    env = _docker_env(_spec("humaneval", pids_limit=64))
    try:
        gold = env.tasks()[0].answer
        out: list = []
        hogging = threading.Thread(
            target=lambda: out.append(env.fork().verify("HumanEval/0", _fenced(hog)))
        )
        hogging.start()
        time.sleep(2.5)
        honest = env.verify("HumanEval/0", _fenced(gold))
        hogging.join()
        assert honest.status.value == "ok" and honest.components["correctness"] == 1.0, honest
        assert out[0].components["correctness"] == 0.0 and env.handle.generation == 0
    finally:
        env.close()


@pytest.mark.docker
@pytest.mark.parametrize("hostile", [False, True])
def test_without_delegated_cgroups_the_oom_killer_takes_the_run_first(engine, monkeypatch, hostile):
    """Issue 22.7, where no cgroups can be delegated (cgroup v2, a remote engine): 40 children
    of 20 MB, each smaller than the server, against a 300 MB container got the server
    OOM-killed. The run's processes ask the kernel to be killed first (oom_score_adj 1000);
    a program can undo that for itself and its children, not for the runner that judges it
    (pid 1 of the run: its death ends the run). The program scores 0, the container lives."""
    from envhub.docker import cgroup as dc

    monkeypatch.setattr(dc, "possible", lambda: False)
    env = _docker_env(_spec("humaneval", memory_mb=300))
    try:
        first = env.handle.container_id
        env.reset(task_id="HumanEval/0")
        bomb = env.step(_fenced(_bomb(40, 20, hostile=hostile)))
        assert bomb.info.status.value in ("ok", "timeout") and bomb.reward == 0.0, bomb.info
        env.reset(task_id="HumanEval/0")
        honest = env.step(_fenced(env.tasks()[0].answer))
        assert honest.info.components["correctness"] == 1.0, honest.info
        assert env.handle.generation == 0 and env.handle.container_id == first
    finally:
        env.close()


WEDGES = {
    "signal everything": "os.kill(-1, signal.SIGKILL)",
    "fill the disks": textwrap.dedent("""\
        for folder in ("/tmp", "/dev/shm", os.getcwd()):
            try:
                with open(os.path.join(folder, "fill"), "wb") as f:
                    while True:
                        f.write(b"x" * (1 << 20))
            except OSError:
                pass"""),
    "fork bomb": textwrap.dedent("""\
        end = time.time() + 3
        while time.time() < end:
            try:
                os.fork()
            except OSError:
                pass"""),
    "daemon": textwrap.dedent("""\
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(120)"""),
}


@pytest.mark.docker
def test_programs_that_try_to_wedge_the_container_fail_alone(engine):
    """Issue 22: every hostile attack holds in Docker too. Programs that signal every process
    they see, fill every writable disk, fork-bomb, or leave daemons each score 0 as the
    program's failure, and the same container then scores a correct program 1."""
    env = _docker_env(_spec("humaneval"))
    try:
        first = env.handle.container_id
        for name, body in WEDGES.items():
            code = "import os, signal, time\ndef has_close_elements(numbers, threshold):\n"
            env.reset(task_id="HumanEval/0")
            result = env.step(_fenced(code + textwrap.indent(body, "    ")))
            assert result.info.status.value in ("ok", "timeout"), (name, result.info)
            assert result.reward == 0.0, (name, result.info)
        env.reset(task_id="HumanEval/0")
        honest = env.step(_fenced(env.tasks()[0].answer))
        assert honest.info.components["correctness"] == 1.0, honest.info
        assert env.handle.generation == 0 and env.handle.container_id == first
    finally:
        env.close()


@pytest.mark.docker
def test_a_container_killed_from_outside_is_replaced(engine):
    """Killed while a step runs, the step pays (the runner cannot tell who killed it); killed
    between calls, the episodes on it are lost as infra_error (not the model's doing), and
    reset starts a new one on the replacement."""
    slow = "import time\ndef has_close_elements(numbers, threshold):\n    time.sleep(4)\n"
    env = _docker_env(_spec("humaneval"))
    try:
        gold = env.tasks()[0].answer
        env.reset(task_id="HumanEval/0")
        killer = threading.Timer(1.5, engine.api.kill, [env.handle.container_id])
        killer.start()
        during = env.step(_fenced(slow))
        killer.join()
        assert during.info.status.value == "timeout" and during.reward == 0.0, during.info
        assert env.handle.generation == 1
        other = env.fork()
        env.reset(task_id="HumanEval/0")
        other.reset(task_id="HumanEval/0")
        engine.api.kill(env.handle.container_id)
        engine.api.wait(env.handle.container_id, timeout=30)
        time.sleep(0.05)  # Docker's time of death is before the step begins
        after = env.step(_fenced(gold))
        assert after.info.status.value == "infra_error" and "before this call" in after.info.error
        lost = other.step(_fenced(gold))  # its episode died too; told without a server call
        assert lost.info.status.value == "infra_error" and env.handle.generation == 2
        for handle in (env, other):
            handle.reset(task_id="HumanEval/0")
            assert handle.step(_fenced(gold)).info.components["correctness"] == 1.0
        other.close()

        async def asynchronously() -> tuple:
            await env.areset(task_id="HumanEval/0")
            threading.Timer(1.5, engine.api.kill, [env.handle.container_id]).start()
            during = await env.astep(_fenced(slow))
            await env.areset(task_id="HumanEval/0")
            return during, await env.astep(_fenced(gold))

        during, honest = asyncio.run(asynchronously())
        assert during.info.status.value == "timeout" and env.handle.generation == 3
        assert honest.info.components["correctness"] == 1.0
    finally:
        env.close()


def test_docker_times_of_death():
    stamp = "2026-11-27T10:40:12.123456789Z"
    at = dk._epoch(stamp)
    assert at is not None and abs(at - 1795776012.123457) < 1e-3
    assert dk._epoch("0001-01-01T00:00:00Z") is None and dk._epoch("") is None
    assert dk.Death("exited", at).before(at + 1) and not dk.Death("exited", at).before(at - 1)
    assert not dk.Death("removed from outside", None).before(at)  # unknown: the call pays


def test_delegated_cgroups_hold_root_owned_limits_and_go_with_their_owner():
    from envhub.docker import cgroup as dc

    if not dc.possible():
        pytest.skip("no cgroups to delegate here (needs root, cgroup v1, a local engine)")
    mine = f"envhub-test-{os.getpid()}-abc123"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = f"envhub-test-{dead.pid}-def456"
    try:
        binds = dc.delegate(mine, memory_mb=64, pids=16)
        assert dc.delegate(orphan, memory_mb=64, pids=16)
        memory = dc.HOST_ROOT / "memory" / dc.GROUP / mine
        pids = dc.HOST_ROOT / "pids" / dc.GROUP / mine
        assert binds == {str(memory): {"bind": "/run/envhub-cgroup/memory", "mode": "rw"},
                         str(pids): {"bind": "/run/envhub-cgroup/pids", "mode": "rw"}}  # fmt: skip
        assert int((memory / "memory.limit_in_bytes").read_text()) == 64 << 20
        assert (pids / "pids.max").read_text().strip() == "16"
        assert memory.stat().st_uid == dc.IMAGE_UID == pids.stat().st_uid
        assert (memory / "memory.limit_in_bytes").stat().st_uid == 0  # the server can't raise it
        (memory / "envhub-sandbox" / "run").mkdir(parents=True)  # what a sandbox makes inside
        released = dc.release_orphans()
        assert orphan in released and mine not in released and memory.is_dir()
        dc.release(mine)
        assert not memory.exists() and not pids.exists()
    finally:
        dc.release(mine)
        dc.release(orphan)
