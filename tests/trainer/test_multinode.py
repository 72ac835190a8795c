"""Placement on a real multi-node Ray cluster: a head and two worker raylets on this machine.

Each node advertises one custom resource (``env`` on the head, ``policy`` and ``gen`` on the
workers); the run asks for them through ``env.resources``, ``cluster.policy_resources`` and
``generation.resources``, so the policy worker, the generation engine and the env worker
land on three different nodes (``DIR/placement.json`` says where), and every refit crosses
nodes (object store, then gloo). The cluster is Ray's own ``ray.cluster_utils.Cluster`` in a
private temp dir; it stops its own processes at the end (never ``ray stop``).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from envhub.trainer.config import Config, TrainConfigError  # noqa: E402
from envhub.trainer.workers.placement import check_resources, requests  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny.yaml"
PLACED = [
    "cluster.placement=split",
    "cluster.policy_workers=1",
    "generation.num_engines=1",
    "generation.verify_refit=true",
    "loss.kl_beta=0",
    "train.steps=1",
    "checkpoint.every=0",
    "checkpoint.export_final=false",
    "cluster.policy_resources={policy: 1}",
    "generation.resources={gen: 1}",
    "env.resources={env: 1}",
]


def _nodes(**per_node):
    return [{"Alive": True, "Resources": r} for r in per_node.values()]


def test_requests_name_each_group_and_its_resources():
    cfg = Config.model_validate(
        {
            "cluster": {"placement": "split", "policy_workers": 2, "policy_resources": {"t": 1}},
            "generation": {"num_engines": 3, "resources": {"gen": 0.5}},
            "env": {"workers": 2, "resources": {"env": 1}},
        }
    )
    got = {g.key: (g.count, g.per_actor) for g in requests(cfg)}
    assert got["cluster.policy_resources"] == (2, {"CPU": 1.0, "GPU": 0.0, "t": 1})
    assert got["generation.resources"] == (3, {"CPU": 1.0, "GPU": 0.0, "gen": 0.5})
    assert got["env.resources"] == (2, {"env": 1})


def test_a_missing_resource_is_named_before_anything_starts():
    cfg = Config.model_validate(
        {
            "cluster": {"placement": "split", "policy_workers": 1},
            "generation": {"resources": {"gpu_pool": 1}},
        }
    )
    nodes = _nodes(head={"CPU": 4.0, "train": 1.0})
    with pytest.raises(TrainConfigError, match=r"generation.resources.*'gpu_pool'.*--resources"):
        check_resources(requests(cfg), nodes)


def test_too_little_of_a_resource_in_all_is_refused():
    cfg = Config.model_validate(
        {"cluster": {"policy_workers": 2, "policy_resources": {"train": 1}}}
    )
    with pytest.raises(TrainConfigError, match=r"2 of Ray resource 'train'.*cluster has 1"):
        check_resources(requests(cfg), _nodes(a={"CPU": 4.0, "train": 1.0}))
    # two nodes with one each: enough
    check_resources(requests(cfg), _nodes(a={"CPU": 4.0, "train": 1.0}, b={"CPU": 1, "train": 1}))


def test_a_node_must_hold_one_actor_whole():
    cfg = Config.model_validate({"cluster": {"policy_workers": 1, "policy_resources": {"t": 1}}})
    with pytest.raises(TrainConfigError, match="no single node"):
        check_resources(requests(cfg), _nodes(a={"CPU": 0.0, "t": 1.0}, b={"CPU": 4.0}))


@pytest.fixture(scope="module")
def three_nodes():
    """Head (``env``) + two worker raylets (``policy``, ``gen``), each with its own CPUs."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), saved) if p)
    tmp = tempfile.mkdtemp(prefix="envhub-mn-")
    loopback = {"node_ip_address": "127.0.0.1"}
    # the helper records its address in /tmp/ray for `ray.init("auto")`: on a shared machine
    # nothing else must find this cluster, so that convenience is turned off
    real_write = ray._private.utils.write_ray_address
    ray._private.utils.write_ray_address = lambda *a, **k: None
    try:
        cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "resources": {"env": 1}, "temp_dir": tmp, **loopback},
        )
    finally:
        ray._private.utils.write_ray_address = real_write
    try:
        cluster.add_node(num_cpus=1, resources={"policy": 1}, **loopback)
        cluster.add_node(num_cpus=1, resources={"gen": 1}, **loopback)
        cluster.wait_for_nodes()
        yield cluster.address
    finally:
        cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def _train(out, address, *overrides):
    # loopback stays loopback (Ray otherwise swaps 127.0.0.1 for the host's outward IP,
    # which the nodes, bound to 127.0.0.1, do not listen on)
    env = dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    cmd = [
        sys.executable,
        "-m",
        "envhub.cli",
        "train",
        str(TINY),
        *PLACED,
        f"cluster.address={address}",
        *overrides,
        "--out",
        str(out),
    ]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=REPO)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["object_store", "gloo"])
def test_groups_on_their_own_nodes_and_refit_across_them(tmp_path, three_nodes, transport):
    proc = _train(tmp_path, three_nodes, f"generation.transport={transport}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    rows = json.loads((tmp_path / "placement.json").read_text())
    node = {r["group"]: r["node_id"] for r in rows}
    assert set(node) == {"policy", "generation", "env"}
    assert len(set(node.values())) == 3, rows  # three groups, three nodes
    assert all(r["node_ip"] and r["pid"] > 0 for r in rows)
    [metrics] = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    # the engine on the gen node scores the step's tokens as the trainer on the policy node
    assert metrics["refit/logprob_max_diff"] < 1e-3


@pytest.mark.slow
def test_an_unsatisfiable_request_fails_at_start_naming_it(tmp_path, three_nodes):
    proc = _train(tmp_path, three_nodes, "generation.resources={gpu_pool: 1}")
    assert proc.returncode != 0
    assert "'gpu_pool'" in proc.stderr + proc.stdout
    assert not (tmp_path / "placement.json").exists()
