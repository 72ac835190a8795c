"""Containers of the Docker runner: start, revive, list and remove them; the `docker` runner.

Entry points (what the rest of envhub calls)::

    start_container(spec: EnvSpec, *, image: str | None = None, host: str = "127.0.0.1",
                    port: int = 0, timeout: float = 120.0) -> DockerHandle
        # a healthy container serving `spec`; handle.url (http://127.0.0.1:PORT) for
        # envhub.client.remote_env.RemoteEnv, handle.close() removes it (also at interpreter exit)
    run_image(spec: EnvSpec, image: str, *, port: int = 8000, environment=None,
              host: str = "127.0.0.1", timeout: float = 120.0) -> DockerHandle
        # another ecosystem's server image (an OpenEnv environment) under the same policy,
        # for envhub.interop's OpenEnv entries with options.image
    serve_in_docker(name: str, host: str, port: int) -> None
        # `envhub serve NAME --docker`: runs in the foreground until Ctrl-C, then removes it
    build(base_image: str = DEFAULT_BASE_IMAGE, extras: list[str] | None = None) -> str
    clean(all_: bool = False) -> list[str]        # remove leftovers, found by label
    engine() -> docker.DockerClient               # raises DependencyMissing / DockerUnavailable
    # (envhub.docker.env: DockerEnv, and make_env, the `docker` runner of envhub.make)

Container policy. Every container runs with an init process (``--init``), a read-only root file
system with a tmpfs on ``/tmp``, the memory and process limits of ``spec.docker``, all
capabilities dropped and no new privileges, as the image's unprivileged user. Without
``spec.docker.network`` it joins ``envhub-isolated``, an *internal* Docker network: no route to
the internet or to other containers (it can still reach this host's bridge address). Docker does
not publish ports of internal networks, so envhub relays a random ``127.0.0.1`` port to the
container (:class:`~envhub.docker.relay.Relay`); with a network, Docker publishes the port on
``127.0.0.1`` itself. Containers carry the labels ``envhub.managed=1``, ``envhub.env``,
``envhub.owner-pid`` (and the owner's start time): a later run removes those whose owner died,
``envhub docker clean`` removes them on demand. One warm container serves many episodes: the
server keeps one session per episode. Containers of sandboxed environments get cgroups for
their programs (:mod:`.cgroup`); a container that dies anyway is replaced by
:meth:`DockerHandle.revive` at the same address (:mod:`.env` scores the call it ran).
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from envhub.errors import ConfigError, EnvhubError, TransportError, missing
from envhub.spec import EnvSpec

from . import cgroup
from .image import DEFAULT_BASE_IMAGE, build_image, default_extras, image_for

CONTAINER_PORT = 8000
NETWORK = "envhub-isolated"
LABEL_MANAGED = "envhub.managed"
LABEL_ENV = "envhub.env"
LABEL_OWNER = "envhub.owner-pid"
LABEL_OWNER_START = "envhub.owner-start"
LABEL_HOST = "envhub.owner-host"

_clients: dict[int, Any] = {}
_lock = threading.Lock()
_swept: set[int] = set()


class DockerUnavailable(EnvhubError):
    """No Docker engine answers at ``DOCKER_HOST`` (the SDK is installed)."""


class ImageMissing(ConfigError):
    """The image to run is not in the engine (:func:`run_image` builds and pulls nothing)."""


def _engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock (DOCKER_HOST unset)"


# ------------------------------------------------------------------------------ the engine


def engine() -> Any:
    """A connected ``docker.DockerClient`` for this process (one per process, reused).

    Raises:
        DependencyMissing: the ``docker`` SDK is not installed.
        DockerUnavailable: no engine answers at ``DOCKER_HOST``.
    """
    try:
        import docker
    except ImportError:
        raise missing("docker", "docker") from None
    with _lock:
        client = _clients.get(os.getpid())
        if client is not None:
            return client
        where = _engine_address()
        try:
            client = docker.from_env(timeout=60)
            client.ping()
        except Exception as e:  # noqa: BLE001 - the SDK raises several kinds here
            raise DockerUnavailable(
                f"no Docker engine reachable at {where}: {e}. Start the daemon "
                "(`scripts/ci-docker.sh start` starts one by hand) or point DOCKER_HOST at it"
            ) from None
        _clients[os.getpid()] = client
        atexit.register(_remove_owned, os.getpid())
        return client


def _proc_start(pid: int) -> str:
    """Start time of ``pid`` in clock ticks ("" if unknown): tells an owner from a reused pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _owner_alive(labels: dict[str, str]) -> bool:
    if labels.get(LABEL_HOST) != socket.gethostname():
        return True  # another machine's container: not ours to judge
    try:
        pid = int(labels.get(LABEL_OWNER, ""))
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        pass
    start = labels.get(LABEL_OWNER_START, "")
    return not start or start == _proc_start(pid)


def _remove(client: Any, container_id: str) -> bool:
    import docker.errors

    try:
        client.api.remove_container(container_id, force=True, v=True)
        return True
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as e:
        if "already in progress" in str(e):
            return False
        raise


def _remove_owned(pid: int) -> None:
    """At interpreter exit: remove the containers this process started and still holds."""
    if os.getpid() != pid:
        return  # a forked child must not remove its parent's containers
    try:
        client = _clients.get(pid)
        if client is None:
            return
        for c in client.containers.list(all=True, filters={"label": f"{LABEL_OWNER}={pid}"}):
            if c.labels.get(LABEL_HOST) == socket.gethostname():
                _remove(client, c.id)
                cgroup.release(c.name)
    except Exception:  # noqa: BLE001 - best effort at exit; `envhub docker clean` is the backstop
        pass


def clean(all_: bool = False) -> list[str]:
    """Remove envhub's containers whose owner process is dead (``all_``: every one).

    The programs' cgroups of removed containers (:mod:`.cgroup`) and of any container
    whose owner died go too; with ``all_`` envhub's internal network as well. Returns the names
    of what was removed.
    """
    client = engine()
    removed = []
    for c in client.containers.list(all=True, filters={"label": f"{LABEL_MANAGED}=1"}):
        if all_ or not _owner_alive(c.labels):
            if _remove(client, c.id):
                removed.append(c.name)
            cgroup.release(c.name)
    removed += [f"cgroup {name}" for name in cgroup.release_orphans()]
    if all_:
        for net in client.networks.list(filters={"label": f"{LABEL_MANAGED}=1"}):
            try:
                net.remove()
                removed.append(f"network {net.name}")
            except Exception:  # noqa: BLE001 - still in use by a container of another engine user
                pass
    return removed


def _sweep_once() -> None:
    """First start in a process: remove leftovers of crashed runs."""
    if os.getpid() not in _swept:
        _swept.add(os.getpid())
        clean(all_=False)


def build(
    base_image: str = DEFAULT_BASE_IMAGE, extras: list[str] | None = None, log: Any = None
) -> str:
    """Build the envhub image on ``base_image`` and return its tag (see :mod:`.image`)."""
    return build_image(engine(), base_image=base_image, extras=extras, log=log)


# ---------------------------------------------------------------------------- containers


def _network(client: Any) -> str:
    """The internal network for containers without one (created on first use)."""
    import docker.errors

    try:
        client.networks.get(NETWORK)
    except docker.errors.NotFound:
        try:
            client.networks.create(
                NETWORK, driver="bridge", internal=True, labels={LABEL_MANAGED: "1"},
                options={"com.docker.network.bridge.enable_icc": "false"},
            )  # fmt: skip
        except docker.errors.APIError as e:
            if "already exists" not in str(e):
                raise
    return NETWORK


def _mounts(spec: EnvSpec) -> dict[str, dict[str, str]]:
    """Read-only mounts of the environment's local data files (same path inside)."""
    path = spec.dataset.path
    if spec.dataset.kind not in ("jsonl", "parquet") or not path or "{" in os.path.dirname(path):
        return {}
    folder = os.path.dirname(os.path.abspath(os.path.expanduser(path)))
    if not os.path.isabs(os.path.expanduser(path)) or not os.path.isdir(folder):
        return {}
    return {folder: {"bind": folder, "mode": "ro"}}


@dataclass(frozen=True)
class Service:
    """What a container runs and where it answers: envhub's server, or an image's own."""

    command: tuple[str, ...] | None = None
    """The container's command; ``None``: the image's own."""
    port: int = CONTAINER_PORT
    """The port the server listens on inside the container."""
    environment: dict[str, str] = field(default_factory=dict)
    health: str = "/health"
    """The path that answers 200 once the server is up (and while it is well)."""
    sandboxed: bool = False
    """It runs programs in envhub's sandbox (see :func:`needs_sandbox`)."""


def envhub_service(spec: EnvSpec, host: str = "127.0.0.1", answers: bool = True) -> Service:
    """The envhub server for ``spec`` (``--allow-host``: clients name it by ``host``).

    ``answers``: serve ``/tasks`` and ``/verify`` (the Docker runner's own client lists tasks
    and verifies; ``envhub serve NAME --docker`` passes its ``--answers`` flag).
    """
    command = (spec.name, "--host", "0.0.0.0", "--port", str(CONTAINER_PORT),
               "--spec-json", spec.model_dump_json(), "--allow-host", host,
               *(["--answers"] if answers else []))  # fmt: skip
    return Service(command=command, sandboxed=needs_sandbox(spec))


def _run_kwargs(
    spec: EnvSpec,
    image: str,
    network: str | None,
    ports: dict,
    host: str = "127.0.0.1",
    service: Service | None = None,
) -> dict[str, Any]:
    service = service or envhub_service(spec, host)
    pid = os.getpid()
    labels = {
        LABEL_MANAGED: "1", LABEL_ENV: spec.name, LABEL_OWNER: str(pid),
        LABEL_OWNER_START: _proc_start(pid), LABEL_HOST: socket.gethostname(),
    }  # fmt: skip
    mem = f"{spec.docker.memory_mb}m"
    sandboxed = service.sandboxed
    security = ["no-new-privileges", *(["seccomp=unconfined"] if sandboxed else [])]
    command = list(service.command) if service.command is not None else None
    return dict(
        image=image, command=command, detach=True, init=True, read_only=True,
        tmpfs={"/tmp": "rw,nosuid,nodev,size=512m,mode=1777"}, mem_limit=mem, memswap_limit=mem,
        pids_limit=spec.docker.pids_limit, cap_drop=["ALL"], security_opt=security,
        labels=labels, network=network, ports=ports, volumes=_mounts(spec),
        name=f"envhub-{spec.name}-{pid}-{os.urandom(3).hex()}", unmasked_proc=sandboxed,
        environment=dict(service.environment) or None,
    )  # fmt: skip


def needs_sandbox(spec: EnvSpec) -> bool:
    """The environment runs programs in :mod:`envhub.sandbox` (the code family).

    Its container must let bubblewrap work: user namespaces (Docker's default seccomp profile
    refuses them to a process without CAP_SYS_ADMIN) and a fresh ``/proc`` mount (refused
    while Docker masks parts of ``/proc``). So such containers run without the seccomp
    filter and the masks, still as an unprivileged user with every capability dropped.
    """
    return spec.family == "code" or "sandbox" in spec.tags


def _launch(client: Any, kwargs: dict[str, Any]) -> Any:
    """``docker run -d``; a container created but not started (port taken...) is removed."""
    try:
        if kwargs.get("unmasked_proc"):
            container = _run_unmasked(client, kwargs)
        else:
            container = client.containers.run(**{k: v for k, v in kwargs.items()
                                                 if k != "unmasked_proc"})  # fmt: skip
        container.reload()
        return container
    except BaseException:
        try:
            _remove(client, kwargs["name"])
        except Exception:  # noqa: BLE001 - report the original failure
            pass
        cgroup.release(kwargs["name"])
        raise


def _run_unmasked(client: Any, kw: dict[str, Any]) -> Any:
    """``docker run -d`` with no masked or read-only ``/proc`` paths.

    The CLI's ``--security-opt systempaths=unconfined``; the SDK's ``run`` cannot say it.
    """
    api = client.api
    ports = dict(kw["ports"])
    host_config = api.create_host_config(
        init=kw["init"], read_only=kw["read_only"], tmpfs=kw["tmpfs"], mem_limit=kw["mem_limit"],
        memswap_limit=kw["memswap_limit"], pids_limit=kw["pids_limit"], cap_drop=kw["cap_drop"],
        security_opt=kw["security_opt"], port_bindings=ports, binds=kw["volumes"],
        network_mode=kw["network"] or "default",
    )  # fmt: skip
    host_config["MaskedPaths"] = []
    host_config["ReadonlyPaths"] = []
    networking = None
    if kw["network"]:
        networking = api.create_networking_config({kw["network"]: api.create_endpoint_config()})
    created = api.create_container(
        kw["image"], kw["command"], detach=True, name=kw["name"], labels=kw["labels"],
        ports=list(ports), host_config=host_config, networking_config=networking,
        environment=kw.get("environment"),
    )  # fmt: skip
    api.start(created["Id"])
    return client.containers.get(created["Id"])


class _Launcher:
    """Starts the containers of one handle: the first one, and each replacement after a death.

    A replacement answers at the same address: the relay is pointed at it, or (with a network)
    Docker publishes it on the port the first one got.
    """

    def __init__(
        self,
        client: Any,
        spec: EnvSpec,
        image: str,
        host: str,
        port: int,
        relay: Any,
        service: Service | None = None,
    ) -> None:
        self.client, self.spec, self.image = client, spec, image
        self.host, self.port, self.relay = host, port, relay
        self.service = service or envhub_service(spec, host)

    def launch(self) -> tuple[Any, str]:
        """Start one container; ``(container, url)``."""
        inside = self.service.port
        if self.relay is None:
            ports = {f"{inside}/tcp": (self.host, self.port or None)}
            container = _launch(self.client, self._kwargs(None, ports))
            self.port = int(container.ports[f"{inside}/tcp"][0]["HostPort"])
            return container, f"http://{self.host}:{self.port}"
        container = _launch(self.client, self._kwargs(_network(self.client), {}))
        address = container.attrs["NetworkSettings"]["Networks"][NETWORK]["IPAddress"]
        self.relay.target = (address, inside)
        return container, f"http://{self.host}:{self.relay.port}"

    def _kwargs(self, network: str | None, ports: dict) -> dict[str, Any]:
        """The container's settings; a sandboxed one gets its programs' cgroups."""
        kwargs = _run_kwargs(self.spec, self.image, network, ports, self.host, self.service)
        if self.service.sandboxed:
            limits = self.spec.docker
            binds = cgroup.delegate(kwargs["name"], limits.memory_mb, limits.pids_limit)
            if binds:
                kwargs["volumes"] = {**kwargs["volumes"], **binds}
                # envhub.sandbox.cgroup.DELEGATED (the server part may not import the sandbox)
                kwargs["environment"] = {
                    **(kwargs["environment"] or {}),
                    "ENVHUB_SANDBOX_CGROUP": cgroup.INSIDE,
                }
        return kwargs


@dataclass(frozen=True)
class Death:
    """How a handle's container ended (see :meth:`DockerHandle.revive`)."""

    what: str
    """Docker's account: its state, exit code, whether the kernel OOM-killed in it."""
    at: float | None
    """When it ended (epoch seconds, Docker's clock), if Docker says."""

    def before(self, started: float) -> bool:
        """It ended before a call that began at ``started``: the call did not cause it."""
        return self.at is not None and self.at < started


HEALTH_GRACE_S = 10.0
"""How long a container that still runs may take to answer ``/health`` after a failed call
before it is judged wedged and replaced."""


class DockerHandle:
    """A running container serving one environment: ``url`` to reach it, ``close`` to remove it.

    Removed on :meth:`close`, when garbage-collected, and at interpreter exit. When a call
    finds the container dead, :meth:`revive` replaces it at the same ``url``.
    """

    def __init__(self, launcher: _Launcher, timeout: float) -> None:
        """Start the first container of ``launcher`` and wait up to ``timeout`` for it."""
        self._client = launcher.client
        self._launcher = launcher
        self._timeout = timeout
        self._current: list[tuple[str, str]] = []
        self._finalizer = weakref.finalize(
            self, DockerHandle._stop, self._client, self._current, launcher.relay, os.getpid()
        )
        self.generation = 0
        """How many containers died and were replaced (a call notes it when it starts)."""
        self.deaths: list[Death] = []
        self._revive_lock = threading.Lock()
        self.health: str = launcher.service.health
        """The path that answers 200 while the container's server is well."""
        self._start()

    def _start(self) -> None:
        try:
            container, self.url = self._launcher.launch()
        except BaseException:
            self.close()
            raise
        self._current[:] = [(container.id, container.name)]
        self.container_id: str = container.id
        self.name: str = container.name
        _wait_healthy(self, self._timeout)

    @staticmethod
    def _stop(client: Any, current: list[tuple[str, str]], relay: Any, pid: int) -> None:
        if os.getpid() != pid:
            return  # forked child: the parent owns the container
        if relay is not None:
            relay.close()
        try:
            for container_id, name in current:
                _remove(client, container_id)
                cgroup.release(name)
        except Exception:  # noqa: BLE001 - at exit the engine may be gone; clean() is the backstop
            pass

    def revive(self, generation: int) -> Death | None:
        """After a call made on container ``generation`` failed: replace it if it died.

        Returns ``None`` when that container still runs and answers ``/health`` (the call
        failed for another reason); else how it died, once a new container serves ``url``.
        Many calls failing from one death start one replacement.

        Raises:
            TransportError: the handle is closed, or the replacement did not come up.
        """
        with self._revive_lock:
            if self.closed:
                raise TransportError(f"container {self.name} was closed")
            if generation < self.generation:
                return self.deaths[generation]
            death = self._death()
            if death is None:
                return None
            _remove(self._client, self.container_id)
            cgroup.release(self.name)
            self._current.clear()
            self._start()
            self.deaths.append(death)
            self.generation += 1
            return death

    def _death(self) -> Death | None:
        """How the current container ended; ``None`` while it runs and answers ``/health``."""
        import docker.errors
        import httpx

        deadline = time.monotonic() + HEALTH_GRACE_S
        while True:
            try:
                state = self._client.api.inspect_container(self.container_id)["State"]
            except docker.errors.NotFound:
                return Death("removed from outside", None)
            if state["Status"] != "running":
                oom = ", OOM-killed" if state.get("OOMKilled") else ""
                what = f"{state['Status']} with exit code {state.get('ExitCode')}{oom}"
                return Death(what, _epoch(state.get("FinishedAt") or ""))
            if time.monotonic() > deadline:
                return Death(f"running but silent on {self.health} for {HEALTH_GRACE_S:g}s", None)
            try:
                if httpx.get(self.url + self.health, timeout=2.0).status_code == 200:
                    return None
            except httpx.HTTPError:
                time.sleep(0.1)

    def logs(self, tail: int = 200) -> str:
        """The container's last ``tail`` log lines."""
        try:
            return self._client.api.logs(self.container_id, tail=tail).decode(errors="replace")
        except Exception as e:  # noqa: BLE001 (logs are a courtesy of a failure report: their own failure is a line)
            return f"(no logs: {e})"

    def status(self) -> str:
        """Docker's state of the container (``running``, ``exited``, ``gone``)."""
        import docker.errors

        try:
            return self._client.api.inspect_container(self.container_id)["State"]["Status"]
        except docker.errors.NotFound:
            return "gone"

    @property
    def closed(self) -> bool:
        """Whether the container was already removed by this handle."""
        return not self._finalizer.alive

    def close(self) -> None:
        """Remove the container (idempotent)."""
        self._finalizer()

    def __enter__(self) -> DockerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DockerHandle({self.name!r}, url={self.url!r})"


def _epoch(stamp: str) -> float | None:
    """Docker's RFC 3339 time (``2026-11-27T10:40:12.123456789Z``) in epoch seconds."""
    head, _, fraction = stamp.rstrip("Z").partition(".")
    try:
        when = datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    seconds = when.timestamp()
    if seconds <= 0:
        return None  # Docker's zero time: not known
    return seconds + (float("0." + fraction) if fraction.isdigit() else 0.0)


def _wait_healthy(handle: DockerHandle, timeout: float) -> None:
    """Poll ``/health`` until it answers 200; fail early if the container exits."""
    import httpx

    deadline = time.monotonic() + timeout
    delay = 0.02
    with httpx.Client(timeout=2.0) as http:
        while time.monotonic() < deadline:
            try:
                if http.get(handle.url + handle.health).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            state = handle.status()
            if state not in ("created", "running"):
                break
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)
    logs = handle.logs(60)
    state = handle.status()
    handle.close()
    raise TransportError(
        f"container {handle.name} ({state}) did not answer {handle.url}{handle.health} within "
        f"{timeout:.0f}s; its log:\n{logs[-3000:]}"
    )


def start_container(
    spec: EnvSpec,
    *,
    image: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 120.0,
    answers: bool = True,
) -> DockerHandle:
    """Start a container serving ``spec`` and wait until it is healthy.

    Args:
        spec: The environment (overrides included: it is passed to the server whole).
        image: Image to run; by default the image of the current code with the extras the
            environment needs, built on the fly when absent (see :func:`.image.image_for`).
        host: Host address the server is published on (loopback unless you mean otherwise).
        port: Host port; 0 picks a free one.
        timeout: Seconds to wait for ``/health``.
        answers: Serve ``/tasks`` and ``/verify`` (``envhub serve --answers``).

    Raises:
        DependencyMissing, DockerUnavailable: no SDK or no engine.
        ImageBuildError: the image had to be built and could not be.
        TransportError: the container did not become healthy (its log is in the message).
    """
    client = engine()
    _sweep_once()
    log = (
        (lambda line: print(line, file=sys.stderr))
        if os.environ.get("ENVHUB_DOCKER_VERBOSE")
        else None
    )
    image = image or image_for(client, list(spec.docker.extras), log=log)
    service = envhub_service(spec, host, answers)
    return _handle(_Launcher(client, spec, image, host, port, None, service), timeout)


def _handle(launcher: _Launcher, timeout: float) -> DockerHandle:
    """The launcher's first container, reached through a relay without ``spec.docker.network``."""
    if not launcher.spec.docker.network:
        from .relay import Relay

        host, port = launcher.host, launcher.port
        try:  # bind first: a taken port fails before any container exists
            launcher.relay = Relay(None, host=host, port=port)
        except OSError as e:
            raise TransportError(f"cannot listen on {host}:{port} ({e}); pick another port") from e
    return DockerHandle(launcher, timeout)


def run_image(
    spec: EnvSpec,
    image: str,
    *,
    port: int = CONTAINER_PORT,
    environment: dict[str, str] | None = None,
    host: str = "127.0.0.1",
    timeout: float = 120.0,
) -> DockerHandle:
    """Start ``image``'s own server (another ecosystem's environment) and wait until healthy.

    The container runs the image's command under the policy of envhub's own (module
    docstring: limits, network and labels from ``spec``, so the sweep removes it if this
    process dies), its ``port`` reached on ``host`` only. How :mod:`envhub.interop` starts
    OpenEnv images.

    Raises:
        DependencyMissing, DockerUnavailable: no SDK or no engine.
        ImageMissing: ``image`` is not in the engine (nothing is pulled or built).
        TransportError: Docker refused the container, or it did not answer ``/health`` within
            ``timeout`` seconds (its log is in the message).
    """
    import docker.errors

    client = engine()
    _sweep_once()
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise ImageMissing(
            f"image {image!r} is not in the Docker engine at {_engine_address()}: build it "
            f"(`docker build -t {image} DIR`; an OpenEnv environment's folder: `openenv build`) "
            f"or pull it (`docker pull {image}`)"
        ) from None
    service = Service(port=port, environment=dict(environment or {}))
    try:
        return _handle(_Launcher(client, spec, image, host, 0, None, service), timeout)
    except docker.errors.APIError as e:
        raise TransportError(f"Docker could not start image {image!r}: {e}") from e


def serve_in_docker(
    name: str, host: str = "127.0.0.1", port: int = 8000, answers: bool = False
) -> None:
    """``envhub serve NAME --docker``: serve in a container until SIGINT/SIGTERM, then remove it.

    Both signals stop it whatever dispositions it inherited (a background job of a script
    starts with SIGINT ignored); started by another envhub process, it stops when that dies.
    A container that dies (a program killed it, or someone did from outside) is replaced at
    the same address; the episodes it held are lost.
    """
    from envhub.lifetime import follow_parent, stop_signals
    from envhub.registry.catalog import spec as lookup

    handle: DockerHandle | None = None
    with stop_signals():
        follow_parent()
        try:  # a signal during start-up lands here too; the atexit hook removes a half-made one
            handle = start_container(lookup(name), host=host, port=port, answers=answers)
            print(
                f"envhub: {name} serving at {handle.url} in container {handle.name} "
                "(Ctrl-C stops and removes it)",
                file=sys.stderr,
                flush=True,
            )
            _follow_logs(handle)
        except KeyboardInterrupt:
            pass
        finally:
            if handle is not None:
                handle.close()
            else:
                _remove_owned(os.getpid())


def _follow_logs(handle: DockerHandle) -> None:
    """Copy the container's log to stderr, replacing the container each time it dies."""
    while True:
        for chunk in handle._client.api.logs(handle.container_id, stream=True, follow=True):
            sys.stderr.write(chunk.decode(errors="replace"))
        death = handle.revive(handle.generation)
        if death is None:
            raise EnvhubError(f"container {handle.name} stopped ({handle.status()})")
        print(
            f"envhub: the container died ({death.what}); {handle.name} serves {handle.url} now",
            file=sys.stderr,
            flush=True,
        )


__all__ = [
    "Death", "DockerHandle", "DockerUnavailable", "ImageMissing", "Service", "build", "clean",
    "default_extras", "engine", "run_image", "serve_in_docker", "start_container",
]  # fmt: skip
