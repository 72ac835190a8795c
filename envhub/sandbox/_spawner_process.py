"""The spawner: a small root process that starts every run of a server (stdlib only, 3.8+).

:mod:`envhub.sandbox.spawner_client` starts it once per interpreter as ``python -I -S -c <this>
SOCK_FD PARENT_PID`` and talks to it over a unix ``SOCK_SEQPACKET`` socket (one message per
record, each a ``marshal``-ed tuple; the parent is trusted). It is never imported by envhub.

Why: a run started by the server itself pays ``sh`` (cgroup join) and ``setpriv`` (uid
switch) as two more ``exec`` + dynamic-linking rounds, and Popen's own ``user=`` would
``fork()`` the whole server. From here a run is one ``vfork`` + ``exec`` of bubblewrap.

Messages from the parent::

    ("spawn", id, request) + SCM_RIGHTS descriptors  -> ("pid", id, pid) or ("error", id, text)
    ("kill", pid)      SIGKILL the group of ``pid`` if it is still an unreaped child
    ("usage", id)      -> ("usage", id, (cpu_s of this process, cpu_s of its reaped children))

and ``("exit", pid, wait_status)`` for every child once it is reaped; ``("ready", pid)``
first. A run is started with ``posix_spawn`` (vfork + exec: this process is not copied, and
no Python runs in the child): its descriptors moved to the requested numbers (everything
else of ours is close-on-exec), SIGPIPE/SIGXFSZ at their defaults, a new session, and the
run's cgroup and uid taken from this process, which steps into them for the length of the
call (see :func:`_spawn_as`). A failing step is answered with an error (nothing started).
One visible difference from the ``setpriv`` path: glibc's ``posix_spawn`` leaves its two
internal signals (32 and 33, below SIGRTMIN) ignored in the child, so in the run; programs
never use them, and runs are stopped with SIGKILL.

It dies with its server: on EOF of its socket, when its parent pid changes (polled) or on
its parent-death signal, it SIGKILLs every run it started (their process groups, then every
process of their uids) and exits. Bubblewrap's ``--die-with-parent`` points at this process.
"""

import _signal
import _socket
import fcntl
import marshal
import os
import resource
import select
import sys

MAX_MESSAGE = 1 << 20
MAX_FDS = 32
CHILDREN = {}
"""Unreaped children: pid -> the uid of their run."""
DEFAULT_SIGNALS = (_signal.SIGPIPE, _signal.SIGXFSZ)
"""Ignored by Python, so by us; a run starts with them at their default, as Popen does."""
HOME = {}
PR_SET_PDEATHSIG = 1
PARENT = 0
"""The server's pid (argv[2]); when our parent pid differs, the server is gone."""


class Stop(Exception):
    """The server is gone (or this process is broken): stop every run and exit."""


def _prctl():
    """``prctl`` through ``_ctypes`` (``ctypes`` itself costs milliseconds), or None."""
    try:
        import _ctypes

        class _Int(_ctypes._SimpleCData):
            _type_ = "i"

        class _Fn(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = _Int

        return _Fn(_ctypes.dlsym(_ctypes.dlopen(None, 2), "prctl"))
    except Exception:  # noqa: BLE001 (no prctl to call: callers go on without it)
        return None


PRCTL = _prctl()


def _send(sock, message):
    try:
        sock.send(marshal.dumps(message, 4))
    except OSError as e:
        raise Stop() from e


def _received_fds(ancillary):
    fds = []
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(data[i : i + 4], sys.byteorder) for i in range(0, len(data), 4)]
    return fds


def _close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


# ---------------------------------------------------------------------- starting a run


def _spawn(sock, rid, request, fds):
    high = []
    try:
        targets = request["fds"]
        if len(fds) != len(targets):
            raise ValueError(f"{len(fds)} descriptors for {len(targets)} targets")
        # Every descriptor moves above all targets first, so no dup2 overwrites a pending one;
        # those copies are close-on-exec, as is everything else of ours: the run gets targets.
        floor = max(targets) + 1
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor) for fd in fds]
        actions = [(os.POSIX_SPAWN_DUP2, high[i], target) for i, target in enumerate(targets)]
        pid = _spawn_as(request, actions)
    except (OSError, ValueError) as e:
        _send(sock, ("error", rid, str(e)))
        return
    finally:
        _close_all(fds + high)
    CHILDREN[pid] = request["uid"]
    _send(sock, ("pid", rid, pid))


def _spawn_as(request, actions):
    """``posix_spawn`` the run (vfork + exec: nothing of ours is copied) in its cgroup and uid.

    The child is created where this process stands: so we step into the run's cgroups and
    take the run's uid and gid as our *real* ids for the length of the call (the effective
    ones stay root: nothing of the run exists yet to signal us), and ``resetids`` makes the
    child's effective ids our real ones; ``execve`` then sets its saved ids too: all U, like
    ``setpriv --reuid=U --regid=U --clear-groups`` (groups: ours, emptied at start).
    """
    uid, argv = request["uid"], request["argv"]
    joined = []
    try:
        for path, root in request["cgroup"]:
            _write_pid(path, "cgroup join")
            joined.append(root)
        if request["cwd"]:
            os.chdir(request["cwd"])
        try:
            os.setresgid(uid, 0, 0)
            os.setresuid(uid, 0, 0)
            return os.posix_spawn(
                argv[0],
                argv,
                request["env"],
                file_actions=actions,
                setsid=True,
                resetids=True,
                setsigdef=DEFAULT_SIGNALS,
            )
        finally:
            _become_root_again()
    finally:
        os.chdir("/")
        try:
            for root in joined:
                _write_pid(_home(root), "cgroup return")
        except OSError as e:  # never seen; we would sit in a run's cgroup: restart instead
            raise Stop() from e


def _become_root_again():
    try:
        os.setresuid(0, 0, 0)
        os.setresgid(0, 0, 0)
    except OSError as e:  # never seen; but a spawner with a run's ids must not go on
        raise Stop() from e
    if os.getresuid() != (0, 0, 0) or os.getresgid() != (0, 0, 0):
        raise Stop()


def _write_pid(path, what):
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
    except OSError as e:
        raise OSError(e.errno, f"{what} failed ({path}): {e.strerror}") from None


def _own_cgroups():
    """Our cgroup per v1 controller name (and ``""``: the v2 hierarchy), as at start."""
    out = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            for name in names.split(",") if names else [""]:
                out[name] = path
    return out


def _home(root):
    """Our own ``cgroup.procs`` in the hierarchy mounted at ``root``.

    A v1 hierarchy is named after its controller (``/sys/fs/cgroup/memory``); v2 has one.
    """
    path = HOME.get(os.path.basename(root), HOME.get("", "/"))
    return root + path.rstrip("/") + "/cgroup.procs"


def _kill(pid):
    if pid in CHILDREN:  # unreaped: the pid (and its group) cannot have been recycled
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, _signal.SIGKILL)
            except OSError:
                pass


def _usage():
    mine = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime, reaped.ru_utime + reaped.ru_stime


def _handle(sock):
    try:
        data, ancillary, flags, _ = sock.recvmsg(
            MAX_MESSAGE, _socket.CMSG_SPACE(MAX_FDS * 4), _socket.MSG_CMSG_CLOEXEC
        )
    except InterruptedError:
        return
    except OSError as e:
        raise Stop() from e
    fds = _received_fds(ancillary)
    if not data:
        _close_all(fds)
        raise Stop()
    message = marshal.loads(data)
    if message[0] == "spawn":
        if flags & (_socket.MSG_CTRUNC | _socket.MSG_TRUNC):
            _close_all(fds)
            _send(sock, ("error", message[1], "request or descriptors truncated"))
            return
        _spawn(sock, message[1], message[2], fds)
        return
    _close_all(fds)
    if message[0] == "kill":
        _kill(message[1])
    elif message[0] == "usage":
        _send(sock, ("usage", message[1], _usage()))


def _reap(sock):
    while CHILDREN:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if CHILDREN.pop(pid, None) is not None:
            _send(sock, ("exit", pid, status))


# ---------------------------------------------------------------------- life and death


def _on_parent_death_signal(signum, frame):
    if os.getppid() != PARENT:  # not just the server thread that started us exiting
        raise Stop()


def _kill_everything():
    """SIGKILL every run: its group, then (as its uid) every process of that uid."""
    uids = set(CHILDREN.values())
    for pid in list(CHILDREN):
        _kill(pid)
    for uid in uids:
        try:
            pid = os.fork()
        except OSError:
            continue
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, _signal.SIGKILL)  # every process of this uid but the caller
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


def _noop(signum, frame):
    pass


def _on_sigterm(signum, frame):
    raise Stop()


def _serve(sock, wake_r):
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    while os.getppid() == PARENT:
        ready = poller.poll(500)
        try:
            while os.read(wake_r, 512):
                pass
        except BlockingIOError:
            pass
        _reap(sock)
        if any(fd == sock.fileno() for fd, _ in ready):
            _handle(sock)


def main():
    """Serve the socket given in argv[1] until the parent (pid argv[2]) goes away."""
    global PARENT
    sock = _socket.socket(fileno=int(sys.argv[1]))
    PARENT = int(sys.argv[2])
    for name in os.listdir("/proc/self/fd"):  # a run inherits only what it is given
        if int(name) > 2:
            try:
                os.set_inheritable(int(name), False)
            except OSError:
                pass  # the listing's own descriptor, closed by now
    os.setgroups([])  # runs inherit our (empty) supplementary groups
    HOME.update(_own_cgroups())
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    _signal.set_wakeup_fd(wake_w)
    _signal.signal(_signal.SIGCHLD, _noop)
    _signal.signal(_signal.SIGUSR1, _on_parent_death_signal)
    _signal.signal(_signal.SIGTERM, _on_sigterm)
    if PRCTL is not None:
        PRCTL(PR_SET_PDEATHSIG, _signal.SIGUSR1, 0, 0, 0)
    try:
        _send(sock, ("ready", os.getpid()))
        _serve(sock, wake_r)
    except Stop:
        pass
    finally:
        _kill_everything()


if __name__ == "__main__":
    main()
