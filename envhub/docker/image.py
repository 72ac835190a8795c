"""Building the envhub server image (used by :mod:`.containers`).

The image is the ``Dockerfile`` beside this module on top of a base image given as a build
argument: an official ``python:3.11-slim`` where a registry is reachable (pip then fetches envhub's
dependencies), or the image ``scripts/offline-base-image.sh`` makes from local files (it already
holds the dependencies; pip installs with ``--no-index``). Either way envhub itself comes from a
wheel built here from the working tree, so the container runs exactly the code of this checkout.

An image is tagged ``envhub:<key>``, where the key hashes the project source and the extras:
:func:`image_for` finds the image of the current code or builds it, so a container never runs a
stale copy of an environment.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from envhub.errors import EnvhubError
from envhub.install import DISTRIBUTION, checkout, extras, install_command

DEFAULT_BASE_IMAGE = "python:3.11-slim"
"""The documented base for users with a registry."""
IMAGE_REPO = "envhub"
HEAVY_EXTRAS = frozenset({"trainer", "vllm", "docker", "dev", "all", "data"})
"""Extras never installed into the server image by default (not needed to serve an env;
``vllm`` pulls in the trainer's torch stack)."""
SOURCE_DIRS = ("envhub",)
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE", "registry.yaml", "MANIFEST.in")
KEEP_IMAGES = 2
"""Images made for older source kept after a build (the newest; older ones are removed).
Images of the current source are always kept, whatever their extras."""
LABEL_IMAGE = "envhub.image"
LABEL_KEY = "envhub.source-key"
LABEL_EXTRAS = "envhub.extras"
LABEL_BASE = "envhub.base-image"
LABEL_OFFLINE_BASE = "envhub.offline-base"
LABEL_BASE_EXTRAS = "envhub.base-extras"


class ImageBuildError(EnvhubError):
    """The envhub image could not be built; the message holds the builder's last lines."""


def default_extras() -> list[str]:
    """``server`` plus every environment extra of envhub (not the trainer's heavy stack)."""
    return sorted((set(extras()) - HEAVY_EXTRAS) | {"server"})


def _source_files(root: Path) -> list[Path]:
    """Project files that go into the wheel, relative to ``root`` (no caches, no hidden)."""
    out: list[Path] = [Path(f) for f in SOURCE_FILES if (root / f).is_file()]
    for top in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(root / top):
            dirnames[:] = sorted(
                d for d in dirnames
                if not d.startswith(".") and d != "__pycache__" and not d.endswith(".egg-info")
            )  # fmt: skip
            for name in sorted(filenames):
                if not name.startswith(".") and not name.endswith((".pyc", ".pyo", ".log")):
                    out.append(Path(dirpath, name).relative_to(root))
    return out


def source_key(extras: list[str]) -> str:
    """Hash of the project source and the extras: the tag of the image holding them."""
    h = hashlib.sha256(",".join(sorted(extras)).encode())
    root = checkout()
    if root is None:
        from importlib.metadata import version

        h.update(f"{DISTRIBUTION}=={version(DISTRIBUTION)}".encode())
        return h.hexdigest()[:12]
    for rel in _source_files(root):
        h.update(str(rel).encode() + b"\0")
        h.update(hashlib.sha256((root / rel).read_bytes()).digest())
    return h.hexdigest()[:12]


def _build_wheel(root: Path, out: Path) -> None:
    """Build envhub's wheel from a copy of the checkout (the shared tree stays untouched)."""
    with tempfile.TemporaryDirectory(prefix="envhub-src-") as tmp:
        for rel in _source_files(root):
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, Path(tmp) / rel)
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
               "--disable-pip-version-check", "-q", "--wheel-dir", str(out), tmp]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise ImageBuildError(
                f"building envhub's wheel failed (needs setuptools and wheel installed: "
                f"`pip install setuptools wheel`):\n{res.stderr[-2000:]}"
            )


def _dockerfile() -> Path:
    """The server image's Dockerfile, beside this module (package data in an installed wheel)."""
    path = Path(__file__).with_name("Dockerfile")
    if not path.is_file():
        raise ImageBuildError(
            f"{path} not found; reinstall envhub (`{install_command(['docker'])}`) "
            "or build from a checkout"
        )
    return path


def _ensure_base(client: Any, base_image: str) -> dict[str, str]:
    """Labels of the base image, pulling it if absent; a clear error where it cannot be had."""
    import docker.errors

    try:
        return client.images.get(base_image).labels or {}
    except docker.errors.ImageNotFound:
        pass
    try:
        return client.images.pull(base_image).labels or {}
    except docker.errors.APIError as e:
        raise ImageBuildError(
            f"base image {base_image!r} is not on this engine and cannot be pulled ({e}). "
            "Without a registry, make one from local files: `scripts/offline-base-image.sh`, "
            "then `envhub docker build --base-image <the name it prints>`"
        ) from e


def build_image(
    client: Any,
    *,
    base_image: str = DEFAULT_BASE_IMAGE,
    extras: list[str] | None = None,
    tag: str | None = None,
    log: Any = None,
) -> str:
    """Build the envhub image and return its tag (``envhub:<key>``, also ``envhub:latest``).

    Args:
        client: A ``docker.DockerClient``.
        base_image: Any image with Python >= 3.10 and pip; an offline base (label
            ``envhub.offline-base=1``) must already hold the dependencies.
        extras: envhub extras to install; :func:`default_extras` when None.
        tag: Tag to give besides ``envhub:latest``; ``envhub:<source key>`` when None.
        log: Callable taking one line of builder output (None: quiet).
    """
    extras = sorted(set(extras or default_extras()) | {"server"})
    base_labels = _ensure_base(client, base_image)
    offline = base_labels.get(LABEL_OFFLINE_BASE) == "1"
    if offline and base_labels.get(LABEL_BASE_EXTRAS) is not None:
        extras = _offline_extras(extras, base_labels[LABEL_BASE_EXTRAS], base_image, log)
    key = source_key(extras)
    tag = tag or f"{IMAGE_REPO}:{key}"
    with tempfile.TemporaryDirectory(prefix="envhub-build-") as ctx:
        spec = _build_context(Path(ctx))
        buildargs = {
            "BASE_IMAGE": base_image,
            "EXTRAS": ",".join(extras),
            "ENVHUB_SPEC": spec,
            "PIP_ARGS": "--no-index" if offline else "",
        }
        labels = {LABEL_IMAGE: "1", LABEL_KEY: key, LABEL_EXTRAS: ",".join(extras),
                  LABEL_BASE: base_image}  # fmt: skip
        build = {"path": ctx, "tag": tag, "buildargs": buildargs, "labels": labels}
        _run_build(client, build, base_image, offline, log)
    client.images.get(tag).tag(IMAGE_REPO, "latest")
    prune_images(client, keep=KEEP_IMAGES, stale_only=True)
    return tag


def _offline_extras(extras: list[str], base_extras: str, base_image: str, log: Any) -> list[str]:
    """The extras an offline base can serve (it holds the dependencies of ``base_extras``)."""
    have = set(base_extras.split(","))
    if log and set(extras) - have:
        log(
            f"warning: offline base {base_image} lacks the dependencies of extras "
            f"{sorted(set(extras) - have)}; building without them"
        )
    return sorted(set(extras) & have | {"server"})


def _build_context(ctx: Path) -> str:
    """Fill the build context (wheels/, Dockerfile); returns the pip spec of envhub."""
    wheels = ctx / "wheels"
    wheels.mkdir()
    root = checkout()
    if root is not None:
        _build_wheel(root, wheels)
        [wheel] = wheels.glob("*.whl")  # by its path: never a same-named release from the index
        spec = f"/tmp/envhub-wheels/{wheel.name}"
    else:  # installed from an index: the image installs the same version from there
        from importlib.metadata import version

        spec = f"{DISTRIBUTION}=={version(DISTRIBUTION)}"
    (wheels / ".keep").touch()
    shutil.copy2(_dockerfile(), ctx / "Dockerfile")
    return spec


def _run_build(
    client: Any, build: dict[str, Any], base_image: str, offline: bool, log: Any
) -> None:
    """Run ``docker build`` with ``build`` (path, tag, buildargs, labels), streaming ``log``."""
    import docker.errors

    tag = build["tag"]
    lines: list[str] = []
    try:
        stream = client.api.build(
            **build, rm=True, forcerm=True, decode=True,
            network_mode="none" if offline else None,
        )  # fmt: skip
        for chunk in stream:
            if "error" in chunk:
                lines.append(chunk["error"])
                raise ImageBuildError(_build_failure(tag, base_image, offline, lines))
            text = chunk.get("stream") or ""
            lines.append(text)
            if log and text.strip():
                log(text.rstrip())
    except docker.errors.APIError as e:
        raise ImageBuildError(f"docker build of {tag} failed: {e}") from e


def _build_failure(tag: str, base_image: str, offline: bool, lines: list[str]) -> str:
    text = "".join(lines[-30:])
    hint = ""
    if offline and "No matching distribution" in text:
        hint = (
            f"\nThe offline base {base_image} lacks a dependency added since it was made: "
            "install the project here (`pip install -e '.[server,...]'`), then rerun "
            "`scripts/offline-base-image.sh` and build again."
        )
    return f"docker build of {tag} on {base_image} failed:\n{text}{hint}"


def prune_images(client: Any, keep: int = 0, *, stale_only: bool = False) -> list[str]:
    """Remove envhub images but the ``keep`` newest (and those containers still use).

    With ``stale_only``, only images made for other source than the current checkout's are
    candidates (an image whose ``envhub.source-key`` label differs from :func:`source_key` of
    its own extras): images of the current code, whatever their extras, are never removed,
    since another server or test may be about to start a container from one.
    """
    import docker.errors

    images = client.images.list(filters={"label": f"{LABEL_IMAGE}=1"})
    if stale_only:
        current: dict[str, str] = {}
        stale = []
        for im in images:
            extras = im.labels.get(LABEL_EXTRAS, "")
            if extras not in current:
                current[extras] = source_key(extras.split(",") if extras else [])
            if im.labels.get(LABEL_KEY) != current[extras]:
                stale.append(im)
        images = stale
    images.sort(key=lambda im: im.attrs.get("Created", ""), reverse=True)
    removed = []
    for im in images[keep:]:
        for tag in im.tags or [im.id]:
            try:
                client.images.remove(tag, noprune=False)
                removed.append(tag)
            except docker.errors.APIError:
                pass  # in use by a container, or already gone
    return removed


def image_for(client: Any, extras: list[str], *, log: Any = None) -> str:
    """The image that serves ``extras`` with the current code, building it if needed.

    ``ENVHUB_DOCKER_IMAGE`` pins an image (no staleness check). Otherwise the image tagged with
    the current source key is used, or built on ``ENVHUB_DOCKER_BASE_IMAGE``, else on the base
    of the last envhub image built here, else on :data:`DEFAULT_BASE_IMAGE`.
    """
    import docker.errors

    want = sorted(set(default_extras()) | set(extras) | {"server"})
    pinned = os.environ.get("ENVHUB_DOCKER_IMAGE")
    if pinned:
        try:
            have = client.images.get(pinned).labels.get(LABEL_EXTRAS)
        except docker.errors.ImageNotFound as e:
            raise ImageBuildError(f"ENVHUB_DOCKER_IMAGE={pinned} is not on this engine") from e
        if have is not None and not set(extras) <= set(have.split(",")):
            raise ImageBuildError(
                f"image {pinned} lacks extras {sorted(set(extras) - set(have.split(',')))}; "
                f"rebuild with `envhub docker build --extras {','.join(want)}`"
            )
        return pinned
    tag = f"{IMAGE_REPO}:{source_key(want)}"
    try:
        _check_extras(client.images.get(tag), tag, extras)
        return tag
    except docker.errors.ImageNotFound:
        pass
    base = os.environ.get("ENVHUB_DOCKER_BASE_IMAGE")
    if not base:
        try:
            base = client.images.get(f"{IMAGE_REPO}:latest").labels.get(LABEL_BASE)
        except docker.errors.ImageNotFound:
            base = None
    start = time.monotonic()
    print(
        f"envhub: building {tag} for the current code on {base or DEFAULT_BASE_IMAGE} "
        "(once per code change; ENVHUB_DOCKER_IMAGE pins an image)",
        file=sys.stderr,
        flush=True,
    )
    built = build_image(client, base_image=base or DEFAULT_BASE_IMAGE, extras=want, tag=tag,
                        log=log)  # fmt: skip
    if log:
        log(f"built {built} in {time.monotonic() - start:.1f}s")
    _check_extras(client.images.get(built), built, extras)
    return built


def _check_extras(image: Any, tag: str, extras: list[str]) -> None:
    have = set((image.labels or {}).get(LABEL_EXTRAS, "").split(","))
    if not set(extras) <= have:
        raise ImageBuildError(
            f"image {tag} lacks the envhub extras {sorted(set(extras) - have)} this environment "
            "needs (its base image has no dependencies for them); rebuild the base with them "
            "installed, or build on python:3.11-slim where a registry is reachable"
        )
