#!/usr/bin/env bash
# Start or stop a private Docker engine for envhub's tests (no systemd needed).
#
#   eval "$(scripts/ci-docker.sh start)"   # installs docker.io if missing, starts dockerd,
#                                          # builds the offline base image and the envhub image;
#                                          # prints `export DOCKER_HOST=...` lines to eval
#   scripts/ci-docker.sh stop              # removes envhub's containers, stops dockerd (by pid)
#
# Env: ENVHUB_DOCKER_DIR (state, default /var/lib/envhub-docker), ENVHUB_DOCKER_SOCK (default
# /run/envhub-docker.sock), ENVHUB_DOCKER_BASE_IMAGE (skip the offline base: use this image,
# e.g. python:3.11-slim where a registry is reachable). Needs root. Logs: $STATE/dockerd.log.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${ENVHUB_DOCKER_DIR:-/var/lib/envhub-docker}"
SOCK="${ENVHUB_DOCKER_SOCK:-/run/envhub-docker.sock}"
EXEC_ROOT="/run/envhub-docker"
PIDFILE="/run/envhub-dockerd.pid"
PYTHON="${PYTHON:-python3}"
export DOCKER_HOST="unix://$SOCK"

log() { echo "ci-docker: $*" >&2; }

start() {
  if ! command -v dockerd >/dev/null; then
    log "installing docker.io"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io >&2 \
      || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io >&2; }
  fi
  mkdir -p "$STATE" "$EXEC_ROOT"
  if [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && docker info >/dev/null 2>&1; then
    log "dockerd already running (pid $(cat "$PIDFILE"))"
  else
    log "starting dockerd on $SOCK"
    # setsid: the daemon outlives this script; its pid is kept for `stop`.
    setsid dockerd --data-root "$STATE/data" --exec-root "$EXEC_ROOT" -H "unix://$SOCK" \
      --pidfile "$PIDFILE" >"$STATE/dockerd.log" 2>&1 < /dev/null &
    local deadline=$((SECONDS + 60))
    until docker info >/dev/null 2>&1; do
      if (( SECONDS > deadline )); then
        log "dockerd did not answer within 60s; last log lines:"; tail -20 "$STATE/dockerd.log" >&2; exit 1
      fi
      sleep 0.2
    done
    log "dockerd up (pid $(cat "$PIDFILE"))"
    # Started here: if building the images fails, stop it again rather than leave it running.
    trap 'log "image build failed; stopping dockerd"; stop' ERR
  fi
  local t0=$SECONDS base="${ENVHUB_DOCKER_BASE_IMAGE:-}"
  if [[ -z "$base" ]]; then
    base="$("$REPO/scripts/offline-base-image.sh" --allow-missing | tail -1)"
    log "offline base image $base ($((SECONDS - t0))s)"
  fi
  t0=$SECONDS
  local image
  image="$(cd "$REPO" && "$PYTHON" -m envhub.cli docker build --base-image "$base" --quiet | tail -1)"
  log "envhub image $image ($((SECONDS - t0))s)"
  trap - ERR
  echo "export DOCKER_HOST=unix://$SOCK"
  echo "export ENVHUB_DOCKER_BASE_IMAGE=$base"
}

stop() {
  if docker info >/dev/null 2>&1; then
    (cd "$REPO" && "$PYTHON" -m envhub.cli docker clean --all >&2) || true
  fi
  if [[ -f "$PIDFILE" ]]; then
    local pid; pid="$(cat "$PIDFILE")"
    if kill -0 "$pid" 2>/dev/null; then
      log "stopping dockerd (pid $pid)"
      kill -TERM "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$PIDFILE"
  fi
  rm -f "$SOCK"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
