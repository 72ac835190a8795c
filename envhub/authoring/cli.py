"""The authors' commands: ``init``, ``check``, ``unregister``, and ``cards``.

``cards`` shows the catalog's reference scores as the README's table
(:mod:`envhub.authoring.cards`; ``scripts/measure_cards.py`` re-measures them).

They live here so that :mod:`envhub.cli` only registers them (``app.command(...)(fn)``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..spec import EnvSpec


def _specs(target: str) -> list[EnvSpec]:
    """``target`` is a catalog name (``NAME``/``NAME-vN``) or a YAML file."""
    from ..registry.catalog import spec, specs_from_file

    if target.endswith((".yaml", ".yml")) and Path(target).is_file():
        return specs_from_file(target)
    return [spec(target)]


def check_command(
    target: Annotated[str, typer.Argument(help="Environment name, or a YAML file to check.")],
    only: Annotated[
        list[str] | None, typer.Option(help="Run only this check (repeatable).")
    ] = None,
) -> None:
    """Self-test an environment and print a table; exit 1 if any check failed.

    Checks: determinism by seed, bad inputs get model-owned statuses, gold answers (or the
    reference solver) score full marks, gymnasium's check_env, and the same transcripts
    in-process and over HTTP.
    """
    from .selfcheck import CHECKS, FAILED, run_checks, table

    unknown = sorted(set(only or ()) - set(CHECKS))
    if unknown:
        typer.echo(f"error: unknown check(s) {unknown}; choose from {list(CHECKS)}", err=True)
        raise typer.Exit(2)
    failed = False
    for s in _specs(target):
        results = run_checks(s, only)
        typer.echo(table(s, results))
        failed |= any(r.outcome == FAILED for r in results)
    if failed:
        raise typer.Exit(1)


def unregister_command(
    name: Annotated[str, typer.Argument(help="NAME-vN (or NAME with one version) to remove.")],
) -> None:
    """Remove one of your registrations from $ENVHUB_HOME/registry.d."""
    from .register import unregister

    for env_id in unregister(name):
        typer.echo(f"unregistered {env_id}")


def init_command(
    name: Annotated[str, typer.Argument(help="Name of the new environment, e.g. wordrev.")],
    family: Annotated[
        str, typer.Option(help="Template: math, code, sql, search, games or custom.")
    ] = "custom",
    multi_turn: Annotated[bool, typer.Option(help="Several turns (feedback, retries).")] = False,
    directory: Annotated[
        Path | None, typer.Option(help="Where to create the folder (default: here).")
    ] = None,
    register: Annotated[bool, typer.Option(help="Register it by link (see README).")] = True,
) -> None:
    """Create a new environment folder that passes `envhub check` as it is, and register it."""
    from .scaffold import init

    folder = init(name, family, multi_turn, directory, register)
    typer.echo(f"created {folder}" + (f" and registered {name}" if register else ""))
    typer.echo(f"next: edit {folder / 'env.py'} and {name}.yaml, then `envhub check {name}`")


def card_of(spec: EnvSpec, measure: bool = False) -> dict:
    """The environment card of ``spec``, re-measuring its reference scores first if asked."""
    from . import cards

    if measure:
        cards.measure(spec)
    return cards.card(spec)


def cards_command(
    readme: Annotated[
        Path | None, typer.Option(help="Rewrite this README's environments table.")
    ] = None,
    family: Annotated[
        str | None, typer.Option(help="Only this family's table, one row per entry.")
    ] = None,
) -> None:
    """The catalog's environment cards as the README's table.

    Scores come from envhub/authoring/cards.json (with date, settings, command and envhub
    commit), so `envhub info` shows them without measuring; a maintainer re-measures them with
    `python scripts/measure_cards.py` (minutes per environment on a CPU).
    """
    from ..registry.catalog import BUILTIN_REGISTRY, Registry
    from . import cards

    reg = Registry.load([BUILTIN_REGISTRY])  # the catalog only: not your registrations
    shown = [reg.spec(n) for n in reg.names()]
    if family:
        shown = [s for s in shown if s.family == family]
    text = cards.table(shown, summarise=() if family else cards.SUMMARISED)
    if readme is not None:
        changed = cards.write_readme(readme, text)
        typer.echo(f"{readme}: {'table rewritten' if changed else 'table already current'}")
        return
    typer.echo(text)
