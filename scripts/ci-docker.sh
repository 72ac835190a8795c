#!/usr/bin/env bash
# Start or stop a Docker engine private to one run of envhub's tests (no systemd needed).
#
#   eval "$(scripts/ci-docker.sh start)"   # installs docker.io if missing, starts a private
#                                          # dockerd, builds the offline base image and the envhub
#                                          # image; prints `export ...` lines to eval
#   scripts/ci-docker.sh start --engine-only   # the daemon alone, no images
#   scripts/ci-docker.sh stop [RUN_DIR]    # stops the daemon that start started (by its pid),
#                                          # with its containers; RUN_DIR: $ENVHUB_DOCKER_RUN_DIR
#
# Private: each start makes a run directory (mktemp, printed as ENVHUB_DOCKER_RUN_DIR) holding
# the daemon's socket, pidfile, exec root and log, and gives the daemon a default bridge of its
# own (envhub-XXXXXX on a free 10.213.N.0/24; its other networks come from the upper half of that
# /24). It leaves iptables alone (--iptables=false: ports published on 127.0.0.1 go through
# docker-proxy, no rule of another daemon is touched, and with no NAT a container with a network
# reaches this machine but nothing beyond it). So two runs on one machine, or a
# developer's own daemon, never see each other's engine or containers, and `stop` stops only
# what its own `start` started.
#
# Images are kept between runs in a data root, $ENVHUB_DOCKER_DATA (default .ci/docker-data in
# this checkout). One daemon at a time holds it (a lock the daemon keeps open); a run that finds
# it held builds its images in a fresh data root inside its run directory, removed at stop.
#
# Env: ENVHUB_DOCKER_DATA, ENVHUB_DOCKER_BASE_IMAGE (skip the offline base: use this image, e.g.
# python:3.11-slim where a registry is reachable). Needs root. Log: $RUN_DIR/dockerd.log.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
# shellcheck source=.ci/lib.sh
source "$REPO/.ci/lib.sh"  # ci_end_pids
MARK=.envhub-docker-run  # in every run directory: what `stop` agrees to remove

log() { echo "ci-docker: $*" >&2; }

install_dockerd() {
  command -v dockerd >/dev/null && return
  log "installing docker.io"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io >&2 \
    || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io >&2; }
}

# A 10.213.N.0/24 that no route of this machine overlaps (run under the subnet lock).
free_subnet() {
  "$PYTHON" - <<'EOF'
import ipaddress, json, subprocess
routes = json.loads(subprocess.check_output(["ip", "-j", "-4", "route", "show", "table", "all"]))
used = [ipaddress.ip_network(r["dst"], strict=False) for r in routes if r["dst"] != "default"]
for n in range(256):
    net = ipaddress.ip_network(f"10.213.{n}.0/24")
    if not any(net.overlaps(u) for u in used):
        print(n)
        break
else:
    raise SystemExit("ci-docker: no free 10.213.N.0/24 left for a private bridge")
EOF
}

# The bridge $1 with the first half of a free /24; prints N. A lock keeps two starts apart.
make_bridge() {
  local lock="/run/lock/envhub-ci-docker.lock" n
  [[ -d /run/lock ]] || lock="${TMPDIR:-/tmp}/envhub-ci-docker.lock"
  exec 8>"$lock"
  flock -w 60 8 || { log "another start held $lock for 60 s"; return 1; }
  n="$(free_subnet)"
  ip link add name "$1" type bridge
  ip addr add "10.213.$n.1/25" dev "$1"
  ip link set "$1" up
  exec 8>&-
  echo "$n"
}

# Sets DATA, the data root this run uses, holding its lock on fd 9 (not in a subshell: the
# daemon inherits the lock).
take_data_root() {
  local run=$1
  DATA="${ENVHUB_DOCKER_DATA:-$REPO/.ci/docker-data}"
  mkdir -p "$DATA"
  DATA="$(cd "$DATA" && pwd)"
  exec 9>"$DATA.lock"
  if ! flock -n 9; then
    exec 9>&-
    log "$DATA is held by another run's daemon: images go to a fresh data root in $run"
    DATA="$run/data"
  fi
}

# dockerd on its private paths, in a session of its own; waits until it answers.
launch_dockerd() {
  local run=$1 data=$2 bridge=$3 n=$4
  # The last run of this data root may have been killed: its networks (other subnets) and
  # containers are not this run's business, and the network store is rebuilt from the flags.
  rm -f "$data/network/files/local-kv.db"
  env -u ENVHUB_CI_RUN setsid dockerd --data-root "$data" --exec-root "$run/exec" \
    -H "unix://$run/docker.sock" --pidfile "$run/dockerd.pid" --bridge "$bridge" \
    --iptables=false --ip-forward=false --default-address-pool "base=10.213.$n.128/25,size=26" \
    >"$run/dockerd.log" 2>&1 </dev/null &
  echo $! >"$run/launched.pid"
  exec 9>&-  # the daemon keeps the data root's lock; this script lets go of it
  local deadline=$((SECONDS + 60))
  until docker info >/dev/null 2>&1; do
    if ! kill -0 "$(cat "$run/launched.pid")" 2>/dev/null || ((SECONDS > deadline)); then
      log "dockerd did not answer on $DOCKER_HOST; last log lines:"
      tail -20 "$run/dockerd.log" >&2
      return 1
    fi
    sleep 0.2
  done
  docker ps -aq | xargs -r docker rm -f >/dev/null
}

build_images() {
  local t0=$SECONDS base="${ENVHUB_DOCKER_BASE_IMAGE:-}" image
  if [[ -z "$base" ]]; then
    base="$("$REPO/scripts/offline-base-image.sh" --allow-missing | tail -1)"
    log "offline base image $base ($((SECONDS - t0))s)"
  fi
  t0=$SECONDS
  image="$(cd "$REPO" && "$PYTHON" -m envhub.cli docker build --base-image "$base" --quiet | tail -1)"
  log "envhub image $image ($((SECONDS - t0))s)"
  echo "export ENVHUB_DOCKER_BASE_IMAGE=$base"
}

start() {
  install_dockerd
  local run bridge n
  run="$(mktemp -d "${TMPDIR:-/tmp}/envhub-docker.XXXXXX")"
  touch "$run/$MARK"
  # Whatever fails from here on: undo what this start did, and only that.
  trap 'rc=$?; if ((rc)); then log "start failed; removing what it started"; stop_run "'"$run"'"; fi' EXIT
  bridge="envhub-${run##*.}"
  echo "$bridge" >"$run/bridge"
  n="$(make_bridge "$bridge")"
  echo "$n" >"$run/subnet"
  export DOCKER_HOST="unix://$run/docker.sock"
  take_data_root "$run"
  log "starting a private dockerd on $DOCKER_HOST (bridge $bridge, 10.213.$n.0/24, data $DATA)"
  launch_dockerd "$run" "$DATA" "$bridge" "$n"
  log "dockerd up (pid $(cat "$run/launched.pid"))"
  echo "export DOCKER_HOST=$DOCKER_HOST"
  echo "export ENVHUB_DOCKER_RUN_DIR=$run"
  [[ "${1:-}" == --engine-only ]] || build_images
  trap - EXIT
}

# Pids whose command line names the run's exec root: the daemon's containerd and its shims.
pids_naming() {
  local d
  for d in /proc/[0-9]*; do
    [[ "${d#/proc/}" == "$$" || "${d#/proc/}" == "$BASHPID" ]] && continue
    if tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -qF -- "$1/exec/"; then echo "${d#/proc/}"; fi
  done
}

stop_run() {
  local run=${1%/} pid
  export DOCKER_HOST="unix://$run/docker.sock"
  if [[ -S "$run/docker.sock" ]] && docker info >/dev/null 2>&1; then
    docker ps -aq | xargs -r docker rm -f >/dev/null || true  # all this run's: the engine is private
  fi
  pid="$(cat "$run/launched.pid" 2>/dev/null || true)"
  if [[ -n "$pid" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$run/"; then
    log "stopping dockerd (pid $pid)"
    ci_end_pids 20 "$pid"
  fi
  # shellcheck disable=SC2046 # one pid a word
  ci_end_pids 20 $(pids_naming "$run")
  awk -v r="$run/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | xargs -r umount -l
  # Its bridges: the default one, and one per network it made (Docker keeps those after the
  # daemon stops), found by this run's /24.
  if [[ -f "$run/subnet" ]]; then
    ip -o -4 route show root "10.213.$(cat "$run/subnet").0/24" | awk '{print $3}' \
      | xargs -r -n1 ip link del 2>/dev/null || true
  fi
  if [[ -f "$run/bridge" ]]; then ip link del "$(cat "$run/bridge")" 2>/dev/null || true; fi
  rm -rf "$run"
}

stop() {
  local run="${1:-${ENVHUB_DOCKER_RUN_DIR:-}}"
  if [[ -z "$run" ]]; then
    log "stop: which run? Give the run directory that start printed (ENVHUB_DOCKER_RUN_DIR)"
    exit 2
  fi
  if [[ ! -f "$run/$MARK" ]]; then
    log "stop: $run is not a run directory made by ci-docker.sh start; nothing stopped"
    exit 2
  fi
  stop_run "$run"
}

case "${1:-}" in
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  *) echo "usage: $0 start [--engine-only] | stop [RUN_DIR]" >&2; exit 2 ;;
esac
