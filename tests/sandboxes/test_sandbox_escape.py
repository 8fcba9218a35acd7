"""Escape and abuse suite: every attack is contained on both real backends and the host stays byte-identical.

The host side is watched by a canary tree (a project with credential-like files, made here) plus this
package's own source and tests; its digest is taken before the first attack and compared after the last.
Companion suites: ``test_sandbox_seccomp.py`` (every denied system call, io_uring and ptrace included),
``test_sandbox_limits.py`` (whole-sandbox memory, processes and CPU) and the runner's forging attacks in
``test_sandbox_pool_runner.py``.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

import sandboxes
from sandboxes import SandboxError

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import socket, sys
for host, port in [tuple(a.rsplit(":", 1)) for a in sys.argv[1:]]:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect((host, int(port)))
        print("CONNECTED", host, port)
    except OSError as e:
        print("blocked", host, port, e.errno)
"""


def digest(paths: list[Path]) -> str:
    """A hash of names, types, modes, sizes, contents and link targets under ``paths``."""
    h = hashlib.sha256()
    for root in paths:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".pytest_cache"))
            for name in sorted(filenames) + sorted(dirnames):
                path = Path(dirpath, name)
                st = path.lstat()
                h.update(f"{path}\0{st.st_mode}\0{st.st_size}\0".encode())
                if path.is_symlink():
                    h.update(os.readlink(path).encode())
                elif path.is_file() and not name.endswith(".pyc"):
                    h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def host_tree(tmp_path_factory):
    """A canary tree on the host, and the digest of everything watched, taken before any attack."""
    root = tmp_path_factory.mktemp("host-canary")
    (root / "project" / "src").mkdir(parents=True)
    (root / "project" / "src" / "app.py").write_text("print('host')\n")
    (root / "project" / ".env").write_text("API_TOKEN=host-secret-123\n")
    (root / ".aws").mkdir()
    (root / ".aws" / "credentials").write_text("[default]\naws_secret_access_key=host-secret-456\n")
    (root / ".ssh").mkdir(mode=0o700)
    (root / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- host-secret-789\n")
    (root / "link-to-etc").symlink_to("/etc")
    watched = [root, REPO / "sandboxes", REPO / "tests" / "sandboxes"]
    return root, watched, digest(watched)


def test_loopback_service_on_the_host_is_unreachable(box, host_tree):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))
    server.listen(8)
    server.settimeout(0.2)
    port, accepted, stop = server.getsockname()[1], [], threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        targets = [f"127.0.0.1:{port}", f"{_host_address()}:{port}", f"172.17.0.1:{port}"]
        out = box.run(["python3", "-c", PROBE, *targets], timeout=30).text()
        shell = box.run(f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED || echo blocked", timeout=10).text()
    finally:
        stop.set()
        thread.join()
        server.close()
    assert "CONNECTED" not in out + shell and out.count("blocked") == 3
    assert accepted == []


def test_outside_addresses_are_unreachable(box):
    out = box.run(["python3", "-c", PROBE, "1.1.1.1:443", "8.8.8.8:53", "93.184.216.34:80"], timeout=30).text()
    assert out.count("blocked") == 3, out
    dns = box.run("python3 -c \"import socket; socket.getaddrinfo('deb.debian.org', 80)\"", timeout=30)
    assert dns.exit_code != 0
    interfaces = box.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", timeout=10).stdout
    assert interfaces == b"lo\n"


def test_host_unix_sockets_are_unreachable(box, tmp_path):
    name = f"agentgym-canary-{uuid.uuid4().hex}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\0" + name)
    abstract.listen(1)
    try:
        probe = ("import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('\\0" + name + "')\n"
                 "    print('CONNECTED')\nexcept OSError as e:\n    print('blocked', e.errno)")
        assert box.run(["python3", "-c", probe], timeout=10).stdout.startswith(b"blocked")
    finally:
        abstract.close()
    assert box.run("ls /var/run/docker.sock /run/docker.sock /run/containerd 2>/dev/null", timeout=10).stdout == b""


def test_host_files_cannot_be_read(box, host_tree):
    root, _, _ = host_tree
    secrets = [root / "project" / ".env", root / ".aws" / "credentials", root / ".ssh" / "id_rsa",
               REPO / "pyproject.toml", Path(__file__).resolve(), Path.home() / ".bash_history"]
    listing = " ".join(f"'{p}'" for p in secrets)
    result = box.run(f"cat {listing} 2>/dev/null; ls /root 2>/dev/null; grep -rs host-secret / --exclude-dir=proc "
                     "--exclude-dir=sys -l 2>/dev/null | head", timeout=60)
    assert b"host-secret" not in result.stdout and b"print('host')" not in result.stdout
    for path in secrets:
        with pytest.raises(SandboxError):
            box.read_file(str(path))  # the host API reads inside the sandbox, where these do not exist
    host_shadow = Path("/etc/shadow").read_bytes() if os.access("/etc/shadow", os.R_OK) else None
    inside = box.run("cat /etc/shadow", timeout=10)
    assert inside.exit_code != 0 and (host_shadow is None or host_shadow not in inside.stdout)


def test_host_environment_is_not_inherited(backend, monkeypatch):
    monkeypatch.setenv("AGENTGYM_CANARY_TOKEN", "host-secret-env")
    with sandboxes.make(backend) as fresh:
        assert b"host-secret-env" not in fresh.run("env; cat /proc/1/environ 2>/dev/null", timeout=10).stdout
        assert b"host-secret-env" not in fresh.open_shell().run("env", timeout=10).stdout


def test_host_files_cannot_be_written(box, host_tree):
    root, _, _ = host_tree
    targets = [root / "project" / "src" / "app.py", root / "new.txt", REPO / "sandboxes" / "base.py",
               Path("/usr/bin/agentgym-pwned"), Path("/etc/passwd")]
    for target in targets:
        result = box.run(f"echo pwned > '{target}' || echo refused", timeout=10)
        assert b"refused" in result.stdout
    box.write_file(str(root / "new.txt"), b"pwned")  # lands in the sandbox's own /tmp, not on the host
    assert box.read_file(str(root / "new.txt")) == b"pwned" and not (root / "new.txt").exists()
    assert b"refused" in box.run("echo x > /proc/sys/kernel/hostname || echo refused; "
                                 "mount -t tmpfs none /mnt 2>/dev/null || echo refused", timeout=10).stdout


def test_symlink_and_dotdot_tricks_stay_inside(box, host_tree):
    root, _, _ = host_tree
    escape = f"agentgym-escape-{uuid.uuid4().hex}"
    box.write_file("../../../../../tmp/" + escape, b"x")
    assert not Path("/tmp", escape).exists()
    assert box.run(f"ls /tmp/{escape}", timeout=10).exit_code == 0
    box.run(f"ln -s '{root}/.aws/credentials' /work/creds; ln -s /etc/passwd /work/pw; ln -s / /work/top", timeout=10)
    with pytest.raises(SandboxError):
        box.read_file("creds")  # the link resolves inside the sandbox, where the host file is absent
    with pytest.raises(SandboxError, match="Read-only|Permission"):
        box.write_file("pw", b"root::0:0::/root:/bin/bash\n")
    listing = box.run("ls /work/top/ /work/../../../; cat /work/../../etc/hostname 2>/dev/null", timeout=10).text()
    assert "host-canary" not in listing and "agentgym-unsafe" not in listing and str(REPO) not in listing
    assert b"agent:x:1000" in box.read_file("/work/top/etc/passwd")


def test_fork_bomb_is_contained(backend):
    with sandboxes.make(backend, processes=64) as small:
        bomb = small.run("bomb() { bomb | bomb & }; bomb; sleep 1", timeout=2)
        escaped = small.run("for i in $(seq 200); do (setsid sleep 1000 >/dev/null 2>&1 &); done", timeout=2)
        assert bomb.duration_s < 15 and escaped.duration_s < 15
        assert len(small.processes()) <= 64 + 2
        assert subprocess.run(["true"], timeout=10, check=False).returncode == 0  # the host can still fork
        small.reset()
        assert small.processes() == [1] and small.run("echo ok", timeout=10).stdout == b"ok\n"


def test_memory_bomb_is_contained(backend):
    with sandboxes.make(backend, memory_mb=256) as small:
        result = small.run("python3 -c 'x = bytearray(8 * 1024 ** 3)'", timeout=30)
        assert result.exit_code != 0 and b"MemoryError" in result.stderr
        grow = small.run("python3 -c 'chunks = []\nwhile True: chunks.append(bytearray(32 * 1024 ** 2))'", timeout=60)
        assert grow.exit_code != 0 and not grow.timed_out
        assert small.run("echo alive", timeout=10).stdout == b"alive\n"


def test_filling_the_disk_stops_at_the_limit(backend):
    with sandboxes.make(backend, disk_mb=16) as small:
        fill = ("for d in /work /tmp /home/agent /dev/shm; do for i in $(seq 40); do "
                "head -c 1048576 /dev/zero > $d/f$i 2>/dev/null || break; done; done; "
                "du -sm /work /tmp /home/agent /dev/shm")
        sizes = [int(line.split()[0]) for line in small.run(fill, timeout=60).stdout.decode().splitlines()]
        assert len(sizes) == 4 and all(size <= 17 for size in sizes)
        assert small.run("df -m /work | tail -n 1", timeout=10).stdout.split()[1] in (b"16", b"17")


def test_infinite_loops_are_stopped(backend):
    with sandboxes.make(backend, cpu_seconds=1) as small:
        # The wall-clock limit (0.5 s) fires before the 1 s CPU limit can: a single-threaded loop uses at
        # most one CPU second per wall second (with both at 1 s, either could win the race).
        loop = small.run("while :; do :; done", timeout=0.5)
        assert loop.timed_out and loop.duration_s < 10
        busy = small.run("python3 -c 'while True: pass'", timeout=60)  # the CPU-time limit, not the wall clock
        assert not busy.timed_out and busy.exit_code in (128 + 9, 128 + 24)


@pytest.mark.parametrize("attack", ["kill -9 1", "kill -KILL $PPID", "kill -9 -1", "pkill -9 python3",
                                    "kill -STOP 1", "kill -TERM 1; kill -INT 1; kill -HUP 1"])
def test_killing_the_parent_is_harmless(box, attack):
    box.run(attack, timeout=10)
    assert box.run("echo alive", timeout=10).stdout == b"alive\n"
    assert box.open_shell().run("echo shell", timeout=10).stdout == b"shell\n"


@pytest.mark.parametrize("flood", ["yes", "yes >&2", "cat /dev/urandom", "while :; do echo line; done"])
def test_huge_outputs_are_bounded(box, flood):
    result = box.run(flood, timeout=0.5)
    assert result.timed_out and len(result.stdout) + len(result.stderr) <= box.limits.output_bytes + 200
    shell_result = box.open_shell().run(flood, timeout=0.5)
    assert len(shell_result.stdout) + len(shell_result.stderr) <= box.limits.output_bytes + 200


def test_proc_shows_only_the_sandbox(box):
    inside = box.run("ls /proc | grep -c '^[0-9]'; cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' '", timeout=10).text()
    count, cmdlines = inside.split("\n", 1)
    assert int(count) < 10 and "pytest" not in cmdlines and "dockerd" not in cmdlines
    assert box.run(f"cat /proc/{os.getpid()}/cmdline 2>/dev/null | grep -c pytest", timeout=10).stdout in (b"0\n", b"")
    for private in ("/proc/1/environ", "/proc/1/fd/0", "/proc/1/fd/1", "/proc/1/mem"):
        assert box.run(f"cat {private} > /dev/null 2>&1 || echo denied", timeout=10).stdout == b"denied\n", private
    assert b"denied" in box.run("echo '{\"ok\": true}' > /proc/1/fd/1 2>/dev/null || echo denied", timeout=10).stdout


def test_no_privileges_to_gain(box):
    status = box.run("grep -E '^(NoNewPrivs|CapEff|Uid)' /proc/self/status", timeout=10).stdout.decode()
    assert "NoNewPrivs:\t1" in status and "CapEff:\t0000000000000000" in status and "\t1000\t" in status
    assert box.run("su -c id root < /dev/null 2>/dev/null || echo refused", timeout=10).stdout.endswith(b"refused\n")


def test_udp_to_host_loopback_never_arrives(box):
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("0.0.0.0", 0))
    server.settimeout(1.0)
    port = server.getsockname()[1]
    probe = ("import socket, sys\nfor host in sys.argv[2:]:\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
             "    try:\n        s.sendto(b'canary', (host, int(sys.argv[1]))); print('sent', host)\n"
             "    except OSError as e:\n        print('blocked', host, e.errno)")
    try:
        out = box.run(["python3", "-c", probe, str(port), "127.0.0.1", _host_address(), "172.17.0.1"], timeout=30).text()
        with pytest.raises(socket.timeout):
            server.recvfrom(64)  # loopback inside the sandbox is its own (or absent): nothing reaches the host
    finally:
        server.close()
    assert out.count("blocked") + out.count("sent 127.0.0.1") == 3, out


def test_ipv6_loopback_service_on_the_host_is_unreachable(box):
    server = socket.socket(socket.AF_INET6)
    server.bind(("::1", 0))
    server.listen(4)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    probe = ("import socket, sys\ns = socket.socket(socket.AF_INET6); s.settimeout(2)\ntry:\n"
             "    s.connect(('::1', int(sys.argv[1]))); print('CONNECTED')\nexcept OSError as e:\n"
             "    print('blocked', e.errno)")
    try:
        out = box.run(["python3", "-c", probe, str(port)], timeout=30).text()
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()
    assert out.startswith("blocked"), out


def test_unix_socket_files_of_host_services_are_unreachable(box, tmp_path):
    path = tmp_path / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(0.5)
    probe = ("import socket, sys\nfor p in sys.argv[1:]:\n    s = socket.socket(socket.AF_UNIX)\n    try:\n"
             "        s.connect(p); print('CONNECTED', p)\n    except OSError as e:\n        print('blocked', e.errno)")
    sockets = [str(path), "/run/docker.sock", "/var/run/docker.sock", "/run/systemd/private", "/run/dbus/system_bus_socket",
               "/tmp/.X11-unix/X0"]
    try:
        out = box.run(["python3", "-c", probe, *sockets], timeout=30).text()
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()
    assert "CONNECTED" not in out and out.count("blocked") == len(sockets), out


def test_ptrace_cannot_reach_the_supervisor_or_a_sibling(box):
    probe = ("import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True)\n"
             "for pid in map(int, sys.argv[1:]):\n    r = libc.ptrace(16, pid, 0, 0)\n"
             "    print(pid, r, ctypes.get_errno())")
    out = box.run(f"sleep 30 & python3 -c '{probe}' 1 $!; kill %1", timeout=20).stdout.decode().splitlines()
    assert len(out) == 2 and all(line.split()[1:] == ["-1", "1"] for line in out), out  # EPERM for both
    mem = box.run("python3 -c \"open('/proc/1/mem', 'rb')\" 2>&1 | tail -n 1", timeout=10).stdout
    assert b"PermissionError" in mem


@pytest.mark.parametrize("plant", ["mkfifo /work/target", "python3 -c \"import socket; "
                                   "socket.socket(socket.AF_UNIX).bind('/work/target')\"",
                                   "ln -s /dev/zero /work/target", "ln -s /dev/tty /work/target", "mkdir /work/target"])
def test_special_files_are_refused_without_blocking(box, plant):
    assert box.run(plant, timeout=10).exit_code == 0
    for attempt in (lambda: box.read_file("target"), lambda: box.write_file("target", b"x")):
        started = time.monotonic()
        with pytest.raises(SandboxError, match="not a regular file|Is a directory|No such device"):
            attempt()
        assert time.monotonic() - started < 5
    assert box.alive and box.run("echo alive", timeout=10).stdout == b"alive\n"
    box.write_file("regular", b"still fine")
    assert box.read_file("regular") == b"still fine"


def test_host_tree_is_byte_identical_after_the_suite(host_tree):
    _, watched, before = host_tree
    assert digest(watched) == before


def _host_address() -> str:
    """The host's main IPv4 address (the source address of its default route; no packet is sent)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))
        return probe.getsockname()[0]
    except OSError:
        return "127.0.0.2"
    finally:
        probe.close()
