"""``envhub serve``: the server part's verb, registered through the ``envhub.cli`` entry points.

Light to import (typer and the core only): FastAPI, uvicorn and the Docker SDK load when the
verb runs, so ``envhub --help`` never pays for them, and an install without the ``server`` extra
still lists ``serve`` and says how to install it when it is used.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Annotated, Any, NoReturn

import typer

from envhub.errors import EnvhubError, InfraError
from envhub.install import install_command
from envhub.lifetime import follow_parent, stop_signals

NameArg = Annotated[str, typer.Argument(help="Environment name, e.g. gsm8k or gsm8k-v1.")]
MaxInflight = Annotated[
    int | None,
    typer.Option(
        help="Concurrent requests before 503 (default 256; twice --max-sessions for an "
        "environment whose steps await I/O)."
    ),
]
ReadTimeout = Annotated[
    float,
    typer.Option(
        min=0.001,
        help="Seconds to read one request whole (headers and body); past it, 408 and the "
        "connection closed (a client that trickles its request holds nothing).",
    ),
]
AllowHost = Annotated[
    list[str] | None,
    typer.Option(
        envvar="ENVHUB_ALLOW_HOST",
        help="A Host name served besides loopback ones (repeatable; '*': any), for a proxy or "
        "another name in front. Without it, a web page cannot reach the server through DNS "
        "rebinding.",
    ),
]
AllowOrigin = Annotated[
    list[str] | None,
    typer.Option(
        envvar="ENVHUB_ALLOW_ORIGIN",
        help="A browser Origin admitted besides loopback ones (repeatable; '*': any).",
    ),
]


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the ``envhub`` command line (entry point ``envhub.cli: serve``)."""
    app.command("serve")(serve)


def _fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def serve(
    name: NameArg,
    host: Annotated[str, typer.Option(help="Interface to bind; loopback unless told.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port.")] = 8000,
    docker: Annotated[bool, typer.Option(help="Run the server in a Docker container.")] = False,
    max_sessions: Annotated[int, typer.Option(help="Concurrent episodes kept.")] = 1024,
    session_ttl: Annotated[float, typer.Option(help="Idle seconds before expiry.")] = 600.0,
    max_inflight: MaxInflight = None,
    read_timeout: ReadTimeout = 30.0,
    threads: Annotated[int | None, typer.Option(help="Worker threads for env code.")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "warning",
    spec_json: Annotated[str | None, typer.Option(hidden=True)] = None,
    mcp: Annotated[
        bool, typer.Option(help="Serve the tools over MCP at /mcp, episodes at /mcp/control.")
    ] = False,
    allow_host: AllowHost = None,
    allow_origin: AllowOrigin = None,
    openenv: Annotated[
        bool, typer.Option(help="Speak OpenEnv's protocol at the root (its /ws, /reset...).")
    ] = False,
    nemo_gym: Annotated[
        bool, typer.Option(help="Answer NeMo Gym's resources-server /seed_session, /verify.")
    ] = False,
    answers: Annotated[
        bool,
        typer.Option(
            help="Also serve /tasks (gold answers) and /verify (grading): only on a port the "
            "agent cannot reach."
        ),
    ] = False,
) -> None:
    """Serve an environment over HTTP (OpenAPI docs at /docs, health at /health).

    SIGINT and SIGTERM stop it cleanly (exit 0), whatever dispositions it inherited; started
    by ``make(name, runner="http")`` it also stops when that process dies.
    """
    dialect = _dialect(openenv=openenv, nemo_gym=nemo_gym)
    if docker and dialect:
        _fail(f"--{dialect} serves in this process; drop --docker")
    if docker:
        from envhub.docker import serve_in_docker

        serve_in_docker(name, host, port, answers=answers)
        return
    limits = {"max_sessions": max_sessions, "session_ttl_s": session_ttl, "answers": answers}
    limits["read_timeout_s"] = read_timeout
    if max_inflight:
        limits["max_inflight"] = max_inflight
    if threads:
        limits["threads"] = threads
    allowed = {"hosts": list(allow_host or []), "origins": list(allow_origin or [])}
    with stop_signals():  # first: a stop asked for while the data loads counts too
        follow_parent()
        try:
            _serve_here(name, host, port, limits, log_level=log_level, spec_json=spec_json,
                        mcp=mcp, allowed=allowed, dialect=dialect)  # fmt: skip
        except KeyboardInterrupt:
            pass  # stopping on request is success


def _serve_here(
    name: str, host: str, port: int, limits: dict[str, Any], *, log_level: str,
    spec_json: str | None, mcp: bool, allowed: dict[str, list[str]],
    dialect: str | None = None,
) -> None:  # fmt: skip
    """Serve in this process until uvicorn stops (its handlers own SIGINT/SIGTERM meanwhile)."""
    sock = _listen(host, port)  # a taken port is said now, before loading data or "serving"
    try:
        import uvicorn

        from .app import ServerSettings, create_app
        from .reading import protocol
    except ImportError as e:
        _fail(f"serving needs the server extra: {install_command(['server'])} ({e})")
    s, env = _warm_env(name, spec_json)
    settings = ServerSettings(**limits, allowed_hosts=_served_names(host, allowed["hosts"]),
                              allowed_origins=allowed["origins"])  # fmt: skip
    if mcp:
        _need_mcp_sdk()
    api = create_app(env, settings, mcp=mcp, dialect=dialect)
    port = sock.getsockname()[1]
    typer.echo(f"envhub: serving {s.id} at http://{host}:{port} (docs: /docs)", err=True)
    # websockets' sans-I/O protocol: 10-20% less server CPU per /ws frame than uvicorn's default
    config = uvicorn.Config(
        api,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=5,
        ws="websockets-sansio",
        http=protocol(settings.read_timeout_s),  # a deadline on reading each request
    )
    uvicorn.Server(config).run(sockets=[sock])


def _served_names(host: str, allowed: list[str]) -> list[str]:
    """The Host names served besides loopback: ``allowed``, and ``host`` where it is not.

    A server bound to a non-loopback address is reachable from other machines: say so, and
    serve the name it was bound by (other names need ``--allow-host``).
    """
    in_container = os.environ.get("ENVHUB_IN_CONTAINER") == "1"  # published on loopback
    if in_container or ipaddress.ip_address(_resolve(host)).is_loopback:
        return list(allowed)
    typer.echo(f"envhub: warning: binding {host}: reachable from other machines "
               "(by this name; others need --allow-host)", err=True)  # fmt: skip
    return [*allowed, host]


def _dialect(**flags: bool) -> str | None:
    """The one protocol asked for (``--openenv``, ``--nemo-gym``), or ``None``."""
    asked = [name.replace("_", "-") for name, on in flags.items() if on]
    if len(asked) > 1:
        _fail(f"choose one of --{' or --'.join(asked)}: a server speaks one dialect")
    return asked[0] if asked else None


def _warm_env(name: str, spec_json: str | None) -> tuple[Any, Any]:
    """The spec and the local env to serve, its data loaded and helpers started now.

    Loading here means the first request is not the slow one; an env that cannot run safely
    (an ``InfraError``, e.g. no sandbox that keeps the answers away) is refused outright.
    """
    from envhub.core import TaskEnv
    from envhub.registry.catalog import spec as lookup
    from envhub.registry.make import make_local
    from envhub.spec import EnvSpec

    s = EnvSpec.model_validate_json(spec_json) if spec_json else lookup(name)
    env = make_local(s)
    try:
        if isinstance(env, TaskEnv):
            env.warmup()
        n = len(env.tasks())
        typer.echo(f"envhub: {s.id}: {n} tasks in split {s.split!r} ({_data_note(s)})", err=True)
    except InfraError as e:  # nothing to serve
        _fail(f"cannot serve {s.id}: {e}")
    except EnvhubError as e:
        typer.echo(f"envhub: warning: tasks not loaded: {e}", err=True)
    return s, env


def _need_mcp_sdk() -> None:
    """Fail naming the extra to install when the mcp SDK is missing (``serve --mcp``)."""
    try:
        import mcp as _mcp_sdk  # noqa: F401
    except ImportError as e:
        _fail(f"--mcp needs the mcp SDK: {install_command(['mcp'])} ({e})")


def _listen(host: str, port: int) -> Any:
    """A socket bound to ``host:port``; a port in use is one clear error line."""
    import socket

    address = _resolve(host)
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as e:
        sock.close()
        _fail(f"cannot listen on {host}:{port}: {e.strerror}; is another server there? "
              "pick another --port (--port 0 takes a free one)")  # fmt: skip
    sock.set_inheritable(True)
    return sock


def _resolve(host: str) -> str:
    if host == "localhost":
        return "127.0.0.1"
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        import socket

        return socket.gethostbyname(host)


def _data_note(s: Any) -> str:
    ds = s.dataset
    if ds.kind == "builtin":
        return f"offline builtin data: {ds.generator or 'packaged set'}"
    return f"{ds.kind} dataset {ds.path}"
