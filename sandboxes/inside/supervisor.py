"""The in-sandbox supervisor: the one process inside a sandbox that the host talks to.

Why it exists: starting a new bwrap or ``docker exec`` per command costs 4-60 ms and loses the shell's
state; a supervisor started once per sandbox answers in well under a millisecond, holds the live shell
sessions and the long-running processes (the Python runner), and enforces limits and timeouts from the
inside, where every process of the sandbox is visible.

It is the sandbox's PID 1 (``bwrap --as-pid-1``, or the container's command), so sandboxed code cannot
signal it (the kernel shields a PID namespace's init from its own members), orphans are reaped here, and
when it exits the kernel kills everything left in the sandbox. It is non-dumpable, so same-uid code cannot
ptrace it or open its pipes through /proc (and so forge answers to the host).

Protocol: one JSON request per line on stdin, one JSON answer per line on stdout, bytes base64-encoded.
Every answer has ``ok``; failures carry ``error``. The host treats answers as untrusted (bounded, checked).
Operations: ``run``, ``shell_open``, ``shell``, ``spawn``, ``recv``, ``kill``, ``write``, ``read``,
``killall``, ``wipe``, ``ps``, ``ping``.

Runs on the sandbox's own Python (stdlib only), with :mod:`procs` beside it; the bootstrap in
:mod:`sandboxes.supervised` loads both from ``python3 -c`` arguments and passes the config last.
"""

import os
import select
import stat

try:  # the C module: `signal` itself imports enum, which costs ~3 ms of start-up
    import _signal as signal
except ImportError:  # pragma: no cover - other Pythons
    import signal
import sys
import time

try:
    import procs  # inside the sandbox the bootstrap has registered it
except ImportError:  # imported on the host (docs, doctest collection): alias the package's copy
    from sandboxes.inside import procs

    sys.modules.setdefault("procs", procs)
from procs import (
    CFG,
    DUMPS,
    LOADS,
    TRACKED,
    Capped,
    Outbox,
    b64,
    close_all,
    descendants,
    drain,
    exit_code,
    kill,
    kill_tree,
    process_table,
    pump,
    reap,
    spawn,
    unb64,
    wait_exit,
)

SHELLS = {}
PROCS = {}
DRIVER = r"""
while IFS= read -r -d '' __agentgym_cmd; do
  if [[ $__agentgym_cmd == @* ]]; then IFS= read -r -d '' __agentgym_cmd < "${__agentgym_cmd:1}"
  else __agentgym_cmd=${__agentgym_cmd:1}; fi
  eval "$__agentgym_cmd" </dev/null 3>&-
  printf '%d %s\0' "$?" "$PWD" >&3
done
"""
STATUS_LIMIT = 1 << 14  # ``status cwd``: cwd is at most PATH_MAX (4096) bytes
INLINE_LIMIT = 1 << 16  # longer shell commands travel through a file: bash's `read` from a pipe is slow


# ----------------------------------------------------------------------------- operations
def op_run(req):
    try:
        pid, in_w, out_r, err_r = spawn(req["argv"], req.get("cwd"), req.get("env"))
    except OSError as e:  # EAGAIN/ENOMEM: the sandbox is full of processes; the command's failure, not ours
        err = Capped(1 << 12)
        err.add(f"sandbox: cannot start the command: {e} (the sandbox's process or memory limit)\n".encode())
        return dict(Capped(0).as_json("stdout"), **err.as_json("stderr"), exit_code=126, timed_out=False,
                    duration_s=0.0)
    out, err = Capped(req["max_output"] // 4), Capped(req["max_output"] // 4)
    readers = {out_r: out, err_r: err}
    outbox = Outbox(in_w, unb64(req.get("stdin")), close=True)
    started = time.monotonic()
    pump(readers, outbox, started + req["timeout"], lambda: TRACKED[pid] is not None)
    timed_out = TRACKED[pid] is None
    if timed_out:
        kill_tree(pid)
        wait_exit(pid, time.monotonic() + 5)
    drain(readers, req["max_output"])
    close_all(outbox.fd, out_r, err_r)
    status = TRACKED.pop(pid)
    code = 137 if status is None else exit_code(status)
    return dict(out.as_json("stdout"), **err.as_json("stderr"), exit_code=code, timed_out=timed_out,
                duration_s=time.monotonic() - started)


class Shell:
    """A long-running bash reading NUL-terminated commands; it reports ``status cwd`` on its fd 3."""

    def __init__(self, cwd, env):
        self.cwd, self.env, self.counter = cwd, env, 0
        self.start()

    def start(self):
        if not os.path.isdir(self.cwd):
            self.cwd = CFG.get("workdir", "/")
        status_r, status_w = os.pipe()
        argv = ["bash", "--noprofile", "--norc", "-c", DRIVER, "bash"]
        self.pid, self.w_in, self.out_r, self.err_r = spawn(argv, self.cwd, self.env, extra=(status_w,))
        os.set_blocking(status_r, False)
        self.status_r = status_r

    def alive(self):
        reap()
        return TRACKED.get(self.pid, 0) is None

    def stop(self, grace=0.0):
        wait_exit(self.pid, time.monotonic() + grace)
        kill_tree(self.pid)
        wait_exit(self.pid, time.monotonic() + 2)
        close_all(self.w_in, self.out_r, self.err_r, self.status_r)

    def payload(self, command):
        """The bytes to send for ``command``, and the file that carries it when it is long."""
        data = command.encode("utf-8", "replace").replace(b"\0", b"")  # lone surrogates become "?"
        if len(data) <= INLINE_LIMIT:
            return b"=" + data + b"\0", None
        self.counter += 1
        path = f"/tmp/.agentgym-cmd-{self.counter}-{os.urandom(6).hex()}"
        def write():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        as_owner(write)
        return b"@" + path.encode() + b"\0", path

    def restart(self, grace=0.0):
        self.stop(grace)
        status = TRACKED.pop(self.pid, None)
        self.start()
        return 137 if status is None else exit_code(status)


def op_shell_open(req):
    if req["sid"] in SHELLS:
        SHELLS.pop(req["sid"]).stop()
    SHELLS[req["sid"]] = Shell(req.get("cwd") or CFG.get("workdir", "/"), req.get("env") or {})
    return {}


def op_shell(req):
    shell, restarted = SHELLS.get(req["sid"]), None
    if shell is None:
        raise ValueError(f"no shell session {req['sid']!r} (sessions end when the sandbox is reset)")
    if not shell.alive():  # it died between commands (a background job killed it)
        shell.restart()
        restarted = "exited"
    out, err, status = Capped(req["max_output"] // 4), Capped(req["max_output"] // 4), bytearray()
    readers = {shell.out_r: out, shell.err_r: err, shell.status_r: status}
    before = {int(n) for n in os.listdir("/proc") if n.isdigit()}
    started = time.monotonic()
    payload, path = shell.payload(req["command"])
    # A status line is short; a longer one is the command writing to the driver's saved status fd: stop
    # reading it (the shell is restarted below) rather than buffer whatever it writes.
    done = lambda: b"\0" in status or len(status) > STATUS_LIMIT or shell.status_r not in readers
    pump(readers, Outbox(shell.w_in, payload, close=False), started + req["timeout"], done)
    timed_out = not done()
    if timed_out:  # stop what this command started; earlier background jobs keep running
        kill(p for p in descendants(shell.pid, process_table()) if p not in before)
        pump(readers, None, time.monotonic() + 1.0, done)
    drain(readers, req["max_output"])
    if path:
        as_owner(lambda: os.path.exists(path) and os.unlink(path))
    if b"\0" in status:
        code_text, _, cwd = bytes(status).split(b"\0", 1)[0].decode("utf-8", "replace").partition(" ")
        code = int(code_text) if code_text.isdigit() else 1  # only the command itself can garble it
        shell.cwd = cwd or shell.cwd
    else:
        code = shell.restart(grace=0.0 if timed_out else 0.5)
        restarted = "stuck" if timed_out else "exited"
    return dict(out.as_json("stdout"), **err.as_json("stderr"), exit_code=code, cwd=shell.cwd, timed_out=timed_out,
                restarted=restarted, duration_s=time.monotonic() - started)


def op_spawn(req):
    if req["key"] in PROCS:
        raise ValueError(f"a process named {req['key']!r} is already running")
    pid, in_w, out_r, err_r = spawn(req["argv"], req.get("cwd"), req.get("env"))
    PROCS[req["key"]] = {"pid": pid, "in": in_w, "out": out_r, "err": err_r, "buf": bytearray(),
                         "errbuf": Capped(1 << 15)}
    return {"pid": pid}


def op_recv(req):
    """Optionally send bytes, then one line of the process's stdout (bounded) or eof/timeout (with stderr's tail)."""
    proc, limit = PROCS[req["key"]], req["max_bytes"]
    readers = {proc["out"]: proc["buf"], proc["err"]: proc["errbuf"]}
    has_line = lambda: b"\n" in proc["buf"] or len(proc["buf"]) > limit or proc["out"] not in readers
    outbox = Outbox(proc["in"], unb64(req.get("data")), close=False)  # a request to send first, if any
    pump(readers, outbox, time.monotonic() + req["timeout"], has_line)
    buf, line = proc["buf"], None
    if b"\n" in buf:
        end = buf.index(b"\n") + 1
        line, proc["buf"] = bytes(buf[:end]), buf[end:]
    elif len(buf) > limit:
        raise ValueError(f"the process wrote a line longer than {limit} bytes")
    eof = proc["out"] not in readers and line is None
    if eof:
        proc["out"] = None
    errbuf = proc["errbuf"]
    stderr = b64(errbuf.head + errbuf.tail) if eof else ""
    return {"line": None if line is None else b64(line), "eof": eof, "stderr": stderr}


def op_kill(req):
    proc = PROCS.pop(req["key"], None)
    if proc:
        kill_tree(proc["pid"])
        wait_exit(proc["pid"], time.monotonic() + 2)
        TRACKED.pop(proc["pid"], None)
        close_all(proc["in"], proc["out"], proc["err"])
    return {}


def as_owner(fn):
    """File operations run with the sandbox user's identity, so planted symlinks gain nothing."""
    if os.getuid() != 0 or CFG.get("uid") is None:
        return fn()
    os.setegid(CFG["gid"])
    os.seteuid(CFG["uid"])
    try:
        return fn()
    finally:
        os.seteuid(0)
        os.setegid(0)


def resolve(path):
    return path if path.startswith("/") else os.path.join(CFG.get("workdir", "/"), path)


def open_regular(path, flags, mode=0o644):
    """Open ``path`` only if it is a regular file, never blocking: the sandbox's code may have planted a
    FIFO (whose open or read would wait for a writer forever), a socket or a device where a file is expected."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path} is not a regular file (expected a file, got a {kind_of(st.st_mode)})")
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY, mode)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # swapped in since the check above
        os.close(fd)
        raise ValueError(f"{path} is not a regular file (expected a file, got a {kind_of(st.st_mode)})")
    os.set_blocking(fd, True)
    return fd


def kind_of(mode):
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


def op_write(req):
    def write():
        path = resolve(req["path"])
        os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
        fd = open_regular(path, os.O_WRONLY | os.O_CREAT, req.get("mode", 0o644))
        with os.fdopen(fd, "wb") as f:
            f.truncate(0)  # only now: truncating before the checks would touch a file we then refuse
            f.write(unb64(req["data"]))
            os.fchmod(f.fileno(), req.get("mode", 0o644))
    as_owner(write)
    return {}


def op_read(req):
    def read():
        with os.fdopen(open_regular(resolve(req["path"]), os.O_RDONLY), "rb") as f:
            data = f.read(req["max_bytes"] + 1)
        if len(data) > req["max_bytes"]:
            raise ValueError(f"{req['path']} is larger than {req['max_bytes']} bytes")
        return data
    return {"data": b64(as_owner(read))}


def op_killall(req):
    if os.getpid() != 1:  # kill(-1) outside a PID namespace would hit every process of this user on the host
        raise ValueError("killall is only allowed when the supervisor is the sandbox's PID 1")
    for shell in SHELLS.values():
        close_all(shell.w_in, shell.out_r, shell.err_r, shell.status_r)
    for proc in PROCS.values():
        close_all(proc["in"], proc["out"], proc["err"])
    SHELLS.clear()
    PROCS.clear()
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(pid != os.getpid() for pid, _, _ in process_table()):
        select.select([procs.WAKE_R], [], [], 0.01)
        reap()
    TRACKED.clear()
    return {}


def remove_tree(path):
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if os.path.isdir(full) and not os.path.islink(full):
            os.chmod(full, 0o700)
            remove_tree(full)
            os.rmdir(full)
        else:
            os.unlink(full)


def op_wipe(req):
    for path in req["paths"]:
        as_owner(lambda path=path: remove_tree(path))
    return {}


OPS = {"run": op_run, "shell_open": op_shell_open, "shell": op_shell, "spawn": op_spawn,
       "recv": op_recv, "kill": op_kill, "write": op_write, "read": op_read, "killall": op_killall,
       "wipe": op_wipe, "ps": lambda req: {"pids": sorted(pid for pid, _, _ in process_table())},
       "ping": lambda req: {}}


# ----------------------------------------------------------------------------- main loop
def answer(message):
    data = memoryview(DUMPS(message).encode())  # no concatenated copy: a 32 MiB read is ~45 MiB of JSON
    while data:
        data = data[os.write(1, data):]
    os.write(1, b"\n")


def handle(line):
    try:
        req = LOADS(line)
        result = OPS[req["op"]](req)
        result["ok"] = True
    except Exception as e:  # every failure becomes an answer; the supervisor itself must not die
        result = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    answer(result)


def make_undumpable():
    """PR_SET_DUMPABLE=0: same-uid code can then neither ptrace us nor open our pipes via /proc/1/fd."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except Exception:
        pass


def main():
    CFG.update(LOADS(sys.argv[-1]))
    procs.install_sigchld()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    answer({"ok": True, "ready": True, "pid": os.getpid(), "uid": os.getuid()})
    make_undumpable()  # after "ready" (it overlaps the host's next step) but before any request is read
    buffer = b""
    while True:
        r, _, _ = select.select([0, procs.WAKE_R], [], [])
        if procs.WAKE_R in r:
            reap()
        if 0 in r:
            chunk = os.read(0, 1 << 20)
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                handle(line)


if __name__ == "__main__":
    main()
