"""Which node runs what: Ray custom resources per worker group, checked before anything starts.

Each worker group asks for the custom resources its config section names (the same names a
node advertises with ``ray start --resources='{"gen": 4}'`` or a KubeRay worker group's
``rayStartParams.resources``), so Ray places it only on nodes that offer them:

- ``cluster.policy_resources``: every policy worker (FSDP2 rank) and the reference worker;
- ``generation.resources``: every generation engine actor of ``placement: split`` (colocated
  engines share the policy workers' resources and ask for nothing);
- ``env.resources``: every environment worker.

:func:`check_resources` compares what the groups ask for with what the cluster has *before*
any actor is created, so an unsatisfiable request fails at once with the resource named
instead of leaving an actor pending forever. :func:`describe` gives each actor's node, which
the driver writes to ``DIR/placement.json``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envhub.trainer.config import Config, TrainConfigError


@dataclass(frozen=True)
class GroupRequest:
    """What one worker group asks of the cluster."""

    key: str
    """The config key it comes from, named in errors (``generation.resources``)."""
    count: int
    """Actors in the group."""
    per_actor: Mapping[str, float]
    """Resources each actor reserves (custom ones and ``CPU``/``GPU``)."""


def requests(config: Config) -> list[GroupRequest]:
    """The resource requests of every worker group the config starts."""
    c, g, e = config.cluster, config.generation, config.env
    policy = {"CPU": float(c.threads_per_worker), "GPU": c.gpus_per_worker, **c.policy_resources}
    out = [GroupRequest("cluster.policy_resources", c.policy_workers, policy)]
    if config.separate_engines and c.placement == "split":
        gen = {"CPU": g.cpus_per_engine, "GPU": g.gpus_per_engine, **g.resources}
        out.append(GroupRequest("generation.resources", g.num_engines, gen))
    out.append(GroupRequest("env.resources", e.workers, dict(e.resources)))
    return out


def check_resources(groups: list[GroupRequest], nodes: list[dict[str, Any]]) -> None:
    """Refuse requests no node (or not enough of the cluster) can hold, naming the resource.

    Args:
        groups: What the worker groups ask for (:func:`requests`).
        nodes: ``ray.nodes()``: each alive node's ``Resources`` (totals).

    Raises:
        TrainConfigError: a resource that no alive node offers in the amount one actor asks for,
            or whose cluster total is below what all groups ask for together.
    """
    alive = [n.get("Resources", {}) for n in nodes if n.get("Alive", True)]
    totals: dict[str, float] = {}
    for res in alive:
        for name, amount in res.items():
            totals[name] = totals.get(name, 0.0) + amount
    wanted: dict[str, float] = {}
    for grp in groups:
        need = {k: v for k, v in grp.per_actor.items() if v > 0}
        for name, amount in need.items():
            wanted[name] = wanted.get(name, 0.0) + amount * grp.count
            if not any(res.get(name, 0.0) >= amount for res in alive):
                raise TrainConfigError(_missing(grp.key, name, amount, totals))
        if not any(all(res.get(k, 0.0) >= v for k, v in need.items()) for res in alive):
            raise TrainConfigError(
                f"{grp.key}: no single node offers all that one actor of the group asks for "
                f"({need}); start a node with all of them, or lower the CPU/GPU request"
            )
    for name, amount in wanted.items():
        if totals.get(name, 0.0) + 1e-9 < amount:
            users = [g.key for g in groups if g.per_actor.get(name, 0) > 0]
            raise TrainConfigError(
                f"the worker groups ask for {amount:g} of Ray resource {name!r} in all "
                f"({', '.join(users)}), but the cluster has {totals.get(name, 0.0):g}: add "
                f"nodes that advertise it, or ask for less"
            )


def _missing(key: str, name: str, amount: float, totals: Mapping[str, float]) -> str:
    have = totals.get(name, 0.0)
    custom = sorted(k for k in totals if k not in ("CPU", "GPU", "memory", "object_store_memory"))
    custom = [k for k in custom if not k.startswith("node:")]
    return (
        f"{key} asks each actor for {amount:g} of Ray resource {name!r}, but no node of the "
        f"cluster offers that much (cluster total: {have:g}; custom resources offered: "
        f"{custom or 'none'}). Start nodes with `ray start --resources='{{\"{name}\": N}}'` "
        f"(KubeRay: rayStartParams.resources), or change {key}"
    )


def check_cluster(config: Config) -> None:
    """:func:`check_resources` against the connected Ray cluster (call after ``ray.init``)."""
    import ray

    check_resources(requests(config), ray.nodes())


def options(resources: Mapping[str, float]) -> dict[str, Any]:
    """``ray.remote`` options for a group's custom resources (none: no option at all)."""
    return {"resources": dict(resources)} if resources else {}


def where() -> dict[str, Any]:
    """This process's node id, node IP and process id (called inside an actor)."""
    import ray

    ctx = ray.get_runtime_context()
    return {
        "node_id": ctx.get_node_id(),
        "node_ip": ray.util.get_node_ip_address(),
        "pid": os.getpid(),
    }


def describe(groups: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    """Every actor's group, rank, node id, node IP and pid (each actor's ``where()``)."""
    import ray

    refs = [
        (name, rank, a.where.remote())
        for name, actors in groups.items()
        for rank, a in enumerate(actors)
    ]
    found = ray.get([r for _, _, r in refs], timeout=120)  # every actor answers at once
    return [
        {"group": name, "rank": rank, **info}
        for (name, rank, _), info in zip(refs, found, strict=True)
    ]
