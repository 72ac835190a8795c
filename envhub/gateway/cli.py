"""``envhub gateway``: the recording gateway as a server of its own.

::

    envhub gateway --model PATH [--engine auto|transformers|vllm] [--port 8000]
    envhub gateway --upstream http://127.0.0.1:8001/v1 --upstream-model NAME

It prints one JSON line (``base_url``, ``model``, ``admin_key``) and serves until stopped.
An orchestrator opens an episode with ``POST /episodes`` (admin key as bearer token; body
``{"id", "max_calls", "max_tokens"}``, all optional), hands the returned ``api_key`` and the
``base_url`` to its agent, and closes it with ``DELETE /episodes/ID``, which answers with the
episode's calls (:mod:`envhub.gateway.trace`). ``envhub eval --agent`` does all of this in
process.
"""

from __future__ import annotations

import json
import secrets
from typing import Annotated, NoReturn

import typer


def register(app: typer.Typer) -> None:
    """Add ``envhub gateway`` (entry point ``envhub.cli: gateway``)."""
    app.command("gateway")(gateway_command)


def _fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def gateway_command(
    model: Annotated[
        str | None, typer.Option(help="A local model (HF folder, 'smollm2', 'tiny').")
    ] = None,
    upstream: Annotated[
        str | None, typer.Option(help="An OpenAI-compatible URL to forward to instead.")
    ] = None,
    upstream_model: Annotated[str | None, typer.Option(help="The upstream's model name.")] = None,
    upstream_key: Annotated[
        str | None, typer.Option(envvar="ENVHUB_UPSTREAM_KEY", help="The upstream's API key.")
    ] = None,
    engine: Annotated[str, typer.Option(help="auto, transformers or vllm.")] = "auto",
    host: Annotated[str, typer.Option(help="Interface (loopback unless told).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free).")] = 8000,
    max_tokens: Annotated[
        int, typer.Option(min=1, help="A call's max_tokens when it gives none.")
    ] = 512,
) -> None:
    """Serve an OpenAI-compatible, recording gateway in front of a model."""
    if (model is None) == (upstream is None):
        _fail("give exactly one of --model PATH and --upstream URL", 2)
    if upstream and not upstream_model:
        _fail("--upstream needs --upstream-model NAME", 2)
    from .backends import EngineBackend, UpstreamBackend
    from .server import GatewayServer
    from .service import Gateway

    if upstream:
        backend = UpstreamBackend(upstream, str(upstream_model), api_key=upstream_key)
    else:
        backend = EngineBackend(_engine(str(model), engine), str(model))
    admin = "eh-admin-" + secrets.token_urlsafe(24)
    gateway = Gateway(backend, default_max_tokens=max_tokens, admin_key=admin)
    server = GatewayServer(gateway, host=host, port=port).start()
    line = {"base_url": server.base_url, "model": backend.name, "admin_key": admin}
    typer.echo(json.dumps(line), nl=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()


def _engine(model: str, preference: str) -> object:
    try:
        from envhub.engines.weights import resolve_model
    except ImportError as e:
        _fail(f"a local model needs the trainer extra ({e})")
    path = resolve_model(model)
    if preference in ("auto", "vllm"):
        try:
            from envhub.engines.vllm_engine import VLLMEngine

            return VLLMEngine.from_pretrained(str(path))
        except ImportError:
            if preference == "vllm":
                _fail("--engine vllm: vLLM is not installed")
    from envhub.engines.transformers_engine import TransformersEngine

    return TransformersEngine.from_pretrained(str(path))
