"""The hub's verbs: ``push``, ``pull``, ``search`` and ``yank`` (registered by :mod:`envhub.cli`).

The index is ``--to``/``--from``, else ``$ENVHUB_INDEX``, else ``$ENVHUB_HOME/index`` (a folder).
``push --to URL`` uploads to a remote index (twine, the ``hub`` extra); ``pull --venv DIR``
installs into a virtual environment of its own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ...datasets import envhub_home


def default_index() -> str:
    """``$ENVHUB_INDEX``, else the folder ``$ENVHUB_HOME/index``."""
    return os.environ.get("ENVHUB_INDEX") or str(envhub_home() / "index")


Where = Annotated[
    str | None,
    typer.Option("--from", help="Index: a folder or an http(s) URL (default $ENVHUB_INDEX)."),
]


def push_command(
    target: Annotated[str, typer.Argument(help="An installable folder, or a registered name.")],
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="A folder index, or a remote index's upload URL (twine's: pypiserver's root, "
            "https://upload.pypi.org/legacy/...). Default: $ENVHUB_INDEX when a folder.",
        ),
    ] = None,
    user: Annotated[str | None, typer.Option(help="Upload user (default $TWINE_USERNAME).")] = None,
    password: Annotated[
        str | None,
        typer.Option(help="Upload password or token (default $TWINE_PASSWORD; never printed)."),
    ] = None,
) -> None:
    """Check, measure, build and push an environment's wheel (its card inside) to an index."""
    from .index import is_url, redact
    from .push import push

    if to is None and is_url(default_index()):
        raise typer.BadParameter(
            "$ENVHUB_INDEX is a URL to read from; give --to: a folder, or the index's upload URL"
        )
    where = to or default_index()
    record = push(target, where, user=user, password=password)
    pushed = f"{record['environment']}@{record['version']} {record['digest']}"
    typer.echo(f"pushed {pushed} to {redact(where)}")


def pull_command(
    ref: Annotated[str, typer.Argument(help="NAME or NAME@VERSION.")],
    where: Where = None,
    check: Annotated[bool, typer.Option(help="Run `envhub check` after installing.")] = True,
    venv: Annotated[
        Path | None,
        typer.Option(
            help="Install into this virtual environment of its own (made if need be), with the "
            "environment's dependencies, and serve it from there."
        ),
    ] = None,
    system_site_packages: Annotated[
        bool,
        typer.Option(
            "--system-site-packages",
            help="With --venv: the venv also sees this Python's packages (only what is missing "
            "is installed there).",
        ),
    ] = False,
) -> None:
    """Install an environment from an index (digest checked), register it and check it."""
    from ..selfcheck import FAILED, run_checks, table
    from .pull import pull

    if system_site_packages and venv is None:
        raise typer.BadParameter("--system-site-packages is for --venv DIR")
    name = ref.partition("@")[0]
    record, yanked = pull(ref, where or default_index(), venv, system_site_packages)
    if yanked is not None:
        typer.echo(f"warning: {ref} is yanked ({yanked or 'no reason given'})", err=True)
    into = f" into {record['venv']}" if "venv" in record else ""
    typer.echo(
        f"installed {name}@{record['version']} {record['digest']} from {record['index']}{into}"
    )
    if check:
        from ...registry.catalog import spec

        results = run_checks(spec(name))
        typer.echo(table(spec(name), results))
        if any(r.outcome == FAILED for r in results):
            raise typer.Exit(1)


def search_command(
    text: Annotated[str, typer.Argument(help="Words of the name or description.")] = "",
    where: Where = None,
) -> None:
    """List an index's environments whose name or description holds TEXT, with their cards."""
    from .pull import search

    for r in search(text, where or default_index()):
        scores = r["card"].get("scores") or {}
        gold, rand = (scores.get(k, {}).get("solved") for k in ("gold", "random"))
        mark = "  [yanked]" if r["yanked"] else ""
        typer.echo(
            f"{r['environment']}@{r['version']}  {r['card'].get('description', '')}  "
            f"(gold {gold}, random {rand}; {r['digest']}){mark}"
        )


def yank_command(
    ref: Annotated[str, typer.Argument(help="NAME@VERSION to take back.")],
    where: Annotated[
        str | None, typer.Option("--from", help="Folder index (a remote one yanks by its own UI).")
    ] = None,
    reason: Annotated[str, typer.Option(help="Why (shown to whoever pulls it).")] = "",
) -> None:
    """Mark a version yanked in a folder index: never picked by an unpinned pull."""
    from .push import yank

    name, _, version = ref.partition("@")
    if not version:
        raise typer.BadParameter("yank takes NAME@VERSION")
    yank(name, version, where or default_index(), reason)
    typer.echo(f"yanked {ref}")


def register(app: typer.Typer) -> None:
    """Add the hub's verbs to ``app``."""
    app.command("push")(push_command)
    app.command("pull")(pull_command)
    app.command("search")(search_command)
    app.command("yank")(yank_command)
