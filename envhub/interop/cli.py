"""``envhub catalog ...``: envhub's catalog in other ecosystems' formats, and theirs read back.

Joins the ``envhub`` command line through the ``envhub.cli`` entry points (:func:`register`).

* ``envhub catalog export --format openenv --publisher DOMAIN --source URI [-o FILE]``:
  OpenEnv 0.10's discovery catalog (digest-stamped environment cards) of envhub's catalog.
* ``envhub catalog list SOURCE``: the cards of an OpenEnv catalog (a file, a folder holding
  ``catalog.json``, or an http(s) URL), one JSON line each. Play one with an entry whose
  ``options`` name ``catalog`` and ``card`` (``docs/interop.md``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Annotated

import typer

catalog_app = typer.Typer(
    help="envhub's catalog as OpenEnv environment cards, and OpenEnv catalogs read back.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add ``envhub catalog ...`` (entry point ``envhub.cli: catalog``)."""
    app.add_typer(catalog_app, name="catalog")


def _head_commit() -> str | None:
    """The commit of envhub's checkout, if it runs from a git checkout."""
    from envhub.install import checkout

    root = checkout()
    if root is None:
        return None
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


@catalog_app.command("export")
def export_cmd(
    publisher: Annotated[str, typer.Option(help="Your DNS name: the cards' publisher.")],
    source: Annotated[
        str, typer.Option(help="The GitHub clone URI of this catalog's repository (…/NAME.git).")
    ],
    fmt: Annotated[str, typer.Option("--format", help="The format: openenv.")] = "openenv",
    revision: Annotated[
        str | None, typer.Option(help="The commit the cards name (default: this checkout's HEAD).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (default: stdout).")
    ] = None,
    builtin_only: Annotated[
        bool, typer.Option(help="Only the built-in catalog, not your registrations.")
    ] = False,
) -> None:
    """Write the catalog's environments as OpenEnv 0.10 environment cards (one snapshot)."""
    from envhub.registry.catalog import BUILTIN_REGISTRY, Registry, catalog

    from .openenv import catalog as cards

    if fmt != "openenv":
        typer.echo(f"error: --format {fmt!r}: the formats are: openenv", err=True)
        raise typer.Exit(2)
    commit = revision or _head_commit()
    if commit is None:
        typer.echo("error: envhub does not run from a git checkout: give --revision", err=True)
        raise typer.Exit(1)
    reg = Registry.load([BUILTIN_REGISTRY]) if builtin_only else catalog()
    snapshot = cards.export(
        [reg.spec(n) for n in reg.names()], publisher=publisher, source_uri=source, revision=commit
    )
    if output is None:
        typer.echo(json.dumps(snapshot, indent=2, sort_keys=True, ensure_ascii=False))
        return
    cards.write(snapshot, output)
    typer.echo(f"{len(snapshot['entries'])} cards, {snapshot['digest']} -> {output}", err=True)


@catalog_app.command("list")
def list_cmd(
    source: Annotated[str, typer.Argument(help="An OpenEnv catalog: file, folder or URL.")],
) -> None:
    """One JSON line per card of an OpenEnv catalog (its digest checked first)."""
    from .openenv import catalog as cards

    for card in cards.cards(cards.load(source)):
        typer.echo(json.dumps(card, ensure_ascii=False))
