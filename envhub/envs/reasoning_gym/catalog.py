"""The ``rg-<dataset>`` catalog entries: one per dataset generator of the installed reasoning-gym.

Nothing here is written per generator. :func:`entries` returns one catalog entry (a mapping,
as in ``registry.yaml``) for each dataset reasoning-gym registers, all served by
:class:`~envhub.envs.reasoning_gym.env.ReasoningGymEnv`; the generator's knobs and their
defaults are the entry's ``dataset.options`` (``envhub info rg-NAME`` lists them).

Listing must stay cheap, and ``import reasoning_gym`` imports every generator (seconds). So the
generators' names, knobs and descriptions are read from ``generators.json``, a snapshot written
from the installed reasoning-gym by ``python -m envhub.envs.reasoning_gym.catalog``; when the
installed version is not the snapshot's, they are read from reasoning-gym itself (slow, but
right). ``tests/envs/test_reasoning_gym.py`` fails when the snapshot drifts from the installed
library. Without reasoning-gym installed the snapshot still lists the entries, and
``envhub list`` marks them with the install command.

Generators whose own gold answer does not score 1.0 under their own ``score_answer`` are left
out of the catalog, each with its reason, in :data:`EXCLUDED`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from envhub.spec import Knob

SNAPSHOT = Path(__file__).with_name("generators.json")
"""Names, descriptions and knobs of the generators of one reasoning-gym version."""
PREFIX = "rg-"
FAMILY = "reasoning-gym"
ENTRY_POINT = "envhub.envs.reasoning_gym.env:ReasoningGymEnv"
DEFAULT_SIZE = 200
"""Tasks per split of an entry (``dataset.size``)."""
NOT_KNOBS = ("seed", "size")
"""Config fields that are the entry's ``dataset.seed`` and ``dataset.size``, not options."""

NO_GOLD = (
    "its items carry no answer (answer None): its score_answer checks a proposed solution by "
    "simulating it, and reasoning-gym ships no solution to play as gold, so `envhub check` "
    "cannot prove the verifier"
)
WRONG_BUT_FULL = {
    "puzzle24": "1*3*8*1",
    "game_of_life_halting": "no idea",
}
"""Generators whose score_answer gives full marks to this wrong answer on any task: its cards
measured the random policy at 1.0. puzzle24 checks only that the expression makes 24 from four
numbers in range, not the task's numbers; game_of_life_halting compares ``bool(text)``, so
any non-empty answer matches the gold ("True" and "False" alike)."""
CLOSENESS_CREDIT = {
    "aiw": "partial credit for a number near the gold",
    "coin_flip": "credit for a prefix of the gold's digits: 0 or 00 earns 1.0 on 0.3125",
    "complex_arithmetic": "exp(-distance) credit: any number earns something",
    "gcd": "partial credit for a number near the gold",
    "largest_island": "partial credit for a number near the gold",
    "letter_counting": "partial credit for a number near the gold",
    "number_sequence": "partial credit for a number near the gold",
    "polynomial_equations": "credit per root: 0 earns 0.5 whenever 0 is one of two roots",
    "rectangle_count": "partial credit for a number near the gold: 2 earns 0.64 on 1 or 3",
    "spell_backward": "credit for letters in common: any letter earns some",
    "figlet_font": "credit for letters in common: any letter earns some",
    "time_intervals": "credit for a duration near the gold: 0 days earns 0.95 on 5 days",
    "game_of_life": "credit per matching cell: an all-zero grid earned 0.955 on others' tasks",
    "mini_sudoku": "credit per matching cell: one fixed grid earned 0.25 a task on average",
    "sudoku": "credit per matching cell: one fixed grid earned 0.13 a task on average",
    "futoshiki": "credit per matching cell: a fixed grid earns some on every task",
    "fraction_simplification": "0.1 for the question's own numerator or denominator: the "
    "question's fraction copied back earns it",
    "prime_factorization": "0.5 for any factors whose product is the number: '1 × N' earns it",
    "calendar_arithmetic": "0.1 for any weekday's name, exp(-5 x relative error) for a count "
    "of days",
    "letter_jumble": "credit per word in place: 'all' earned 0.125, the scrambled words copied "
    "earn every word that scrambling left as it was",
}
"""Generators whose partial credit a constant answer earns on tasks whose gold it is not (the
constant sweep of ``tests/envs/test_constant_answers.py``): envhub pays their full marks only,
and for ``coin_flip`` only a value within a relative tolerance of 1e-4
(:func:`~envhub.envs.reasoning_gym.scoring.within_tolerance`)."""
HASH_DEPENDENT = (
    "codeio",
    "intermediate_integration",
    "isomorphic_strings",
    "knight_swap",
    "list_functions",
    "polynomial_multiplication",
    "ransom_note",
    "word_ladder",
)
"""Generators whose tasks depend on the process's string-hash seed (``PYTHONHASHSEED``): the
same seed gives other tasks in another process (measured on their first 40 tasks)."""
NOT_REPRODUCIBLE = (
    "its tasks depend on the process's string-hash seed (PYTHONHASHSEED): the same seed gives "
    "other tasks in another process, so a server and its client, or two runs, disagree"
)
EXCLUDED: dict[str, str] = {
    **{name: NO_GOLD for name in ("boxnet", "graph_color", "propositional_logic")},
    **{name: NO_GOLD for name in ("rubiks_cube", "rush_hour")},
    **{name: NOT_REPRODUCIBLE for name in HASH_DEPENDENT},
    **{
        name: f"its score_answer gives full marks to wrong answers (e.g. {answer!r} on any "
        "task), so training on it rewards a constant answer"
        for name, answer in WRONG_BUT_FULL.items()
    },
}
"""Generators left out of the catalog, with the reason (measured: tests/envs/test_reasoning_gym.py
shows each reason still holds)."""
SIZES = {"zebra_puzzles": 50, "futoshiki": 50, "quantum_lock": 100}
"""Smaller default sizes for the generators that take over 0.2 s per task (measured on a CPU)."""

COMPOSITE_MIX = [
    {"name": "basic_arithmetic", "weight": 3.0, "config": {}},
    {"name": "chain_sum", "weight": 2.0, "config": {}},
    {"name": "leg_counting", "weight": 1.0, "config": {}},
    {"name": "word_sorting", "weight": 1.0, "config": {}},
]
"""``rg-composite``'s default mix: datasets, their weights and their configs."""

SYSTEM_PROMPT = (
    "Think step by step, then give your final answer inside <answer> </answer> tags, "
    "exactly once, for example <answer>42</answer>. Put only the answer inside the tags."
)


def installed_version() -> str | None:
    """The installed reasoning-gym's version, or ``None`` when it is not installed."""
    try:
        return metadata.version("reasoning-gym")
    except metadata.PackageNotFoundError:
        return None


def _json_default(value: Any) -> Any:
    """``value`` as JSON data (tuples become lists), or raise ``TypeError``."""
    return json.loads(json.dumps(value))


def _knobs(config_cls: type) -> dict[str, Any]:
    """A config dataclass's fields and defaults, except seed and size (JSON-able ones only)."""
    out = {}
    for f in dataclasses.fields(config_cls):
        if f.name in NOT_KNOBS or not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            continue
        try:
            out[f.name] = _json_default(value)
        except (TypeError, ValueError):
            continue
    return out


def _describe(dataset_cls: type) -> str:
    doc = (dataset_cls.__doc__ or "").strip().splitlines()
    return doc[0].strip() if doc else ""


def _levels(curriculum_cls: type | None) -> dict[str, Any]:
    """Per config field, its attribute of reasoning-gym's curriculum.

    Each has a description and levels (easiest first). A range attribute sets two fields
    (its lower and upper end).
    """
    out: dict[str, Any] = {}
    attributes = curriculum_cls().attributes if curriculum_cls is not None else {}
    for attr in attributes.values():
        try:
            levels = _json_default(attr.levels)
        except (TypeError, ValueError):
            continue
        about = {"description": attr.description or attr.name, "levels": levels}
        lower = getattr(attr, "lower_field_name", None)
        if lower is not None:
            out[lower] = {**about, "end": "lower"}
            out[attr.upper_field_name] = {**about, "end": "upper"}
        else:
            out[attr.field_name] = about
    return out


def live_generators() -> dict[str, Any]:
    """The snapshot's content, read from the installed reasoning-gym (imports every generator)."""
    from reasoning_gym import factory

    curricula = getattr(factory, "CURRICULA", {})  # versions before its curricula have none

    return {
        "reasoning_gym": installed_version(),
        "datasets": {
            name: {
                "description": _describe(ds_cls),
                "knobs": _knobs(cfg_cls),
                "curriculum": _levels(curricula.get(name)),
            }
            for name, (ds_cls, cfg_cls) in sorted(factory.DATASETS.items())
        },
    }


@cache
def generators() -> dict[str, Any]:
    """The generators of the installed reasoning-gym: the snapshot when its version matches."""
    snap = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    version = installed_version()
    if version is None or version == snap["reasoning_gym"]:
        return snap
    return live_generators()


KNOB_KINDS = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}


def knobs(name: str) -> tuple[Knob, ...]:
    """The knobs of generator ``name`` (its config's fields and defaults), as declared knobs.

    What a knob does and which way is harder come from reasoning-gym's curriculum for the
    generator (its levels, easiest first), where it has one for the field; its config says
    no range, and its own checks refuse a bad value when the tasks are made (a ConfigError).
    """
    about = generators()["datasets"].get(name)
    if about is None:
        return ()
    levels = about.get("curriculum", {})
    ordered = sorted(about["knobs"].items())
    return tuple(_knob(name, key, default, levels.get(key)) for key, default in ordered)


def _knob(name: str, key: str, default: Any, level: dict[str, Any] | None) -> Knob:
    kind = KNOB_KINDS.get(type(default), "value")
    if level is None:
        harder = "not declared by reasoning-gym (no curriculum level for this setting)"
        return Knob(key, "dataset.options", f"reasoning-gym's {name} setting.", default, kind,
                    harder)  # fmt: skip
    end = f" ({level['end']} end of the range)" if "end" in level else ""
    return Knob(
        key,
        "dataset.options",
        f"{level['description']}{end}.",
        default,
        kind,
        f"{_direction(level['levels'])} (reasoning-gym's curriculum levels, easiest first: "
        f"{level['levels']})",
    )


def _direction(levels: list[Any]) -> str:
    """``higher`` or ``lower`` when the levels are numbers that only rise or only fall."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in levels)
    if numbers and len(levels) > 1:
        steps = list(zip(levels, levels[1:], strict=False))
        if all(a < b for a, b in steps):
            return "higher"
        if all(a > b for a, b in steps):
            return "lower"
    return "later in the levels"


def _entry(name: str, about: dict[str, Any]) -> dict[str, Any]:
    options = dict(about["knobs"])
    if name == "composite":
        options["datasets"] = COMPOSITE_MIX
    description = about["description"] or f"reasoning-gym's {name} generator"
    return {
        "name": f"{PREFIX}{name}",
        "family": FAMILY,
        "entry_point": ENTRY_POINT,
        "description": description,
        "dataset": {
            "kind": "builtin",
            "size": SIZES.get(name, DEFAULT_SIZE),
            "seed": 0,
            "options": options,
        },
        "system_prompt": SYSTEM_PROMPT,
        "reward": {"weights": {"correctness": 1.0, "format": 0.1}},
        "options": {"generator": name},
        "docker": {"extras": ["math"]},
        "tags": ["reasoning-gym", "single-turn", "offline"],
    }


def entries() -> list[dict[str, Any]]:
    """One catalog entry per generator of the installed reasoning-gym, minus :data:`EXCLUDED`."""
    found = generators()["datasets"]
    return [_entry(name, found[name]) for name in sorted(found) if name not in EXCLUDED]


def write_snapshot() -> Path:
    """Write :data:`SNAPSHOT` from the installed reasoning-gym."""
    SNAPSHOT.write_text(json.dumps(live_generators(), indent=1, sort_keys=True) + "\n")
    return SNAPSHOT


if __name__ == "__main__":
    sys.stdout.write(f"wrote {write_snapshot()}\n")
