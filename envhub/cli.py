"""The ``envhub`` command line.

The forms of ``list``, ``tasks``, ``serve``, ``register`` and ``verify`` are fixed: scripts and
other tools call them. Every command prints machine-readable output on stdout and errors on
stderr; an error exits with 1, a usage error with 2.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from .errors import EnvhubError, GoldAnswerError
from .install import entry_points, install_command, missing_package_hint
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
    family: Annotated[
        str | None, typer.Option(help="Only this family (math, code, reasoning-gym...).")
    ] = None,
) -> None:
    """List the registered environments, one per line: name, id, family, runner, description.

    An environment that cannot run here yet ends with ``[install: ...]`` (the pip command of
    its missing extras) or ``[needs data: ...]``; a registration of yours that hides a built-in
    environment of the same name with ``[overrides built-in NAME-vN]``; one pulled into a venv
    of its own with ``[served from the venv DIR]``.
    """
    from .registry.catalog import catalog
    from .registry.needs import needs

    reg = catalog()
    rows = []
    for name in reg.names():
        s = reg.spec(name)
        if (tag and tag not in s.tags) or (family and s.family != family):
            continue
        desc = " ".join(s.description.split())[:70]
        hidden = reg.overrides_builtin(name)
        own = f"served from the venv {s.venv}" if s.venv else None
        marks = [f"overrides built-in {hidden}" if hidden else None, own, needs(s)]
        mark = "".join(f"  [{m}]" for m in marks if m)
        rows.append((s.name, s.id, s.family, s.runner, f"{desc}{mark}"))
    widths = [max([least, *(len(r[i]) for r in rows)]) for i, least in enumerate((22, 26, 8, 6))]
    for row in rows:
        typer.echo(" ".join(f"{cell:<{w}}" for cell, w in zip(row, widths, strict=False)) + row[4])


@app.command()
def info(
    name: NameArg,
    text: Annotated[bool, typer.Option(help="Print the environment card as text.")] = False,
    measure: Annotated[bool, typer.Option(help="Re-measure reference scores first.")] = False,
) -> None:
    """Show an environment's catalog entry (resolved) and its card as JSON."""
    from .authoring.cli import card_of
    from .registry.catalog import spec

    s = spec(name)
    c = card_of(s, measure)
    if text:
        from .authoring.cards import render

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
    from .registry.make import make

    with make(name, runner="local") as env:
        items = env.tasks(split)
        for task in items[:limit] if limit else items:
            msgs = env.opening_messages(task)
            _emit(
                {
                    "task_id": task.task_id,
                    "messages": [m.model_dump(exclude_none=True) for m in msgs],
                    "answer": task.answer,
                    "metadata": task.metadata,
                }
            )


@app.command()
def register(
    file: Annotated[Path, typer.Argument(help="YAML file describing the environment(s).")],
    force: Annotated[
        bool, typer.Option(help="Replace your earlier NAME-vN (its kind stays), or override a "
                           "built-in with a higher version.")
    ] = False,
    link: Annotated[
        bool | None,
        typer.Option("--link/--copy", help="Record the file's place, or a copy of it "
                     "(default: a copy, or what an earlier registration was).", show_default=False),
    ] = None,
) -> None:  # fmt: skip
    """Add environments from a YAML file to your catalog ($ENVHUB_HOME/registry.d).

    Registering the same file again the same way does nothing and exits 0.
    """
    from .authoring.register import register_file

    for r in register_file(file, force=force, link=link):
        if r.outcome == "unchanged":
            typer.echo(f"{r.spec.id}: already registered from this file; nothing to do")
            continue
        kind = "by link" if r.link else "as a copy"
        again = "; replaced your earlier registration" if r.outcome == "replaced" else ""
        typer.echo(f"registered {r.spec.id} (from {file}, {kind}{again})")
        if r.note:
            typer.echo(f"warning: {r.note}", err=True)


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
        lines = batch.read_text(encoding="utf-8").split("\n")  # not at U+2028 in a response
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
    from .registry.make import make

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
    try:
        task = env.task_from_gold(gold)
    except GoldAnswerError as e:
        _fail(f"--gold {gold!r}: {e}", 2)
    return env.verify(task, text).model_dump(mode="json")


from .authoring.cli import (  # noqa: E402
    cards_command,
    check_command,
    init_command,
    unregister_command,
)

app.command("init")(init_command)
app.command("check")(check_command)
app.command("unregister")(unregister_command)
app.command("cards")(cards_command)

from .authoring.hub.cli import register as register_hub_verbs  # noqa: E402

register_hub_verbs(app)

PART_GROUP = "envhub.cli"
"""Entry-point group through which the parts above the core add their verbs: each entry point
is a callable ``register(app: typer.Typer) -> None`` (``serve``, ``docker``, ``eval``,
``train``...). The core imports no part; a part's verb appears when its distribution's metadata
declares it."""


def _unavailable(name: str, error: Exception, extras: list[str]) -> Any:
    """A stand-in verb for a part that cannot load here: using it says how to install it."""
    install = install_command(extras)

    def command() -> None:
        _fail(f"`envhub {name}` cannot load here ({type(error).__name__}: {error}); {install}")

    command.__doc__ = f"(unavailable here: {install})"
    return command


def add_parts(target: typer.Typer) -> list[str]:
    """Let every part registered under :data:`PART_GROUP` add its verbs; their names."""
    names = []
    for ep in entry_points(PART_GROUP).values():
        names.append(ep.name)
        try:
            register = ep.load()
        except ImportError as e:  # the part's module itself needs an extra that is absent
            loose = {"allow_extra_args": True, "ignore_unknown_options": True}
            target.command(ep.name, context_settings=loose)(_unavailable(ep.name, e, ep.extras))
            continue
        register(target)
    if not names:
        target.info.epilog = (
            "No part verbs (serve, eval, train, docker) are registered: envhub's install "
            f"metadata predates them. Reinstall envhub: `{install_command()}`."
        )
    return names


add_parts(app)


def main() -> None:
    """Entry point: run the app and turn envhub errors into one clear line."""
    try:
        app()
    except EnvhubError as e:
        typer.echo(f"error: {e}", err=True)
        sys.exit(1)
    except (ModuleNotFoundError, metadata.PackageNotFoundError) as e:
        hint = missing_package_hint(e)  # a package of an extra, found missing by any command
        if hint is None:
            raise
        typer.echo(f"error: {hint}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
