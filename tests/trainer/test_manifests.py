"""The KubeRay manifests: CRDs against KubeRay's own schema, core objects against Kubernetes'.

``tests/trainer/data/kuberay-schemas.json`` is KubeRay's ``RayCluster`` and ``RayJob`` CRD
schemas (``openAPIV3Schema`` of ``ray.io/v1``; the version, commit and source files are recorded
in it), made compact by ``scripts/kuberay-schemas.py``: descriptions dropped, the embedded pod
templates pruned to ``type: object``. Those pod templates (and the PVC) are validated here
instead, strictly, against the Kubernetes schemas that ``kubernetes-validate`` ships.

KubeRay's schema never sets ``additionalProperties: false``: the API server prunes unknown
fields of a structural schema, and ``kubectl apply`` (server-side field validation ``Strict``)
refuses them. :func:`strict` gives jsonschema the same rule by walking the schema: every object
with ``properties`` (and no ``additionalProperties`` or ``x-kubernetes-preserve-unknown-fields``)
refuses a field it does not list. CEL rules (``x-kubernetes-validations``) are not evaluated.
"""

import json
import shlex
from pathlib import Path

import pytest
import yaml
from repo_scripts import load_script

kv = pytest.importorskip("kubernetes_validate")
jsonschema = pytest.importorskip("jsonschema")

from envhub.trainer.config import load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
K8S = "1.37.0"
KUBERAY = json.loads((Path(__file__).parent / "data" / "kuberay-schemas.json").read_text())


def strict(schema):
    """``schema`` where every object with ``properties`` refuses fields it does not list."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: {name: strict(s) for name, s in v.items()}
        if k in ("properties", "patternProperties")
        else strict(v)
        for k, v in schema.items()
    }
    open_ = "additionalProperties" in schema or schema.get("x-kubernetes-preserve-unknown-fields")
    if "properties" in schema and not open_:
        out["additionalProperties"] = False
    return out


def kuberay_errors(doc, *, walk=True):
    """Every way ``doc`` breaks its kind's KubeRay schema, as ``path: message`` lines."""
    schema = KUBERAY["schemas"][doc["kind"]]
    validator = jsonschema.Draft4Validator(strict(schema) if walk else schema)
    return sorted(
        f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in validator.iter_errors(doc)
    )


def _docs(name):
    return list(yaml.safe_load_all((REPO / "examples" / name).read_text()))


def _validate_pod_template(template):
    wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}}
    kv.validate({**wrapped, "template": template}, K8S, strict=True)


def _check_cluster_spec(spec):
    """The pod templates, images and ``rayStartParams.resources``; the resources offered."""
    offered = {}
    for g in [spec["headGroupSpec"], *spec["workerGroupSpecs"]]:
        resources = g["rayStartParams"].get("resources")
        if resources is not None:
            # KubeRay hands the value to `ray start --resources=...`: a quoted JSON object
            found = json.loads(json.loads(resources))
            assert all(isinstance(v, int | float) for v in found.values())
            for k, v in found.items():
                offered[k] = offered.get(k, 0) + v
        _validate_pod_template(g["template"])
        images = {c["image"] for c in g["template"]["spec"]["containers"]}
        assert images == {"envhub-trainer:latest"}  # built by envhub/trainer/Dockerfile
    for g in spec["workerGroupSpecs"]:
        assert g["minReplicas"] <= g["replicas"] <= g["maxReplicas"]
    return offered


def test_the_vendored_schemas_say_where_they_come_from():
    assert KUBERAY["kuberay_version"].startswith("v1.")
    assert len(KUBERAY["commit"]) == 40 and int(KUBERAY["commit"], 16) >= 0
    assert all(KUBERAY["commit"] in url for url in KUBERAY["source"])
    assert set(KUBERAY["schemas"]) == {"RayCluster", "RayJob"}
    assert (Path(__file__).parent / "data" / "kuberay-schemas.json").stat().st_size < 300_000


def test_raycluster_and_its_volume_claim():
    cluster, pvc = _docs("kuberay.yaml")
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    assert kuberay_errors(cluster) == []
    offered = _check_cluster_spec(cluster["spec"])
    assert {"policy", "gen", "env"} <= set(offered)
    kv.validate(pvc, K8S, strict=True)


def test_rayjob_runs_a_valid_training_command_on_resources_its_cluster_offers():
    [job] = _docs("rayjob.yaml")
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    assert kuberay_errors(job) == []
    spec = job["spec"]
    offered = _check_cluster_spec(spec["rayClusterSpec"])
    argv = shlex.split(spec["entrypoint"])
    assert argv[:2] == ["envhub", "train"]
    config = argv[2].replace("/opt/envhub/", f"{REPO}/")  # where the Dockerfile copies it
    overrides = [a for a in argv[3:] if "=" in a and not a.startswith("--")]
    cfg = load_config(config, overrides)
    asked = {**cfg.cluster.policy_resources, **cfg.generation.resources, **cfg.env.resources}
    assert asked and set(asked) <= set(offered)
    assert "--resume" in argv and argv[argv.index("--resume") + 1] == "auto"


@pytest.mark.parametrize(
    ("where", "bad", "message"),
    [
        ("head", {"rayStartParam": {"num-cpus": "0"}}, "'rayStartParam' was unexpected"),
        ("spec", {"workerGroupSpec": []}, "'workerGroupSpec' was unexpected"),
        ("worker", {"replica": 1}, "'replica' was unexpected"),
        ("worker", {"replicas": "1"}, "'1' is not of type 'integer'"),
        ("head", {"rayStartParams": {"num-cpus": 0}}, "0 is not of type 'string'"),
    ],
)
def test_a_field_kuberay_does_not_define_is_refused(where, bad, message):
    [job] = _docs("rayjob.yaml")
    spec = job["spec"]["rayClusterSpec"]
    target = {"spec": spec, "head": spec["headGroupSpec"], "worker": spec["workerGroupSpecs"][0]}
    target[where].update(bad)
    errors = kuberay_errors(job)
    assert any(message in e for e in errors), errors


def test_the_walk_is_what_refuses_unknown_fields():
    # KubeRay's schema alone lets a misspelt field through (Kubernetes would prune it)
    [job] = _docs("rayjob.yaml")
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParam"] = {}
    assert kuberay_errors(job, walk=False) == []
    assert kuberay_errors(job) != []
    del job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"]  # required
    assert any("'groupName' is a required property" in e for e in kuberay_errors(job, walk=False))


def test_a_pod_template_field_kubernetes_does_not_define_is_refused():
    [job] = _docs("rayjob.yaml")
    template = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
    template["spec"]["containers"][0]["imagePullPolicyy"] = "Never"
    with pytest.raises(kv.ValidationError):
        _validate_pod_template(template)


def test_the_dockerfile_builds_the_image_the_manifests_name():
    text = (REPO / "envhub" / "trainer" / "Dockerfile").read_text()
    assert "envhub-trainer" in text and "[trainer,math]" in text
    assert "COPY examples ./examples" in text and "WORKDIR /opt/envhub" in text


def _schemas_script():
    return load_script("kuberay-schemas.py")


def test_the_schema_script_drops_descriptions_and_prunes_pod_templates_only():
    script = _schemas_script()
    container = {"type": "object", "properties": {"image": {"type": "string"}}}
    pod = {
        "description": "PodTemplateSpec",
        "type": "object",
        "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {"containers": {"items": container}}},
        },
    }
    crd = {
        "spec": {
            "names": {"kind": "Thing"},
            "versions": [
                {"name": "v1alpha1", "schema": {"openAPIV3Schema": {"type": "string"}}},
                {
                    "name": "v1",
                    "schema": {
                        "openAPIV3Schema": {
                            "description": "a Thing",
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "description": {"type": "string", "description": "x"},
                                        "template": pod,
                                        "replicas": {"type": "integer", "description": "n"},
                                    },
                                },
                                "status": {"type": "object", "properties": {"ready": {}}},
                            },
                        }
                    },
                },
            ],
        }
    }
    kind, schema = script.crd_schema(crd)
    assert kind == "Thing"
    assert schema == {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "description": {"type": "string"},  # a field of that name stays
                    "template": {"type": "object"},  # kubernetes-validate checks it
                    "replicas": {"type": "integer"},
                },
            },
            "status": {"type": "object"},
        },
    }
