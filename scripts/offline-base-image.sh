#!/usr/bin/env bash
# Make a Docker base image for envhub from local files, for machines with no image registry.
#
# It copies this machine's Python (the interpreter that runs $PYTHON: by default python3, e.g.
# /root/.pyenv/versions/3.11.7 or Debian's /usr/bin/python3.11), its standard library, the
# shared libraries they load, and the installed distributions of envhub's dependencies (core
# plus the extras below) into a root directory, then `tar | docker import`s it. The last line
# printed is the image name to pass as `envhub docker build --base-image IMAGE`.
#
# Usage: scripts/offline-base-image.sh [--extras server,math,...] [--tag NAME:TAG] [--allow-missing]
#        [--force]   (without it, an image whose content key matches is reused)
# Env:   PYTHON (default python3), DOCKER_HOST (the engine to import into).
# Needs: root (chroot check), docker CLI, ldd, ldconfig; the dependencies installed here
#        (`pip install -e '.[server,math,code,search,games]'`).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
TAG="envhub-base:offline"
EXTRAS=""
ALLOW=()
FORCE=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --extras) EXTRAS="$2"; shift 2 ;;
    --tag) TAG="$2"; shift 2 ;;
    --allow-missing) ALLOW=(--allow-missing); shift ;;
    --force) FORCE=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$EXTRAS" ]]; then
  # The same default as `envhub docker build`: server + every environment extra.
  EXTRAS="$(cd "$REPO" && "$PYTHON" -c 'from envhub.docker import default_extras; print(",".join(default_extras()))')"
fi
command -v docker >/dev/null || { echo "error: docker CLI not found (apt-get install -y docker.io)" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "error: no Docker engine at ${DOCKER_HOST:-unix:///var/run/docker.sock}; start dockerd (scripts/ci-docker.sh start)" >&2; exit 1; }

# Up to date already? (same python, same installed distributions, same extras, same script)
KEY="$("$PYTHON" "$REPO/scripts/offline_rootfs.py" /nonexistent --pyproject "$REPO/pyproject.toml" \
  --extras "$EXTRAS" "${ALLOW[@]}" --key-only)"
if [[ -z "$FORCE" ]] && [[ "$(docker image inspect -f '{{index .Config.Labels "envhub.base-key"}}' "$TAG" 2>/dev/null)" == "$KEY" ]]; then
  echo "$TAG is up to date (key $KEY; --force rebuilds it)" >&2
  echo "$TAG"
  exit 0
fi

WORK="$(mktemp -d /tmp/envhub-rootfs.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
ROOT="$WORK/rootfs"
mkdir -p "$ROOT"
START=$("$PYTHON" -c "import time; print(time.time())")
"$PYTHON" "$REPO/scripts/offline_rootfs.py" "$ROOT" --pyproject "$REPO/pyproject.toml" \
  --extras "$EXTRAS" --extras-out "$WORK/extras" "${ALLOW[@]}" >&2
EXTRAS="$(cat "$WORK/extras")"

# The copied interpreter must start and import the dependencies inside the new root.
CHECK='import pydantic, yaml, httpx, pip, fastapi, uvicorn, ssl, sqlite3, ctypes, json; print("ok")'
if [[ $(id -u) -eq 0 ]]; then
  chroot "$ROOT" /usr/local/bin/python3 -c "$CHECK" >/dev/null \
    || { echo "error: the copied python does not start in the new root (see above)" >&2; exit 1; }
fi

OLD_ID="$(docker image inspect -f '{{.Id}}' "$TAG" 2>/dev/null || true)"
PYVER="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
tar -C "$ROOT" --numeric-owner -cf - . | docker import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 PYTHONUTF8=1' \
  --change "LABEL envhub.offline-base=1 envhub.base-extras=$EXTRAS envhub.python=$PYVER envhub.base-key=$KEY" \
  --change 'CMD ["python3"]' \
  - "$TAG" >/dev/null
if [[ -n "$OLD_ID" ]]; then docker image rm "$OLD_ID" >/dev/null 2>&1 || true; fi  # the replaced one
SIZE=$(du -sh "$ROOT" | cut -f1)
printf 'built %s (python %s, extras %s, %s) in %.1fs\n' "$TAG" "$PYVER" "$EXTRAS" "$SIZE" \
  "$("$PYTHON" -c "import time; print(time.time() - $START)")" >&2
echo "$TAG"
