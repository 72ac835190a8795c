"""Loading task rows from local files or the Hugging Face hub.

JSONL is read with the standard library; parquet and hub datasets go through the optional
``datasets`` library, imported only when such a source is used. Set ``HF_DATASETS_OFFLINE=1``
on machines with no hub, or a hub name retries for tens of seconds before failing.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

from .errors import ConfigError, missing
from .spec import DatasetSpec
from .types import Task

TASK_FIELDS = ("task_id", "prompt", "answer")


def envhub_home() -> Path:
    """Where user registrations, cards and caches live: ``$ENVHUB_HOME`` or ``~/.envhub``."""
    return Path(os.environ.get("ENVHUB_HOME") or Path.home() / ".envhub").expanduser()


def cache_dir(name: str) -> Path:
    """``$ENVHUB_HOME/cache/NAME``: what an environment builds from its data, kept between runs."""
    return envhub_home() / "cache" / name


def resolve_path(path: str, split: str, base: Path | None) -> Path:
    """Fill ``{split}`` in ``path`` and resolve it against the YAML file's folder."""
    p = Path(path.format(split=split)).expanduser()
    if not p.is_absolute() and base is not None:
        p = base / p
    return p


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Rows of a ``.jsonl`` or ``.jsonl.gz`` file; a bad line names the file and line."""
    if not path.exists():
        raise ConfigError(f"dataset file {path} does not exist")
    opener = gzip.open if path.suffix == ".gz" else open
    rows: list[dict[str, Any]] = []
    with opener(path, "rt", encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{path}:{lineno}: not valid JSON ({e.msg})") from e
            if not isinstance(row, dict):
                raise ConfigError(f"{path}:{lineno}: expected a JSON object per line")
            rows.append(row)
            if limit and len(rows) >= limit:
                break
    return rows


def load_rows(spec: DatasetSpec, split: str, base: Path | None = None) -> list[dict[str, Any]]:
    """Rows of ``split`` from a ``jsonl``, ``parquet`` or ``hf`` dataset spec."""
    if not spec.path:
        raise ConfigError(f"dataset.kind={spec.kind!r} needs dataset.path")
    if spec.kind == "jsonl":
        return read_jsonl(resolve_path(spec.path, split, base), spec.size)
    try:
        import datasets as hf_datasets
    except ImportError as e:
        raise missing("datasets", "data") from e
    if spec.kind == "parquet":
        path = resolve_path(spec.path, split, base)
        ds = hf_datasets.load_dataset("parquet", data_files=str(path), split="train")
    else:
        try:
            ds = hf_datasets.load_dataset(spec.path, spec.config, split=split)
        except Exception as e:
            raise ConfigError(
                f"could not load {spec.path!r} (split {split!r}) from the hub: {e}. "
                "Offline? Point dataset.kind/path at a local jsonl or parquet file."
            ) from e
    if spec.size:
        ds = ds.select(range(min(spec.size, len(ds))))
    return [dict(r) for r in ds]


def row_to_task(row: dict[str, Any], index: int, split: str, fields: dict[str, str]) -> Task:
    """Map a row to a :class:`Task`: renamed columns first, the rest goes to metadata."""
    get = {f: fields.get(f, f) for f in TASK_FIELDS}
    if get["prompt"] not in row:
        raise ConfigError(
            f"row {index} of split {split!r} has no {get['prompt']!r} column "
            f"(columns: {sorted(row)}); map it with dataset.fields.prompt"
        )
    used = set(get.values())
    answer = row.get(get["answer"])
    return Task(
        task_id=str(row.get(get["task_id"], f"{split}/{index}")),
        prompt=str(row[get["prompt"]]),
        answer=None if answer is None else str(answer),
        metadata={k: v for k, v in row.items() if k not in used},
    )
