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
    max_inflight: Annotated[int, typer.Option(help="Concurrent requests before 503.")] = 256,
    threads: Annotated[int | None, typer.Option(help="Worker threads for env code.")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "warning",
    spec_json: Annotated[str | None, typer.Option(hidden=True)] = None,
    mcp: Annotated[
        bool, typer.Option(help="Serve the tools over MCP at /mcp, episodes at /mcp/control.")
    ] = False,
) -> None:
    """Serve an environment over HTTP (OpenAPI docs at /docs, health at /health).

    SIGINT and SIGTERM stop it cleanly (exit 0), whatever dispositions it inherited; started
    by ``make(name, runner="http")`` it also stops when that process dies.
    """
    if docker:
        from envhub.server.docker import serve_in_docker

        serve_in_docker(name, host, port)
        return
    limits = {"max_sessions": max_sessions, "session_ttl_s": session_ttl,
              "max_inflight": max_inflight}  # fmt: skip
    if threads:
        limits["threads"] = threads
    with stop_signals():  # first: a stop asked for while the data loads counts too
        follow_parent()
        try:
            _serve_here(name, host, port, limits, log_level=log_level, spec_json=spec_json,
                        mcp=mcp)  # fmt: skip
        except KeyboardInterrupt:
            pass  # stopping on request is success


def _serve_here(
    name: str, host: str, port: int, limits: dict[str, Any], *, log_level: str,
    spec_json: str | None, mcp: bool,
) -> None:  # fmt: skip
    """Serve in this process until uvicorn stops (its handlers own SIGINT/SIGTERM meanwhile)."""
    sock = _listen(host, port)  # a taken port is said now, before loading data or "serving"
    try:
        import uvicorn

        from .app import ServerSettings, create_app
    except ImportError as e:
        _fail(f"serving needs the server extra: {install_command(['server'])} ({e})")
    s, env = _warm_env(name, spec_json)
    in_container = os.environ.get("ENVHUB_IN_CONTAINER") == "1"  # published on loopback
    if not in_container and not ipaddress.ip_address(_resolve(host)).is_loopback:
        typer.echo(f"envhub: warning: binding {host}: reachable from other machines", err=True)
    if mcp:
        _need_mcp_sdk()
    api = create_app(env, ServerSettings(**limits), mcp=mcp)
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
    )
    uvicorn.Server(config).run(sockets=[sock])


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
