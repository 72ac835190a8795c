"""Tasks of one reasoning-gym generator, split into disjoint ``train`` and ``test``.

A generator is seeded: item ``i`` of ``create_dataset(name, seed=s)`` is the same on every
machine. Both splits read the same item stream (``dataset.seed``) and every question is given
to a split by a hash of its text (one in :data:`TEST_SHARE` to ``test``), so no question is
in both splits, whatever the seeds and sizes; a question the generator repeats is kept once.
A generator with fewer distinct questions than asked for gives what :data:`SCAN` items hold.

The generator's knobs are the entry's ``dataset.options``; ``seed`` and ``size`` are
``dataset.seed`` and ``dataset.size``. ``composite`` takes ``datasets``: a list of
``{name, weight, config}``, the mix reasoning-gym samples from by weight.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import zlib
from collections.abc import Iterator
from enum import Enum
from typing import Any

from envhub.errors import ConfigError, DependencyMissing
from envhub.install import install_command
from envhub.types import Task

SPLITS = ("train", "test")
TEST_SHARE = 5
"""One question in ``TEST_SHARE`` (by a hash of its text) belongs to ``test``."""
SCAN = 20
"""At most ``SCAN * TEST_SHARE * size`` items are read to fill a split."""


def split_of(question: str) -> str:
    """The split a question belongs to (by a hash of its text)."""
    return "test" if zlib.crc32(question.encode("utf-8", "replace")) % TEST_SHARE == 0 else "train"


def library() -> Any:
    """The ``reasoning_gym`` module (imports every generator: seconds, once)."""
    try:
        import reasoning_gym
    except ImportError as e:
        raise DependencyMissing(
            f"reasoning-gym is not installed; install it with `{install_command(['math'])}`"
        ) from e
    return reasoning_gym


def _config_class(name: str) -> type:
    DATASETS = library().factory.DATASETS
    if name not in DATASETS:
        raise ConfigError(
            f"reasoning-gym has no dataset {name!r}; `envhub list --family reasoning-gym`"
        )
    return DATASETS[name][1]


def _mix(name: str, datasets: Any) -> list[Any]:
    """``composite``'s ``datasets`` option as reasoning-gym's ``DatasetSpec`` list."""
    from reasoning_gym.composite import DatasetSpec

    if not isinstance(datasets, list) or not datasets:
        raise ConfigError(
            f"rg-{name}: dataset.options.datasets must be a non-empty list of "
            "{name, weight, config}, e.g. [{name: chain_sum, weight: 2, config: {}}]"
        )
    out = []
    for item in datasets:
        if not isinstance(item, dict) or set(item) - {"name", "weight", "config"}:
            raise ConfigError(
                f"rg-{name}: each mixed dataset is {{name, weight, config}}, got {item!r}"
            )
        weight = item.get("weight", 1.0)
        if not isinstance(weight, (int, float)) or weight <= 0:
            raise ConfigError(f"rg-{name}: the weight of {item.get('name')!r} must be > 0")
        inner = item.get("name")
        config = kwargs(str(inner), item.get("config") or {}) if inner != "composite" else None
        if config is None:
            raise ConfigError(f"rg-{name}: a composite cannot mix another composite")
        out.append(DatasetSpec(name=str(inner), weight=float(weight), config=config))
    return out


def _default(field: dataclasses.Field) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None if field.default is dataclasses.MISSING else field.default


def _like(default: Any, value: Any) -> Any:
    """``value`` (JSON data) in the shape of ``default``: a tuple for a tuple, enums for enums."""
    if isinstance(default, Enum) and not isinstance(value, Enum):
        try:
            return type(default)(value)
        except ValueError as e:
            choices = [m.value for m in type(default)]
            raise ConfigError(f"{value!r} is not one of {choices}") from e
    if isinstance(default, (list, tuple)) and isinstance(value, (list, tuple)):
        items = [_like(default[0], v) for v in value] if default else list(value)
        return tuple(items) if isinstance(default, tuple) else items
    return value


def kwargs(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """The generator's config keyword arguments from ``dataset.options`` (checked).

    Values take the shape of the knob's default (JSON and YAML have no tuples or enums).
    """
    config_cls = _config_class(name)
    fields = {f.name: f for f in dataclasses.fields(config_cls) if f.init}
    for key in options:
        if key in ("seed", "size"):
            raise ConfigError(f"rg-{name}: set {key} as dataset.{key}, not in dataset.options")
        if key not in fields:
            knobs = sorted(set(fields) - {"seed", "size"})
            raise ConfigError(f"rg-{name}: unknown knob {key!r} in dataset.options; knobs: {knobs}")
    out = {key: _like(_default(fields[key]), value) for key, value in options.items()}
    if name == "composite":
        out["datasets"] = _mix(name, options.get("datasets"))
    return out


def _json_safe(value: Any) -> Any:
    """``value`` as JSON data; what JSON cannot hold becomes its ``repr``."""
    return json.loads(json.dumps(value, default=repr))


def dataset(name: str, options: dict[str, Any], seed: int, size: int) -> Any:
    """reasoning-gym's dataset ``name`` with the knobs ``options`` (refusals are ConfigError)."""
    rg = library()
    try:
        return rg.create_dataset(name, seed=seed, size=size, **kwargs(name, options))
    except (AssertionError, ValueError, TypeError) as e:
        raise ConfigError(f"rg-{name}: reasoning-gym refused dataset.options: {e}") from e


def _items(name: str, options: dict[str, Any], seed: int, limit: int) -> Iterator[dict]:
    items = dataset(name, options, seed, limit)
    for i in range(limit):
        yield items[i]


def tasks(
    name: str, split: str, size: int, seed: int, options: dict[str, Any]
) -> list[tuple[Task, dict[str, Any]]]:
    """The first ``size`` distinct questions of generator ``name`` that belong to ``split``.

    Each task keeps the item's answer and, JSON-safe, its metadata (``metadata["rg"]``); it
    comes with the item's metadata as generated, which ``score_answer`` reads (some scorers
    compare tuples, which JSON turns into lists).
    """
    if split not in SPLITS:
        raise ConfigError(f"rg-{name}: split must be one of {SPLITS}, got {split!r}")
    seen: set[str] = set()
    out: list[tuple[Task, dict[str, Any]]] = []
    for item in _items(name, options, seed, SCAN * TEST_SHARE * size):
        question = str(item["question"])
        if question in seen or split_of(question) != split:
            continue
        seen.add(question)
        answer = None if item.get("answer") is None else str(item["answer"])
        raw = item.get("metadata") or {}
        task_id = f"{name}/{split}/{len(out)}"
        meta = {"rg": _json_safe(raw), "difficulty": difficulty(raw)}
        task = Task(task_id=task_id, prompt=question, answer=answer, metadata=meta)
        out.append((task, raw))
        if len(out) == size:
            break
    return out


TASK_DIFFICULTY = (
    "the item's own values of the settings reasoning-gym names in its metadata['difficulty'] "
    "(e.g. 'num_digits=2,num_terms=4'); the generator's difficulty setting where the item "
    "records none"
)


def difficulty(raw: dict[str, Any]) -> str:
    """The task's difficulty key (see :data:`TASK_DIFFICULTY`) from an item's metadata."""
    declared = raw.get("difficulty")
    if not isinstance(declared, dict):
        return json.dumps(_json_safe(declared))
    own = {k: raw[k] for k in sorted(declared) if isinstance(raw.get(k), (int, float, str))}
    if not own:
        return json.dumps(_json_safe(declared), sort_keys=True)
    return ",".join(f"{k}={v}" for k, v in own.items())


@functools.lru_cache(maxsize=64)
def _cached(name: str, split: str, size: int, seed: int, options: str) -> tuple:
    return tuple(tasks(name, split, size, seed, json.loads(options)))


def cached_tasks(
    name: str, split: str, size: int, seed: int, options: dict[str, Any]
) -> list[tuple[Task, dict[str, Any]]]:
    """:func:`tasks`, generated once per process (``envhub check`` makes the env five times).

    Options that are not JSON data (a Python caller's own objects) are generated each time.
    """
    try:
        key = json.dumps(options, sort_keys=True)
    except TypeError:
        return tasks(name, split, size, seed, options)
    return list(_cached(name, split, size, seed, key))
