"""``envhub docker ...``: build the image, list and clean envhub's containers.

Joins the ``envhub`` command line through the ``envhub.cli`` entry points (:func:`register`);
the Docker SDK loads when a verb runs.
"""

from __future__ import annotations

import time

import typer

docker_app = typer.Typer(
    help="Docker runner: build the server image, list and clean envhub's containers.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add ``envhub docker ...`` (entry point ``envhub.cli: docker``)."""
    app.add_typer(docker_app, name="docker")


def _fail(e: Exception) -> typer.Exit:
    typer.echo(f"error: {e}", err=True)
    return typer.Exit(1)


@docker_app.command("build")
def build_cmd(
    base_image: str = typer.Option(
        None,
        "--base-image",
        help="Base image with Python >= 3.10 and pip (default python:3.11-slim). Without a "
        "registry: the name scripts/offline-base-image.sh prints.",
    ),
    extras: str = typer.Option(
        None, "--extras", help="Comma-separated envhub extras (default: server + every env extra)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the image tag."),
) -> None:
    """Build the envhub server image from this checkout; prints its tag."""
    from envhub.errors import EnvhubError

    from .containers import DEFAULT_BASE_IMAGE, build

    start = time.monotonic()
    log = None if quiet else (lambda line: typer.echo(line, err=True))
    wanted = [e for e in (extras or "").split(",") if e] or None
    try:
        tag = build(base_image or DEFAULT_BASE_IMAGE, extras=wanted, log=log)
    except EnvhubError as e:
        raise _fail(e) from None
    if not quiet:
        typer.echo(f"built {tag} (also envhub:latest) in {time.monotonic() - start:.1f}s", err=True)
    typer.echo(tag)


@docker_app.command("clean")
def clean_cmd(
    all_: bool = typer.Option(
        False, "--all", help="Also remove containers whose owner process is still running."
    ),
    images: bool = typer.Option(False, "--images", help="Also remove envhub's images."),
) -> None:
    """Remove envhub containers left behind by crashed runs (found by the envhub.managed label)."""
    from envhub.errors import EnvhubError

    from .containers import clean, engine
    from .image import prune_images

    try:
        removed = clean(all_=all_)
        if images:
            removed += prune_images(engine(), keep=0)
    except EnvhubError as e:
        raise _fail(e) from None
    for name in removed:
        typer.echo(f"removed {name}")
    typer.echo(f"{len(removed)} removed", err=True)


@docker_app.command("ps")
def ps_cmd() -> None:
    """List envhub's containers: name, environment, owner pid, whether the owner lives, state."""
    from envhub.errors import EnvhubError

    from .containers import LABEL_ENV, LABEL_MANAGED, LABEL_OWNER, _owner_alive, engine

    try:
        client = engine()
        containers = client.containers.list(all=True, filters={"label": f"{LABEL_MANAGED}=1"})
    except EnvhubError as e:
        raise _fail(e) from None
    typer.echo(f"{'NAME':40} {'ENV':16} {'OWNER':>8} {'ALIVE':6} STATE")
    for c in containers:
        alive = "yes" if _owner_alive(c.labels) else "no"
        typer.echo(
            f"{c.name:40} {c.labels.get(LABEL_ENV, '?'):16} "
            f"{c.labels.get(LABEL_OWNER, '?'):>8} {alive:6} {c.status}"
        )
