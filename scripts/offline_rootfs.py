"""Build a minimal root file system holding this Python and envhub's dependencies.

Used by ``scripts/offline-base-image.sh`` to make a Docker base image on a machine that cannot
reach any image registry. Everything comes from local files:

- the interpreter that runs this script (its binary, ``libpython``, its standard library
  without tests, IDLE and tkinter), relocated to ``/usr/local``;
- the installed distributions that envhub's dependencies (core plus the chosen extras) resolve
  to, copied file by file from their ``RECORD`` into ``/usr/local/lib/pythonX.Y/site-packages``,
  plus ``pip`` so a Dockerfile can ``pip install --no-index`` the envhub wheel on top;
- every shared library those binaries need (found with ``ldd``), ``libgcc_s.so.1`` (glibc
  loads it at thread exit and ``ldd`` does not show it), and ``/bin/sh`` for ``RUN`` lines.

Usage: ``python scripts/offline_rootfs.py ROOTFS --pyproject pyproject.toml --extras server,math``.
Requires: run as root for the final check (``chroot``); ``ldd`` and ``ldconfig`` on the host.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PREFIX = "/usr/local"
STDLIB_SKIP = {"site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip"}
ALWAYS = ["pip"]
"""Distributions copied whatever the extras (pip installs the envhub wheel in the image)."""
TOOLS = ["bwrap", "bash"]
"""Host programs copied to the same path: bubblewrap isolates the code sandbox in the image;
Ray starts its worker processes through ``bash`` (the trainer image, envhub/trainer/Dockerfile)."""


def project_requirements(pyproject: Path, extras: list[str]) -> list[Requirement]:
    """Core dependencies of the project plus those of ``extras`` (self-references expanded)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    name = canonicalize_name(project["name"])
    optional = project.get("optional-dependencies", {})
    reqs, seen, todo = [], set(), list(extras)
    for line in project.get("dependencies", []):
        reqs.append(Requirement(line))
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        if extra not in optional:
            raise SystemExit(f"error: extra {extra!r} is not defined in {pyproject}")
        for line in optional[extra]:
            req = Requirement(line)
            if canonicalize_name(req.name) == name:
                todo.extend(req.extras)
            else:
                reqs.append(req)
    return reqs


def resolve(reqs: list[Requirement]) -> tuple[dict[str, md.Distribution], list[str]]:
    """Installed distributions that ``reqs`` need, transitively; and the names not installed."""
    found: dict[str, md.Distribution] = {}
    missing: list[str] = []
    done: set[tuple[str, str]] = set()
    todo: list[tuple[Requirement, str]] = [(r, "") for r in reqs]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        key = canonicalize_name(req.name)
        for wanted in [""] + sorted(req.extras):
            if (key, wanted) in done:
                continue
            done.add((key, wanted))
            try:
                dist = md.distribution(req.name)
            except md.PackageNotFoundError:
                missing.append(str(req))
                break
            found[key] = dist
            todo.extend((Requirement(r), wanted) for r in dist.requires or [])
    return found, sorted(set(missing))


def copy_file(src: Path, dst: Path) -> None:
    """Copy one file (or symlink) keeping its mode; create parent folders."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink():
        if dst.is_symlink() or dst.exists():
            dst.unlink()
        os.symlink(os.readlink(src), dst)
    else:
        shutil.copy2(src, dst)


def copy_dists(dists: dict[str, md.Distribution], site: Path) -> int:
    """Copy every recorded file of ``dists`` that lives in a site-packages folder to ``site``."""
    roots = [Path(p).resolve() for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    count = 0
    for dist in dists.values():
        for rel in dist.files or []:
            src = Path(dist.locate_file(rel)).resolve()
            root = next((r for r in roots if src.is_relative_to(r)), None)
            if root is None or not src.is_file():
                continue  # console scripts (host shebangs), data outside site-packages
            copy_file(src, site / src.relative_to(root))
            count += 1
    return count


def copy_interpreter(root: Path) -> Path:
    """Copy the running interpreter, libpython and the standard library under ``PREFIX``."""
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    prefix = root / PREFIX.lstrip("/")
    binary = Path(sys.executable).resolve()
    copy_file(binary, prefix / "bin" / f"python{ver}")
    for alias in ("python3", "python"):
        link = prefix / "bin" / alias
        if not link.exists():
            os.symlink(f"python{ver}", link)
    libdir = Path(sysconfig.get_config_var("LIBDIR") or "")
    for lib in libdir.glob(f"libpython{ver}*.so*"):
        copy_file(lib, prefix / "lib" / lib.name)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    dest = prefix / "lib" / f"python{ver}"

    def skip(folder: str, names: list[str]) -> set[str]:
        top = Path(folder) == stdlib
        return {n for n in names if (top and n in STDLIB_SKIP) or n.startswith("config-")}

    shutil.copytree(stdlib, dest, symlinks=True, ignore=skip, dirs_exist_ok=True)
    site = dest / "site-packages"
    site.mkdir(exist_ok=True)
    return site


def needed_libs(elf_files: list[Path]) -> tuple[set[str], set[str]]:
    """Shared libraries (absolute host paths) the ELF files load, and the names ldd missed."""
    found, missing = set(), set()
    for chunk in range(0, len(elf_files), 200):
        args = [str(p) for p in elf_files[chunk : chunk + 200]]
        out = subprocess.run(["ldd", *args], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if m := re.search(r"=>\s+(/\S+)", line):
                found.add(m.group(1))
            elif m := re.match(r"\s+(/\S+)\s+\(0x", line):
                found.add(m.group(1))  # the dynamic loader itself
            elif "not found" in line:
                missing.add(line.split()[0])
    return found, missing


def copy_system_lib(path: str, root: Path, skip_under: list[Path]) -> None:
    """Copy a host library to the same path in ``root`` (real file plus the name asked for)."""
    real = Path(os.path.realpath(path))
    if any(real.is_relative_to(p) for p in skip_under):
        return  # already copied with the interpreter or a distribution
    copy_file(real, root / real.relative_to("/"))
    asked = Path(os.path.realpath(os.path.dirname(path))) / os.path.basename(path)
    if asked != real and not (root / asked.relative_to("/")).exists():
        (root / asked.relative_to("/")).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(
            real.name if asked.parent == real.parent else str(real), root / asked.relative_to("/")
        )


def skeleton(root: Path) -> None:
    """Folders, merged-/usr links, users and the loader configuration of the file system."""
    for d in (
        "usr/bin",
        "usr/lib",
        "usr/lib64",
        "usr/sbin",
        "etc",
        "tmp",
        "proc",
        "sys",
        "dev",
        "root",
        "var/tmp",
        "run",
    ):
        (root / d).mkdir(parents=True, exist_ok=True)
    for link in ("bin", "lib", "lib64", "sbin"):
        if not (root / link).exists():
            os.symlink(f"usr/{link}", root / link)
    os.chmod(root / "tmp", 0o1777)
    os.chmod(root / "var/tmp", 0o1777)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (root / "etc/group").write_text("root:x:0:\n")
    (root / "etc/ld.so.conf").write_text(f"{PREFIX}/lib\n")
    (root / "etc/os-release").write_text('NAME="envhub offline base"\nID=envhub-offline\n')


def host_tools() -> list[Path]:
    """The :data:`TOOLS` this machine has; a warning names each one it lacks."""
    found = []
    for tool in TOOLS:
        path = shutil.which(tool)
        if path is None:
            print(
                f"warning: no {tool} here: the image will lack it (bwrap: the code sandbox "
                "refuses to run; bash: Ray cannot start workers); install it, rerun with --force",
                file=sys.stderr,
            )
        else:
            found.append(Path(path))
    return found


def content_key(dists: dict[str, md.Distribution], extras: list[str]) -> str:
    """Hash of what the root would hold: an unchanged key means the image is up to date."""
    parts = [sys.version, str(Path(sys.executable).resolve()), ",".join(sorted(extras))]
    parts += sorted(f"{name}=={d.version}" for name, d in dists.items())
    parts.append(hashlib.sha256(Path(__file__).read_bytes()).hexdigest())
    parts += [f"{tool}={shutil.which(tool)}" for tool in TOOLS]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _parse_args() -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rootfs", type=Path)
    ap.add_argument("--pyproject", type=Path, required=True)
    ap.add_argument("--extras", default="server", help="comma-separated envhub extras")
    ap.add_argument(
        "--allow-missing",
        action="store_true",
        help="leave out extras whose dependencies are not installed here",
    )
    ap.add_argument("--extras-out", type=Path, help="write the extras fully copied here")
    ap.add_argument(
        "--key-only",
        action="store_true",
        help="print a key of what would be copied (python, distributions, extras) and stop",
    )
    return ap.parse_args()


def _resolve_extras(args: argparse.Namespace) -> tuple[list[str], dict[str, md.Distribution]]:
    """The extras to copy and their installed distributions; exits naming what is missing."""
    extras = [e for e in args.extras.split(",") if e]
    complete = [e for e in extras if not resolve(project_requirements(args.pyproject, [e]))[1]]
    if set(complete) != set(extras) and args.allow_missing:
        print(
            f"warning: leaving out extras {sorted(set(extras) - set(complete))}: their "
            "dependencies are not installed here",
            file=sys.stderr,
        )
        extras = complete
    reqs = project_requirements(args.pyproject, extras) + [Requirement(n) for n in ALWAYS]
    dists, missing = resolve(reqs)
    if missing:
        raise SystemExit(
            "error: not installed on this machine: "
            + ", ".join(missing)
            + f"\nfix: pip install -e '.[{','.join(extras)}]' first (or pass --allow-missing)"
        )
    return extras, dists


def _copy_system_libs(root: Path, site: Path, tools: list[Path]) -> None:
    """Copy the shared libraries the interpreter, the extensions and the tools need."""
    elf = [
        Path(sys.executable).resolve(),
        *site.rglob("*.so*"),
        *root.joinpath(PREFIX.lstrip("/"), "lib").glob("**/lib-dynload/*.so"),
        Path("/bin/sh"),
        *tools,
    ]
    elf = [p for p in elf if p.is_file()]
    libs, unresolved = needed_libs(elf)
    libs |= {str(p) for p in Path("/").glob("lib/*/libgcc_s.so.1")}
    host_prefix = Path(sys.base_prefix).resolve()
    for lib in sorted(libs):
        copy_system_lib(lib, root, [host_prefix, root.resolve()])
    copy_system_lib("/bin/sh", root, [])
    for tool in tools:
        copy_system_lib(str(tool), root, [])
    sh = Path(os.path.realpath("/bin/sh"))
    if sh.name != "sh":  # /bin/sh -> dash: keep the name the Dockerfile's RUN uses
        target = root / "usr/bin/sh"
        if not target.exists():
            os.symlink(sh.name, target)
    subprocess.run(["ldconfig", "-r", str(root)], check=True)
    if unresolved:
        print(
            "warning: libraries not found by ldd:", ", ".join(sorted(unresolved)), file=sys.stderr
        )
    print(f"copied {len(libs)} shared libraries")


def main() -> None:
    """Build the root file system; print a summary line per step."""
    args = _parse_args()
    root: Path = args.rootfs
    extras, dists = _resolve_extras(args)
    if args.key_only:
        print(content_key(dists, extras))
        return
    if args.extras_out:
        args.extras_out.write_text(",".join(extras))
    skeleton(root)
    site = copy_interpreter(root)
    tools = host_tools()
    n = copy_dists(dists, site)
    print(f"copied python {sys.version.split()[0]}, {len(dists)} distributions ({n} files)")
    _copy_system_libs(root, site, tools)


if __name__ == "__main__":
    main()
