"""``envhub train CONFIG.yaml [KEY=VALUE ...] [--out DIR]``: the trainer's entry point.

``envhub.cli`` imports this module lazily, so ``import envhub`` never pays for torch or Ray.
Also runnable as ``python -m trainer.cli CONFIG.yaml [KEY=VALUE ...] [--out DIR]``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from .config import ConfigError, load_config


def default_out(config_path: str | None) -> Path:
    """``runs/<config name>`` under the current folder."""
    name = Path(config_path).stem if config_path else "default"
    return Path("runs") / name


RESUME = {"auto": ["checkpoint.resume=true"]}
"""``--resume`` values and the overrides they stand for."""


def main(
    config_path: str, overrides: list[str], out: str | None, resume: str | None = None
) -> None:
    """Load and validate the config, then train; everything lands under ``out``.

    Args:
        config_path: The YAML config file.
        overrides: ``key=value`` items applied over the file (e.g. ``train.steps=20``).
        out: Output folder (``runs/<config name>`` when None): ``metrics.jsonl``,
            ``checkpoints/step_N/``, ``final/`` (Hugging Face directory), ``reward.png``.
        resume: ``auto`` continues from the newest checkpoint under ``out`` (a fresh start
            when there is none), e.g. after a lost policy worker stopped the run.

    Raises:
        trainer.config.ConfigError: the config is invalid (the message names the key).
        trainer.checkpoint.ResumeError: ``checkpoint.resume`` under an incompatible config.
    """
    from .train import train

    if resume is not None and resume not in RESUME:
        raise ConfigError(f"--resume {resume!r}: the only value is 'auto'")
    config = load_config(config_path, [*overrides, *RESUME.get(resume or "", [])])
    out_dir = Path(out) if out else default_out(config_path)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    state = train(config, out_dir)
    print(f"done: {state.step} steps; metrics in {out_dir / 'metrics.jsonl'}")


def _cli(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m trainer.cli", description=__doc__)
    parser.add_argument("config")
    parser.add_argument("overrides", nargs="*", help="key=value")
    parser.add_argument("--out", default=None)
    parser.add_argument("--resume", default=None, choices=sorted(RESUME))
    args = parser.parse_args(argv)
    main(args.config, args.overrides, args.out, args.resume)


if __name__ == "__main__":
    _cli(sys.argv[1:])
