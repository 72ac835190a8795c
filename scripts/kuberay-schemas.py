#!/usr/bin/env python3
"""Turn KubeRay's CRDs into one compact JSON schema file for tests/trainer/test_manifests.py.

KubeRay's ``ray.io_rayclusters.yaml`` and ``ray.io_rayjobs.yaml``
(``ray-operator/config/crd/bases/`` of https://github.com/ray-project/kuberay, Apache-2.0) are
0.9 and 1.4 MB, almost all of it descriptions and copies of the Kubernetes pod template. This
keeps each CRD's ``ray.io/v1`` ``openAPIV3Schema`` with:

- every ``description`` dropped (the schema keyword only; a field named ``description`` stays);
- every embedded pod template (a ``PodTemplateSpec``: an object whose ``spec`` has
  ``containers``, e.g. ``headGroupSpec.template``, ``submitterPodTemplate``) pruned to
  ``{"type": "object"}``: the test validates those separately and strictly against the
  Kubernetes schemas that ``kubernetes-validate`` ships, so a second copy adds nothing;
- ``status`` pruned to ``{"type": "object"}`` (the controller writes it, manifests never do).

Everything else (types, enums, ``required``, patterns, ``x-kubernetes-*`` markers, CEL rules
under ``x-kubernetes-validations``, which jsonschema does not evaluate) is kept as KubeRay
wrote it. The output records the KubeRay version, the commit and the source paths.

Usage (from a clone of kuberay, or the CRD files and their provenance given by hand)::

    python scripts/kuberay-schemas.py --git ~/src/kuberay --ref v1.7.0 \
        -o tests/trainer/data/kuberay-schemas.json
    python scripts/kuberay-schemas.py --crd ray.io_rayclusters.yaml --crd ray.io_rayjobs.yaml \
        --version v1.7.0 --commit SHA -o tests/trainer/data/kuberay-schemas.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

GITHUB = "https://github.com/ray-project/kuberay"
CRD_DIR = "ray-operator/config/crd/bases"
CRDS = ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml")
API_VERSION = "v1"
PRUNED = {"type": "object"}


def is_pod_template(schema: dict[str, Any]) -> bool:
    """True for a ``PodTemplateSpec`` schema: ``metadata`` + a ``spec`` with ``containers``."""
    props = schema.get("properties", {})
    spec = props.get("spec", {})
    return set(props) == {"metadata", "spec"} and "containers" in spec.get("properties", {})


def compact(schema: Any, *, in_properties: bool = False) -> Any:
    """``schema`` without descriptions, with pod templates pruned (see the module docstring)."""
    if isinstance(schema, list):
        return [compact(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if in_properties:  # keys are field names here, values are schemas
        return {k: compact(v) for k, v in schema.items()}
    if is_pod_template(schema):
        return dict(PRUNED)
    out = {}
    for key, value in schema.items():
        if key == "description":
            continue
        out[key] = compact(value, in_properties=key in ("properties", "patternProperties"))
    return out


def crd_schema(crd: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The CRD's kind and the compacted ``openAPIV3Schema`` of its ``v1`` version.

    Raises:
        SystemExit: the CRD has no ``v1`` version.
    """
    kind = crd["spec"]["names"]["kind"]
    for version in crd["spec"]["versions"]:
        if version["name"] == API_VERSION:
            schema = compact(version["schema"]["openAPIV3Schema"])
            if "status" in schema.get("properties", {}):
                schema["properties"]["status"] = dict(PRUNED)
            return kind, schema
    raise SystemExit(f"error: {kind} has no {API_VERSION} version in its CRD")


def from_git(repo: Path, ref: str) -> tuple[list[str], str]:
    """The CRD texts at ``ref`` of a kuberay clone, and the commit ``ref`` names."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
        ).stdout

    commit = git("rev-list", "-n", "1", ref).strip()
    return [git("show", f"{commit}:{CRD_DIR}/{name}") for name in CRDS], commit


def main(argv: list[str] | None = None) -> int:
    """Write the compact schemas file; print its size."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--git", type=Path, help="a clone of github.com/ray-project/kuberay")
    p.add_argument("--ref", help="with --git: the tag or commit to read (e.g. v1.7.0)")
    p.add_argument("--crd", type=Path, action="append", help="a CRD YAML file (repeatable)")
    p.add_argument("--version", help="with --crd: the KubeRay version the files come from")
    p.add_argument("--commit", help="with --crd: the kuberay commit the files come from")
    p.add_argument("-o", "--out", type=Path, required=True)
    args = p.parse_args(argv)
    if args.git and args.ref:
        texts, commit = from_git(args.git, args.ref)
        version = args.version or args.ref
    elif args.crd and args.version and args.commit:
        texts, commit, version = [f.read_text() for f in args.crd], args.commit, args.version
    else:
        p.error("give --git DIR --ref REF, or --crd FILE... --version V --commit SHA")
    schemas = dict(crd_schema(yaml.safe_load(t)) for t in texts)
    data = {
        "kuberay_version": version,
        "commit": commit,
        "source": [f"{GITHUB}/blob/{commit}/{CRD_DIR}/{name}" for name in CRDS],
        "license": "Apache-2.0 (KubeRay)",
        "generated_by": "scripts/kuberay-schemas.py (descriptions dropped; pod templates and "
        "status pruned to type: object; pod templates are checked by kubernetes-validate)",
        "api_version": f"ray.io/{API_VERSION}",
        "schemas": schemas,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"{args.out}: {', '.join(schemas)} ({args.out.stat().st_size / 1e3:.0f} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
