"""Write (or check) each env family's ``data/sample.jsonl``: a few real tasks with their golds.

Every line is one task of a catalog entry's offline default data, exactly as the environment
serves it (``task_id``, ``prompt``, ``answer``, ``metadata``), plus ``env``, the entry it came
from. ``tests/envs/test_family_shape.py`` loads each sample, checks that the environment still
serves the same task under that id, and plays the gold through the environment for full marks.

Regenerate after a change to a family's default data::

    python tests/support/family_samples.py            # every family below
    python tests/support/family_samples.py sql games  # some
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PER_ENV = 3
"""Tasks per catalog entry in a sample."""

FAMILY_ENVS: dict[str, tuple[str, ...]] = {
    "code": ("humaneval",),
    "games": ("wordle", "sokoban", "connect4"),
    "math": ("gsm8k", "math"),
    "reasoning_gym": ("rg-basic_arithmetic", "rg-composite"),
    "search": ("search",),
    "sql": ("sql",),
}
"""The catalog entries whose default data a family's sample is drawn from."""


def sample_path(family: str) -> Path:
    """Where ``family``'s sample lives."""
    return ROOT / "envhub" / "envs" / family / "data" / "sample.jsonl"


def sample_lines(family: str) -> list[dict]:
    """The first :data:`PER_ENV` tasks of each of the family's entries, as JSON-ready dicts."""
    import envhub

    lines = []
    for env_id in FAMILY_ENVS[family]:
        env = envhub.make(env_id)
        try:
            for task in list(env.tasks())[:PER_ENV]:
                lines.append({"env": env_id, **task.model_dump(mode="json")})
        finally:
            env.close()
    return lines


def read_sample(family: str) -> list[dict]:
    """The lines of ``family``'s sample file."""
    text = sample_path(family).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_sample(family: str) -> Path:
    """Write ``family``'s sample file and return its path."""
    path = sample_path(family)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in sample_lines(family))
    path.write_text(text, encoding="utf-8")
    return path


def main(argv: list[str]) -> None:
    """Write the samples of the families named in ``argv`` (all of them by default)."""
    for family in argv or sorted(FAMILY_ENVS):
        if family not in FAMILY_ENVS:
            raise SystemExit(f"unknown family {family!r}; families: {sorted(FAMILY_ENVS)}")
        print(write_sample(family))


if __name__ == "__main__":
    main(sys.argv[1:])
