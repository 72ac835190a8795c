"""The KubeRay manifests: core objects against Kubernetes' own schemas, CRDs against KubeRay's fields.

``kubernetes-validate`` ships the Kubernetes OpenAPI schemas offline: the PVC and every pod
template (wrapped as a core ``PodTemplate``) are validated strictly (unknown fields refused).
``RayCluster``/``RayJob`` are CRDs it has no schema for; their fields are checked against the
ones KubeRay's ``ray.io/v1`` API reference documents
(https://ray-project.github.io/kuberay/reference/api/), and ``rayStartParams`` against what
KubeRay passes to ``ray start`` (string values; ``resources`` a JSON string). The RayJob's
entrypoint is parsed by the trainer's own config loader, and the custom resources it asks for
must be advertised by a worker group.
"""

import json
import shlex
from pathlib import Path

import pytest
import yaml

kv = pytest.importorskip("kubernetes_validate")

from envhub.trainer.config import load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
K8S = "1.37.0"

# ray.io/v1 fields, from KubeRay's API reference
RAYCLUSTER_SPEC = {
    "rayVersion", "headGroupSpec", "workerGroupSpecs", "enableInTreeAutoscaling",
    "autoscalerOptions", "headServiceAnnotations", "suspend", "managedBy", "gcsFaultToleranceOptions",
}  # fmt: skip
HEAD_GROUP = {"rayStartParams", "template", "serviceType", "headService", "enableIngress"}
WORKER_GROUP = {
    "groupName", "replicas", "minReplicas", "maxReplicas", "rayStartParams", "template",
    "scaleStrategy", "suspend", "idleTimeoutSeconds", "numOfHosts",
}  # fmt: skip
RAYJOB_SPEC = {
    "entrypoint", "runtimeEnvYAML", "jobId", "shutdownAfterJobFinishes",
    "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit", "rayClusterSpec",
    "clusterSelector", "submissionMode", "submitterPodTemplate", "submitterConfig",
    "entrypointNumCpus", "entrypointNumGpus", "entrypointResources", "suspend", "metadata",
    "managedBy", "deletionStrategy",
}  # fmt: skip
SUBMISSION_MODES = {"K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"}


def _docs(name):
    return list(yaml.safe_load_all((REPO / "examples" / name).read_text()))


def _check_cluster_spec(spec):
    assert set(spec) <= RAYCLUSTER_SPEC, set(spec) - RAYCLUSTER_SPEC
    assert set(spec["headGroupSpec"]) <= HEAD_GROUP
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    names = [g["groupName"] for g in spec["workerGroupSpecs"]]
    assert len(set(names)) == len(names)
    offered = {}
    for g in spec["workerGroupSpecs"]:
        assert set(g) <= WORKER_GROUP, set(g) - WORKER_GROUP
        assert g["minReplicas"] <= g["replicas"] <= g["maxReplicas"]
    for g in groups:
        params = g["rayStartParams"]
        assert all(isinstance(v, str) for v in params.values()), params  # map[string]string
        if "resources" in params:
            # KubeRay hands the value to `ray start --resources=...`: a quoted JSON object
            found = json.loads(json.loads(params["resources"]))
            assert all(isinstance(v, int | float) for v in found.values())
            for k, v in found.items():
                offered[k] = offered.get(k, 0) + v
        template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}}
        kv.validate({**template, "template": g["template"]}, K8S, strict=True)
        images = {c["image"] for c in g["template"]["spec"]["containers"]}
        assert images == {"envhub-trainer:latest"}  # built by envhub/trainer/Dockerfile
    return offered


def test_raycluster_and_its_volume_claim():
    cluster, pvc = _docs("kuberay.yaml")
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    offered = _check_cluster_spec(cluster["spec"])
    assert {"policy", "gen", "env"} <= set(offered)
    kv.validate(pvc, K8S, strict=True)


def test_rayjob_runs_a_valid_training_command_on_resources_its_cluster_offers():
    [job] = _docs("rayjob.yaml")
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    spec = job["spec"]
    assert set(spec) <= RAYJOB_SPEC, set(spec) - RAYJOB_SPEC
    assert spec["submissionMode"] in SUBMISSION_MODES
    offered = _check_cluster_spec(spec["rayClusterSpec"])
    argv = shlex.split(spec["entrypoint"])
    assert argv[:2] == ["envhub", "train"]
    config = argv[2].replace("/opt/envhub/", f"{REPO}/")  # where the Dockerfile copies it
    overrides = [a for a in argv[3:] if "=" in a and not a.startswith("--")]
    cfg = load_config(config, overrides)
    asked = {**cfg.cluster.policy_resources, **cfg.generation.resources, **cfg.env.resources}
    assert asked and set(asked) <= set(offered)
    assert "--resume" in argv and argv[argv.index("--resume") + 1] == "auto"


def test_a_field_kuberay_does_not_document_is_caught():
    [job] = _docs("rayjob.yaml")
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replica"] = 1  # typo
    with pytest.raises(AssertionError):
        _check_cluster_spec(job["spec"]["rayClusterSpec"])
    template = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
    template["spec"]["containers"][0]["imagePullPolicyy"] = "Never"
    with pytest.raises(kv.ValidationError):
        kv.validate(
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": "t"},
                "template": template,
            },
            K8S,
            strict=True,
        )


def test_the_dockerfile_builds_the_image_the_manifests_name():
    text = (REPO / "envhub" / "trainer" / "Dockerfile").read_text()
    assert "envhub-trainer" in text and '".[trainer,math]"' in text
    assert "COPY examples ./examples" in text and "WORKDIR /opt/envhub" in text
