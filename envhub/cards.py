"""Environment cards: what a user needs to choose an environment, with measured scores.

``envhub info NAME`` shows the card: turns, reward components and weights, the data and
whether it is offline, the pip extras it needs, and reference scores measured by
``envhub info NAME --measure`` (stored in ``$ENVHUB_HOME/cards/ID.json`` with the date and the
settings, so a stale number is visible as such):

- ``gold``: the environment's own gold answers or reference solver (the ceiling);
- ``random``: a scripted random policy that answers each task with the reference answer of
  another task drawn at random (well-formed, so it measures luck, not formatting).

Model scores come from ``envhub eval`` and are not measured here.
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any

from .core import TaskEnv
from .errors import EnvhubError
from .make import env_class, make_local
from .registry import envhub_home
from .rewards import GENERIC_COMPONENTS
from .spec import EnvSpec
from .types import Message, Status

FAMILY_EXTRAS = {"math": "math", "code": "code", "search": "search", "games": "games"}
"""The envhub extra each built-in family needs, beyond the core install."""


def cards_dir() -> Path:
    """Where measured scores are kept."""
    return envhub_home() / "cards"


def _data(spec: EnvSpec) -> dict[str, Any]:
    ds = spec.dataset
    offline = ds.kind in ("builtin", "jsonl", "parquet") and "needs-data" not in spec.tags
    where = ds.generator or "packaged" if ds.kind == "builtin" else ds.path
    return {"kind": ds.kind, "source": where, "split": spec.split, "offline": offline}


def extras(spec: EnvSpec) -> list[str]:
    """Pip extras of envhub the environment needs (``server`` to serve it)."""
    need = set(spec.docker.extras)
    if spec.family in FAMILY_EXTRAS:
        need.add(FAMILY_EXTRAS[spec.family])
    if spec.dataset.kind in ("hf", "parquet"):
        need.add("data")
    return sorted(need)


def card(spec: EnvSpec) -> dict[str, Any]:
    """The card of one environment (no environment code runs except importing its class)."""
    try:
        cls = env_class(spec)
    except EnvhubError as e:  # a missing extra: the card says so instead of failing
        components: list[str] | str = f"unknown: the class does not import ({e})"
    else:
        components = sorted(set(getattr(cls, "components", ())) | set(GENERIC_COMPONENTS))
    measured = cards_dir() / f"{spec.id}.json"
    return {
        "id": spec.id,
        "family": spec.family,
        "description": " ".join(spec.description.split()),
        "turns": spec.max_turns,
        "components": components,
        "weights": dict(spec.reward.weights),
        "judges": sorted(spec.reward.judges),
        "data": _data(spec),
        "extras": extras(spec),
        "scores": json.loads(measured.read_text()) if measured.is_file() else None,
    }


def _play(env: TaskEnv, seed: int, actions: list[Message | None] | None) -> tuple[float, bool]:
    """One episode: the reference move each turn (``actions=None``) or the given ones."""
    env.reset(seed=seed)
    result = None
    for turn in range(env.spec.max_turns):
        episode = env._episode
        assert episode is not None
        action = env.reference_action(episode) if actions is None else actions[turn]
        result = env.step(action or "")
        if result.done:
            break
    if result is None or result.info.status in (Status.INFRA_ERROR, Status.ENV_ERROR):
        return float("nan"), False
    return result.reward, result.info.components.get(env.primary_component) == 1.0


def _reference_answers(env: TaskEnv, seeds: list[int]) -> list[Message | None]:
    out = []
    for seed in seeds:
        env.reset(seed=seed)
        out.append(env.reference_action(env._episode) if env._episode else None)
    return out


def _summary(got: list[tuple[float, bool]]) -> dict[str, Any]:
    kept = [x for x in got if not math.isnan(x[0])]  # machine failures are not scores
    n = max(1, len(kept))
    return {
        "mean_reward": round(sum(r for r, _ in kept) / n, 4),
        "solved": round(sum(ok for _, ok in kept) / n, 4),
        "episodes": len(kept),
    }


def measure(spec: EnvSpec, episodes: int = 20, seed: int = 0) -> dict[str, Any]:
    """Measure gold and random-policy scores and store them as the card's ``scores``."""
    env = make_local(spec)
    assert isinstance(env, TaskEnv), "cards measure TaskEnv environments"
    rng = random.Random(seed)
    seeds = [rng.randrange(2**31) for _ in range(episodes)]
    others = _reference_answers(env, [rng.randrange(2**31) for _ in range(episodes)])
    rows: dict[str, list[tuple[float, bool]]] = {"gold": [], "random": []}
    for i, s in enumerate(seeds):
        rows["gold"].append(_play(env, s, None))
        rows["random"].append(_play(env, s, [others[i]] * spec.max_turns))
    env.close()
    out = {
        **{name: _summary(got) for name, got in rows.items()},
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seed": seed,
    }
    cards_dir().mkdir(parents=True, exist_ok=True)
    (cards_dir() / f"{spec.id}.json").write_text(json.dumps(out, indent=2))
    return out


def render(c: dict[str, Any]) -> str:
    """The card as text."""
    data, comps = c["data"], c["components"]
    lines = [
        f"{c['id']}  ({c['family']})  {c['description']}",
        f"turns       {c['turns']}",
        f"components  {comps if isinstance(comps, str) else ', '.join(comps)}",
        f"weights     {json.dumps(c['weights'])}"
        + (f"  judges: {c['judges']}" if c["judges"] else ""),
        f"data        {data['kind']}: {data['source']} (split {data['split']}, "
        f"{'offline' if data['offline'] else 'needs a download'})",
        f"extras      {', '.join(c['extras']) or 'none'} (serving also needs: server)",
    ]
    s = c["scores"]
    if not s:
        lines.append(f"scores      not measured: envhub info {c['id']} --measure")
    else:
        for name in ("gold", "random"):
            lines.append(
                f"{name:<11} mean reward {s[name]['mean_reward']}, solved {s[name]['solved']} "
                f"({s[name]['episodes']} episodes, {s['measured']})"
            )
    return "\n".join(lines)
