"""The trusted program that runs first inside every sandbox (stdlib only, Python >= 3.8).

The parent (:mod:`envhub.sandbox.parent`) compiles it once with the sandbox's interpreter (which
may be a different Python from the server's), keeps the code object in a sealed memfd and
starts each run as ``python -I -S -c <load that code> <config>``. It is never imported by
envhub. Startup matters (it is paid on every run), so it imports only C modules: no ``json``
(messages are Python literals, parsed through ``_ast``), no ``socket``, ``signal`` or ``ctypes``
wrappers.

Two modes:

``exec``
    Write the job's files into the work dir, apply the resource limits to itself, close every
    descriptor but 0-2 and ``exec`` the requested program. The parent judges its output.

``tests``
    Run a function's tests. Processes, from the most to the least trusted::

        runner (this process: made non-dumpable, holds the verdict descriptor)
          └─ zygote  (forked *before* the job is read: its memory holds no tests, no job)
               └─ worker (forked by the zygote on request: limits applied, runs the untrusted
                          code and answers "call f(*args)" requests with encoded plain data)

    The tests themselves run here, in the runner: ``candidate(...)`` is a proxy that sends the
    arguments to the worker and decodes the answer into plain Python values (no object of the
    untrusted program ever reaches this process), so an ``__eq__`` that is always true, a
    patched ``builtins`` or an early ``exit(0)`` live and die in the worker. The verdict goes to
    the parent over a descriptor the worker never holds; every message is prefixed with a
    nonce copied by ``sendfile`` straight from a descriptor, so it never enters this process's
    memory either.

Signals. The runner has no signal handler at all and ignores every asynchronous signal
(``SIGINT``, ``SIGTERM``, ``SIGALRM``, ``SIGHUP``, ``SIGUSR1``...). Under bubblewrap it is pid 1
of the run's pid namespace, and the kernel delivers a signal sent from inside the namespace to
pid 1 only when pid 1 has a handler for it: with none, the program can neither interrupt,
stop nor kill the runner (``SIGKILL`` and ``SIGSTOP`` from inside are dropped too). A test's
deadline is therefore not an alarm signal: every wait on the program (``poll``) is bounded by
the test's deadline on this process's monotonic clock, so ``timeout`` means the time passed.
The worker gets the default dispositions back before the program runs.

Exit path. An exception of the runner itself is reported as a ``crash`` message (the only
proof of a broken sandbox after ``ready``); everything else that ends a run early is the
program's doing and its unreported tests fail.
"""

import _ast
import _signal
import _socket
import builtins
import os
import resource
import select
import sys
import time

NONCE_LEN = 32
MAX_REPLY = 4 << 20
MAX_DEPTH = 200
TEXT_CAP = 2000

_CFG = {}


# ---------------------------------------------------------------------- plain-data codec


class Opaque:
    """Stands for a value of a type the codec does not carry: equal to nothing, falsy."""

    __slots__ = ("type_name",)

    def __init__(self, type_name):
        self.type_name = type_name

    def __eq__(self, other):
        return False

    def __ne__(self, other):
        return True

    def __hash__(self):
        return id(self)

    def __bool__(self):
        return False

    def __repr__(self):
        return f"<{self.type_name} object (not plain data)>"


def encode(value, depth=0):
    """Python-literal text of a plain value; other types become ``__opaque__('name')``."""
    if depth > MAX_DEPTH:
        raise ValueError(f"value nested deeper than {MAX_DEPTH} levels")
    d = depth + 1
    if value is None or value is True or value is False:
        return repr(value)
    if isinstance(value, bool):
        return repr(bool.__bool__(value))
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, complex):
        return f"complex({_float(value.real)}, {_float(value.imag)})"
    if isinstance(value, str):
        return str.__repr__(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes.__repr__(bytes(value))
    if isinstance(value, list):
        return "[" + ", ".join(encode(v, d) for v in list.__iter__(value)) + "]"
    if isinstance(value, tuple):
        items = [encode(v, d) for v in tuple.__iter__(value)]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(encode(k, d) + ": " + encode(v, d) for k, v in dict.items(value)) + "}"
        )
    if isinstance(value, frozenset):
        return "frozenset([" + ", ".join(encode(v, d) for v in frozenset.__iter__(value)) + "])"
    if isinstance(value, set):
        return "set([" + ", ".join(encode(v, d) for v in set.__iter__(value)) + "])"
    return f"__opaque__({str.__repr__(type(value).__name__[:100])})"


def _float(x):
    x = float.__float__(x)
    if x != x:
        return "float('nan')"
    if x in (float("inf"), float("-inf")):
        return "float('%s')" % ("inf" if x > 0 else "-inf")
    return float.__repr__(x)


_CALLS = {"float", "complex", "set", "frozenset", "__opaque__"}


def decode(text):
    """Parse text made by :func:`encode` into plain values; anything else is refused."""
    if len(text) > MAX_REPLY:
        raise ValueError(f"value larger than {MAX_REPLY} bytes")
    return _node(compile(text, "<value>", "eval", _ast.PyCF_ONLY_AST).body)


def _node(n):
    ast = _ast
    if isinstance(n, ast.Constant) and type(n.value) in (
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
    ):
        return n.value
    if isinstance(n, ast.List):
        return [_node(e) for e in n.elts]
    if isinstance(n, ast.Tuple):
        return tuple(_node(e) for e in n.elts)
    if isinstance(n, ast.Set):
        return {_node(e) for e in n.elts}
    if isinstance(n, ast.Dict) and None not in n.keys:
        return {_node(k): _node(v) for k, v in zip(n.keys, n.values, strict=False)}
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
        v = _node(n.operand)
        if type(v) in (int, float, complex):
            return -v if isinstance(n.op, ast.USub) else v
    if (
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in _CALLS
        and not n.keywords
    ):
        args = [_node(a) for a in n.args]
        name = n.func.id
        if name == "__opaque__" and len(args) == 1 and type(args[0]) is str:
            return Opaque(args[0])
        if name == "float" and len(args) == 1 and args[0] in ("nan", "inf", "-inf"):
            return float(args[0])
        if name == "complex" and len(args) == 2 and all(type(a) is float for a in args):
            return complex(*args)
        if name in ("set", "frozenset") and len(args) <= 1:
            items = args[0] if args else []
            if type(items) is list:
                return set(items) if name == "set" else frozenset(items)
    raise ValueError(f"not plain data: {type(n).__name__}")


# ---------------------------------------------------------------------- helpers


def _text(value, cap=TEXT_CAP):
    try:
        s = str(value)
    except BaseException:  # noqa: BLE001 (a hostile __str__ may raise anything)
        s = "<unprintable>"
    return s if len(s) <= cap else s[:cap] + "...[truncated]"


def _harden():
    """Make this process non-dumpable (prctl through ``_ctypes``: ``ctypes`` costs ms).

    Same-uid processes can then neither ptrace it nor open its /proc entries (fd, mem).
    """
    try:
        import _ctypes

        class _Int(_ctypes._SimpleCData):
            _type_ = "i"

        class _Fn(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = _Int

        prctl = _Fn(_ctypes.dlsym(_ctypes.dlopen(None, 2), "prctl"))
        return prctl(4, 0, 0, 0, 0) == 0 and prctl(3, 0, 0, 0, 0) == 0  # SET/GET_DUMPABLE
    except Exception:  # noqa: BLE001 (no prctl to call: the runner reports it is not hardened)
        return False


def _close_fds(keep):
    keep = sorted(set(keep))
    lo = 0
    for fd in keep + [None]:
        hi = 65536 if fd is None else fd
        if hi > lo:
            os.closerange(lo, hi)
        lo = (fd or 0) + 1


def _apply_limits(limits):
    table = {
        "cpu_s": (resource.RLIMIT_CPU, lambda v: (v, v + 1)),
        "memory_mb": (resource.RLIMIT_AS, lambda v: (v << 20, v << 20)),
        "file_mb": (resource.RLIMIT_FSIZE, lambda v: (v << 20, v << 20)),
        "nproc": (resource.RLIMIT_NPROC, lambda v: (v, v)),
        "nofile": (resource.RLIMIT_NOFILE, lambda v: (v, v)),
    }
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for key, (res, make) in table.items():
        value = limits.get(key)
        if value:
            resource.setrlimit(res, make(int(value)))


def _say(obj):
    """One verdict message: nonce (copied fd to fd, never read) + a JSON line."""
    fd = _CFG["verdict_fd"]
    sent = 0
    while sent < NONCE_LEN:
        sent += os.sendfile(fd, _CFG["nonce_fd"], sent, NONCE_LEN - sent)
    _write_all(fd, (repr(obj) + "\n").encode())


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _job_fd():
    """The descriptor of the job: given at start, or (warm start) received once a run comes.

    A warm sandbox is started before its run exists and blocks here on a socket; the parent
    passes the job's sealed memfd with SCM_RIGHTS. A socket closed without one means the
    sandbox was not needed: leave quietly.
    """
    if _CFG.get("job_sock") is None:
        return _CFG["job_fd"]
    sock = _socket.socket(fileno=_CFG.pop("job_sock"))
    try:
        sock.sendall(b"w")  # up and waiting: the parent counts this sandbox as warm now
        _, ancillary, _, _ = sock.recvmsg(1, _socket.CMSG_SPACE(4))
    except OSError:
        ancillary = []
    finally:
        sock.close()
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS and len(data) >= 4:
            return int.from_bytes(data[:4], sys.byteorder)
    os._exit(0)


def _read_job(fd):
    chunks = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    os.close(fd)
    return decode(b"".join(chunks).decode())


def _no_int_digit_limit():
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)


_KEEP_SIGNALS = ("SIGKILL", "SIGSTOP", "SIGCHLD", "SIGCONT", "SIGSEGV", "SIGBUS", "SIGFPE",
                 "SIGILL", "SIGTRAP", "SIGABRT", "SIGSYS")  # fmt: skip
"""Left alone: uncatchable, needed (children), or synchronous faults of this very process."""


def _async_signals():
    keep = {getattr(_signal, name) for name in _KEEP_SIGNALS if hasattr(_signal, name)}
    return [n for n in range(1, _signal.NSIG) if n not in keep]


def _shield():
    """Ignore every asynchronous signal: no handler, so pid 1 is immune from inside."""
    for num in _async_signals():
        try:
            _signal.signal(num, _signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):  # reserved by libc (some real-time ones)
            pass


def _unshield():
    """The worker: Python's own dispositions back (SIGINT raises, the rest do the default)."""
    for num in _async_signals():
        handler = _signal.default_int_handler if num == _signal.SIGINT else _signal.SIG_DFL
        try:
            _signal.signal(num, handler)
        except (OSError, ValueError, RuntimeError):
            pass


_DEADLINE = [None]
"""Monotonic time the current test must end by (None: no test running)."""


def _left_ms():
    """Milliseconds left to the current test (-1: no deadline); TestTimeout once past it."""
    deadline = _DEADLINE[0]
    if deadline is None:
        return -1
    left = deadline - time.monotonic()
    if left <= 0:
        raise TestTimeout()
    return int(left * 1000) + 1


def _wait(fd, events):
    """Block until ``fd`` is ready for ``events`` or the current test's deadline passes."""
    while True:
        poller = select.poll()
        poller.register(fd, events)
        if poller.poll(_left_ms()):
            return


def _send_all(fd, data):
    """Write everything to a non-blocking pipe, within the current test's deadline."""
    view = memoryview(data)
    while view:
        _wait(fd, select.POLLOUT)
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            pass


# ---------------------------------------------------------------------- exec mode


def exec_mode():
    """Write files, limit this process, drop every extra descriptor, exec the program."""
    job = _read_job(_job_fd())
    for name, text in job.get("files", {}).items():
        path = os.path.join(os.getcwd(), name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
    _say({"event": "ready", "hardened": _CFG["hardened"]})
    _close_fds([0, 1, 2])
    _apply_limits(_CFG["limits"])
    argv = job["argv"]
    if job.get("python_main"):
        _run_main(job["python_main"], argv)
        return
    try:
        os.execve(argv[0], argv, _CFG.get("env", {}))
    except OSError as e:
        os.write(2, (f"envhub sandbox: cannot run {argv[0]}: {e}\n").encode())
        os._exit(127)


def _run_main(path, argv):
    """Run a Python file as ``__main__`` in this interpreter: one Python start, not two.

    Equivalent to exec'ing ``python -I -S path`` (this process already runs that way): the
    descriptors are closed and the limits applied; nothing secret is left in memory (the
    nonce was never read). Uncaught exceptions print a traceback and exit 1, as Python does.
    """
    os.environ.clear()
    os.environ.update(_CFG.get("env", {}))
    sys.argv = [path, *argv[argv.index(path) + 1 :]]
    with open(path, encoding="utf-8") as f:
        source = f.read()
    ns = {"__name__": "__main__", "__file__": path, "__builtins__": builtins}
    _CFG.clear()
    exec(compile(source, path, "exec"), ns)


# ---------------------------------------------------------------------- zygote and worker


def _start_zygote():
    here, there = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            here.close()
            _close_fds([0, 1, 2, there.fileno()])
            _zygote(there)
        finally:
            os._exit(0)
    there.close()
    return pid, here


def _zygote(sock):
    statuses = {}
    while True:
        data = sock.recv(64)
        if not data:
            return
        cmd, _, arg = data.decode().partition(" ")
        _reap(statuses)
        if cmd == "spawn":
            req_r, req_w = os.pipe()
            resp_r, resp_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                sock.close()
                os.close(req_w)
                os.close(resp_r)
                _worker(req_r, resp_w)
            os.close(req_r)
            os.close(resp_w)
            fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (req_w, resp_r))
            sock.sendmsg([str(pid).encode()], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            os.close(req_w)
            os.close(resp_r)
        elif cmd == "wait":
            pid = int(arg)
            if pid not in statuses:
                try:
                    statuses[pid] = os.waitpid(pid, 0)[1]
                except ChildProcessError:
                    statuses[pid] = 0
            sock.sendall(str(statuses.pop(pid)).encode())


def _reap(statuses):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = status


def _worker(req_r, resp_w):
    """Run the untrusted code and answer call requests. Never returns."""
    try:
        _close_fds([0, 1, 2, req_r, resp_w])
        os.setsid()
        _apply_limits(_CFG["limits"])
        _unshield()
        _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
        _no_int_digit_limit()
        reader = os.fdopen(req_r, "rb")
        first = decode(reader.readline().decode())
        ns = {"__name__": "solution", "__builtins__": builtins}
        try:
            exec(compile(first["code"], "solution.py", "exec"), ns)
        except BaseException as e:  # noqa: BLE001 (the program's own failure, reported as data)
            _flush()
            _reply(resp_w, {"load_error": [type(e).__name__, _text(e)]})
            os._exit(0)
        _flush()
        _reply(resp_w, {"loaded": True})
        while True:
            line = reader.readline()
            if not line:
                os._exit(0)
            _reply(resp_w, _serve_call(ns, decode(line.decode())))
    finally:
        os._exit(0)


def _serve_call(ns, req):
    fn = ns.get(req["fn"])
    if not callable(fn):
        return {"raise": ["NameError", "name {!r} is not defined by the program".format(req["fn"])]}
    try:
        args = decode(req["args"])
        kwargs = decode(req["kwargs"])
        result = fn(*args, **kwargs)
        out = {"value": encode(result)}
    except BaseException as e:  # noqa: BLE001 (the candidate raised: the test decides what that means)
        out = {"raise": [type(e).__name__, _text(e)]}
    _flush()
    return out


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 (the program may have replaced or broken its streams)
            pass


def _reply(fd, obj):
    try:
        data = encode(obj)
    except BaseException as e:  # noqa: BLE001 (a hostile value may fail to encode in any way)
        data = encode({"raise": ["EncodeError", _text(e)]})
    _write_all(fd, (data + "\n").encode())


# ---------------------------------------------------------------------- tests mode


class CandidateCrashed(BaseException):
    """The program died or closed its channel (not an Exception: tests cannot catch it)."""


class TestTimeout(BaseException):
    """The test ran past its deadline."""


class Worker:
    """The runner's handle on one worker process."""

    def __init__(self, zygote_sock, code):
        zygote_sock.sendall(b"spawn")
        _wait(zygote_sock.fileno(), select.POLLIN)
        msg, anc, _, _ = zygote_sock.recvmsg(64, _socket.CMSG_LEN(2 * 4))
        fds = []
        for level, kind, data in anc:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                fds += [int.from_bytes(data[i : i + 4], sys.byteorder) for i in range(0, 8, 4)]
        self.pid = int(msg.decode())
        self.req_w, self.resp_r = fds[0], fds[1]
        os.set_blocking(self.req_w, False)
        self.buf = b""
        self.dead = False
        self.send({"code": code})

    def send(self, obj):
        try:
            _send_all(self.req_w, (encode(obj) + "\n").encode())
        except OSError as e:
            self.dead = True
            raise CandidateCrashed("the program's process is gone") from e

    def receive(self):
        while b"\n" not in self.buf:
            _wait(self.resp_r, select.POLLIN)
            chunk = os.read(self.resp_r, 1 << 16)
            if not chunk:
                self.dead = True
                raise CandidateCrashed("the program's process ended")
            self.buf += chunk
            if len(self.buf) > MAX_REPLY:
                self.dead = True
                raise CandidateCrashed(f"the program answered more than {MAX_REPLY} bytes")
        line, _, self.buf = self.buf.partition(b"\n")
        try:
            obj = decode(line.decode("utf-8", "replace"))
            return obj if isinstance(obj, dict) else {}
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            return {}

    def close(self):
        for fd in (self.req_w, self.resp_r):
            try:
                os.close(fd)
            except OSError:
                pass


class Candidate:
    """What the tests call ``candidate``: forwards calls to the worker, returns plain data."""

    def __init__(self, session, name):
        self._session = session
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        _left_ms()  # past the test's deadline: no new call
        worker = self._session.worker()
        worker.send({"fn": self.__name__, "args": encode(args), "kwargs": encode(kwargs)})
        reply = worker.receive()
        if "value" in reply and isinstance(reply["value"], str):
            try:
                return decode(reply["value"])
            except (ValueError, SyntaxError, RecursionError, MemoryError) as e:
                raise CandidateError("ReturnValue", f"unreadable return value: {e}") from None
        if "raise" in reply and isinstance(reply["raise"], list) and len(reply["raise"]) == 2:
            name, message = (str(x)[:TEXT_CAP] for x in reply["raise"])
            exc = getattr(builtins, name, None)
            if isinstance(exc, type) and issubclass(exc, Exception):
                raise exc(message)
            raise CandidateError(name, message)
        raise CandidateError("Protocol", "malformed answer from the program")

    def __repr__(self):
        return f"<candidate {self.__name__}>"


class CandidateError(Exception):
    """An exception raised by the program whose type is not a builtin exception."""

    def __init__(self, type_name, message):
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name


class Session:
    """One tests-mode run: spawns workers lazily, kills them on crash or timeout."""

    def __init__(self, zygote_pid, zygote_sock, code):
        self.zygote_pid = zygote_pid
        self.sock = zygote_sock
        self.code = code
        self.current = None
        self.load_error = None

    def worker(self):
        if self.current is not None and not self.current.dead:
            return self.current
        if self.load_error is not None:
            raise CandidateCrashed(self.load_error)
        self.discard()
        _resume(self.zygote_pid)
        try:
            w = Worker(self.sock, self.code)
        except (OSError, ValueError) as e:  # the program killed the zygote earlier
            self.load_error = f"cannot start the program: its spawner is gone ({e})"
            raise CandidateCrashed(self.load_error) from None
        self.current = w
        reply = w.receive()
        if "load_error" in reply:
            name, message = (str(x)[:TEXT_CAP] for x in reply["load_error"])
            self.load_error = f"the program failed to load: {name}: {message}"
            self.discard()
            raise CandidateCrashed(self.load_error)
        if not reply.get("loaded"):
            self.discard()
            raise CandidateCrashed("the program did not load")
        return w

    def discard(self):
        """Kill the current worker and everything it started; return how it ended."""
        w, self.current = self.current, None
        _reap_orphans()
        if w is None:
            return None
        w.close()
        _kill_tree(w.pid, keep=(os.getpid(), self.zygote_pid))
        _resume(self.zygote_pid)
        try:
            self.sock.settimeout(ZYGOTE_TIMEOUT_S)
            self.sock.sendall((f"wait {w.pid}").encode())
            status = int(self.sock.recv(64).decode() or 0)
        except (OSError, ValueError):  # the program killed (or froze) the zygote
            return "its spawner is gone"
        finally:
            self.sock.settimeout(None)
        if os.WIFSIGNALED(status):
            return f"killed by signal {os.WTERMSIG(status)}"
        return f"exit code {os.WEXITSTATUS(status)}"


ZYGOTE_TIMEOUT_S = 5.0
"""How long the zygote may take to report a killed worker's status."""


def _resume(pid):
    """SIGCONT the zygote: the program (same uid) may have stopped it to hang the runner."""
    try:
        os.kill(pid, _signal.SIGCONT)
    except OSError:
        pass


def _reap_orphans():
    """As pid 1 of the sandbox the runner inherits orphans; collect the dead ones."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_tree(pid, keep):
    """SIGKILL the worker's process group; in a private pid namespace, every stray too."""
    try:
        os.killpg(pid, _signal.SIGKILL)
    except OSError:
        pass
    if not _CFG.get("pidns"):
        return
    for _ in range(200):
        strays = [p for p in _live_pids() if p not in keep and p != 1]
        if not strays:
            return
        for p in strays:
            try:
                os.kill(p, _signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.001)


def _live_pids():
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            out.append(int(name))
    return out


def tests_mode():
    """Run each step of the job; report every test on the verdict channel."""
    zygote_pid, zsock = _start_zygote()
    # The runner parses the program's answers: cap its memory too (MemoryError = a failed
    # test), so a reply built to explode into a huge syntax tree cannot hurt the host.
    memory_mb = _CFG["limits"].get("memory_mb")
    if memory_mb:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    job = _read_job(_job_fd())
    _no_int_digit_limit()
    _say({"event": "ready", "hardened": _CFG["hardened"]})
    session = Session(zygote_pid, zsock, job["code"])
    ns = {"__name__": "__envhub_tests__", "__builtins__": builtins}
    _bind(ns, job, session)
    broken = None
    passed = 0
    for index, step in enumerate(job["steps"]):
        if not step["test"]:
            broken = broken or _run_setup(step, ns, job, session)
            continue
        if broken:
            _say({"event": "test", "index": index, "passed": False, "error": broken})
            continue
        result = _run_test(step, ns, job, session)
        result.update(event="test", index=index)
        _say(result)
        passed += bool(result["passed"])
        if result.get("timeout"):
            broken = "not run: an earlier test timed out"
    if not broken or not broken.startswith("not run"):
        session.discard()
    _say({"event": "done", "passed": passed})
    zsock.close()


def _timed_out(job, session):
    """Kill the worker without talking to the zygote (the alarm may have cut an exchange)."""
    w, session.current = session.current, None
    if w is not None:
        w.close()
        _kill_tree(w.pid, keep=(os.getpid(), session.zygote_pid))
    error = "timed out after {}s".format(job["test_timeout_s"])
    return {"passed": False, "timeout": True, "error": error}


def _bind(ns, job, session):
    for name in job["functions"]:
        ns[name] = Candidate(session, name)
    if job["functions"]:
        ns["candidate"] = ns[job["functions"][0]]


def _run_setup(step, ns, job, session):
    try:
        exec(compile(step["code"], "<setup>", "exec"), ns)
    except BaseException as e:  # noqa: BLE001 (the task's setup failed: reported as data)
        return f"setup failed: {type(e).__name__}: {_text(e)}"
    _bind(ns, job, session)  # setup may define stubs of the same names: ours win
    return None


def _run_test(step, ns, job, session):
    start = time.monotonic()
    _DEADLINE[0] = start + float(job["test_timeout_s"])
    try:
        exec(compile(step["code"], "<test {}>".format(step.get("label", "")), "exec"), ns)
        out = {"passed": True}
    except TestTimeout:
        out = None
    except CandidateCrashed as e:
        ended = session.discard()
        out = {"passed": False, "error": "{}{}".format(e, f" ({ended})" if ended else "")}
    except AssertionError as e:
        out = {"passed": False, "error": "AssertionError" + (": " + _text(e) if str(e) else "")}
    except BaseException as e:  # noqa: BLE001 (whatever the program raised fails this test)
        out = {"passed": False, "error": f"{type(e).__name__}: {_text(e)}"}
    finally:
        _DEADLINE[0] = None
    if out is None:
        out = _timed_out(job, session)
    out["seconds"] = round(time.monotonic() - start, 4)
    return out


# ---------------------------------------------------------------------- entry


def _first_victim():
    """Out of memory, the kernel is to kill the run first, not its server.

    Inherited by everything the run starts. A program may lower its own value and its
    children's (to 0), not the hardened runner's: in tests mode the kernel still takes the
    runner, and the run ends with it. Not a bound on memory (a cgroup is). Done before
    :func:`_harden`: a non-dumpable process's ``/proc/self`` files belong to root, outside
    the sandbox's user namespace, and the worker is forked from the hardened runner.
    """
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def main():
    """Parse the config (argv[1]) and run the requested mode."""
    _CFG.update(decode(sys.argv[1]))
    _first_victim()
    if _CFG["mode"] == "exec":
        # Nothing to guard: the program runs with this very process once the descriptors
        # are closed (and loading _ctypes would cost every run a few milliseconds).
        _CFG["hardened"] = False
        exec_mode()
    else:
        _shield()
        _CFG["hardened"] = _harden()
        try:
            tests_mode()
        except BaseException as e:  # noqa: BLE001 (a fault of the runner itself: say so, then stop)
            _crash(e)
        # Everything is reported: skip the interpreter's teardown (the run ends sooner).
        _flush()
        os._exit(0)


CRASH_EXIT = 70
"""Exit code of a runner that failed by itself (after reporting a ``crash`` message)."""


def _crash(exc):
    """Report the runner's own failure on the verdict channel (the proof of an infra error)."""
    try:
        import traceback

        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        _say({"event": "crash", "error": _text(text, 4000)})
    finally:
        os._exit(CRASH_EXIT)


if __name__ == "__main__":
    main()
