"""Process plumbing for the in-sandbox supervisor: spawning with limits, reaping, killing, moving bytes.

Runs inside the sandbox, on the sandbox's Python (stdlib only), loaded by the bootstrap in
:mod:`sandboxes.supervised` as the module ``procs``; the host never imports it for use. The supervisor is the
sandbox's PID 1, so every orphan is reparented to it: :func:`reap` collects them all and records the exit
status only of processes it started (``TRACKED``).
"""

import binascii
import fcntl
import os
import resource
import select

try:  # the C module: `signal` itself imports enum, which costs ~3 ms of start-up
    import _signal as signal
except ImportError:  # pragma: no cover - other Pythons
    import signal
import sys
import time

CFG = {}
TRACKED = {}  # pid -> wait status, None while running; only our own children are tracked
WAKE_R = WAKE_W = -1  # the SIGCHLD wake-up pipe, set by install_sigchld()


def json_codec():
    """(loads, dumps) from the C accelerator directly: importing ``json`` pulls in ``re`` and ``enum``,
    which would double the supervisor's start-up time. Falls back to ``json`` where ``_json`` differs."""
    try:
        import _json

        class Context:
            strict, object_hook, object_pairs_hook, memo = True, None, None, {}
            parse_float, parse_int, parse_constant = float, int, float

        scan = _json.make_scanner(Context())
        encode = _json.make_encoder(None, None, _json.encode_basestring_ascii, None, ":", ",", False, False, False)

        def loads(text):
            if isinstance(text, bytes):
                text = text.decode("utf-8")
            try:
                value, end = scan(text, 0)
            except StopIteration:
                raise ValueError("not JSON") from None
            if text[end:].strip():
                raise ValueError("extra data after JSON")
            return value

        def dumps(value):
            return "".join(encode(value, 0))

        assert loads(dumps({"a": [1, 2.5, "x\u00e9", None, True]})) == {"a": [1, 2.5, "x\u00e9", None, True]}
        return loads, dumps
    except Exception:
        import json

        return json.loads, lambda value: json.dumps(value, separators=(",", ":"))


LOADS, DUMPS = json_codec()


def b64(data):
    return binascii.b2a_base64(bytes(data), newline=False).decode("ascii")


def unb64(text):
    return binascii.a2b_base64(text) if text else b""


class Capped:
    """A stream bound: keeps the first and last ``cap`` bytes and counts what fell between."""

    def __init__(self, cap):
        self.cap, self.head, self.tail, self.total = cap, bytearray(), bytearray(), 0

    def add(self, data):
        self.total += len(data)
        room = self.cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.cap:
                del self.tail[: len(self.tail) - self.cap]

    def as_json(self, prefix):
        dropped = self.total - len(self.head) - len(self.tail)
        return {prefix: b64(self.head), prefix + "_tail": b64(self.tail), prefix + "_dropped": dropped}


# ----------------------------------------------------------------------------- processes
def reap():
    """Collect exit statuses (ours are recorded, orphans' are discarded) and clear the SIGCHLD wake-up pipe."""
    try:
        while os.read(WAKE_R, 4096):
            pass
    except BlockingIOError:
        pass
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in TRACKED:
            TRACKED[pid] = status


def exit_code(status):
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def child_setup(fds, cwd, env_limits):
    """In the forked child: own session, the given fds as 0..n, default signals, limits, dropped uid."""
    os.setsid()
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in fds]
    for target, fd in enumerate(high):
        os.dup2(fd, target)
    for name in os.listdir("/proc/self/fd"):
        if int(name) >= len(fds):
            try:
                os.close(int(name))
            except OSError:
                pass
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGCHLD, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    if env_limits:
        apply_limits()
    prefer_as_oom_victim()
    if os.getuid() == 0 and CFG.get("uid") is not None:
        os.setgroups([])
        os.setgid(CFG["gid"])
        os.setuid(CFG["uid"])
    os.umask(0o022)
    os.chdir(cwd)


def prefer_as_oom_victim():
    """oom_score_adj 1000: out of memory, the kernel kills sandboxed commands first, not the supervisor.

    The fork inherited the supervisor's non-dumpable flag, which makes /proc/self root-owned; execve
    resets the flag anyway, so it is lifted here first.
    """
    ctypes = sys.modules.get("ctypes")
    try:
        if ctypes is not None:
            ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE = 1
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def apply_limits():
    limits = CFG.get("limits", {})
    names = {"cpu": resource.RLIMIT_CPU, "as": resource.RLIMIT_AS, "nproc": resource.RLIMIT_NPROC,
             "fsize": resource.RLIMIT_FSIZE, "nofile": resource.RLIMIT_NOFILE, "core": resource.RLIMIT_CORE}
    for key, which in names.items():
        if limits.get(key) is not None:
            value = int(limits[key])
            hard = resource.getrlimit(which)[1]
            soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (soft, soft + 1 if key == "cpu" else soft))


def spawn(argv, cwd=None, env=None, extra=(), limits=True):
    """Fork and exec ``argv`` with fresh stdin/stdout/stderr pipes; returns (pid, in_w, out_r, err_r)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    env = dict(CFG.get("env", {}), **(env or {}))
    try:
        pid = os.fork()
    except OSError:
        close_all(in_r, in_w, out_r, out_w, err_r, err_w, *extra)
        raise
    if pid == 0:
        try:
            child_setup([in_r, out_w, err_w, *extra], cwd or CFG.get("workdir", "/"), limits)
            os.execvpe(argv[0], argv, env)
        except BaseException as e:
            try:
                os.write(2, f"sandbox: cannot run {argv[0]!r}: {e}\n".encode())
            except OSError:
                pass
        os._exit(127)
    TRACKED[pid] = None
    for fd in (in_r, out_w, err_w, *extra):
        os.close(fd)
    for fd in (in_w, out_r, err_r):
        os.set_blocking(fd, False)
    return pid, in_w, out_r, err_r


def process_table():
    """(pid, ppid, session) of every process visible in this PID namespace."""
    table = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                table.append((int(name), int(fields[1]), int(fields[3])))
            except (OSError, IndexError, ValueError):
                pass
    return table


def descendants(root, table):
    children = {}
    for pid, ppid, _ in table:
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill(pids):
    for pid in pids:
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def kill_tree(pid):
    """Kill a command's process group, its session and its descendants (what a timeout must stop).

    Repeated until none is left, because a fork bomb keeps making new members while the last pass ran.
    """
    for _ in range(100):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        table = process_table()
        doomed = [p for p, _, sid in table if sid == pid and p != os.getpid()] + descendants(pid, table)
        if not doomed:
            return
        kill(doomed)
        reap()


def wait_exit(pid, deadline):
    while TRACKED.get(pid) is None and time.monotonic() < deadline:
        select.select([WAKE_R], [], [], max(0.0, deadline - time.monotonic()))
        reap()
    return TRACKED.get(pid)


# ----------------------------------------------------------------------------- pumping pipes
def read_into(fd, sink):
    """Read what is available; returns False at end of file."""
    try:
        data = os.read(fd, 1 << 16)
    except BlockingIOError:
        return True
    except OSError:
        return False
    if not data:
        return False
    sink.add(data) if isinstance(sink, Capped) else sink.extend(data)
    return True


def drain(readers, budget):
    """Read what is already buffered (after a command ended), at most ``budget`` bytes per stream."""
    for fd, sink in list(readers.items()):
        start = sink.total if isinstance(sink, Capped) else len(sink)
        while (sink.total if isinstance(sink, Capped) else len(sink)) - start < budget:
            if not select.select([fd], [], [], 0)[0] or not read_into(fd, sink):
                break


class Outbox:
    """Bytes on their way into a process's stdin, written as the pipe accepts them (never blocking)."""

    def __init__(self, fd, data, close):
        self.fd, self.data, self.close = fd, data, close
        if close and not data:
            self.finish()

    def wants(self):
        return self.fd is not None and bool(self.data)

    def write(self):
        try:
            self.data = self.data[os.write(self.fd, self.data[: 1 << 16]):]
        except BlockingIOError:
            return
        except OSError:
            self.data = b""
        if not self.data and self.close:
            self.finish()

    def finish(self):
        close_all(self.fd)
        self.fd = None


def pump(readers, outbox, deadline, stop):
    """Move bytes between pipes until ``stop()`` is true or the deadline passes."""
    while not stop():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        wl = [outbox.fd] if outbox is not None and outbox.wants() else []
        r, w, _ = select.select(list(readers) + [WAKE_R], wl, [], left)
        if WAKE_R in r:
            reap()
        for fd in r:
            if fd in readers and not read_into(fd, readers[fd]):
                readers.pop(fd)
        if w:
            outbox.write()


def close_all(*fds):
    for fd in fds:
        try:
            os.close(fd)
        except (OSError, TypeError):
            pass


def install_sigchld():
    """Make SIGCHLD wake any select() through a pipe (reaping happens in :func:`reap`, never in a handler)."""
    global WAKE_R, WAKE_W
    WAKE_R, WAKE_W = os.pipe()
    os.set_blocking(WAKE_R, False)
    os.set_blocking(WAKE_W, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(WAKE_W)
