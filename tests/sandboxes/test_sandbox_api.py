"""The Sandbox protocol on both real backends: commands, files, limits, reset, shell sessions, recovery."""

from __future__ import annotations

import math
import os
import threading

import pytest
from sandbox_backends import require_backend

import sandboxes
from sandboxes import Limits, SandboxDied, SandboxError


def test_run_reports_streams_and_status(box):
    result = box.run("echo out; echo err >&2; exit 3", timeout=10)
    assert (result.stdout, result.stderr, result.exit_code, result.timed_out) == (b"out\n", b"err\n", 3, False)
    assert box.run(["printf", "%s|", "a b", "c"], timeout=10).stdout == b"a b|c|"
    assert 0 < result.duration_s < 10


def test_run_passes_stdin_cwd_and_env(box):
    assert box.run("tr a-z A-Z", timeout=10, stdin=b"hello").stdout == b"HELLO"
    box.run("mkdir -p /work/sub", timeout=10)
    result = box.run("pwd; echo $GREETING", timeout=10, cwd="/work/sub", env={"GREETING": "hi"})
    assert result.stdout == b"/work/sub\nhi\n"


def test_layout_user_and_read_only_root(box):
    text = box.run("id -u; pwd; echo $HOME; for d in /work /tmp /home/agent /dev/shm; do touch $d/x && echo w; done; "
                   "touch /x /usr/x /etc/x 2>/dev/null || echo ro", timeout=10).text()
    assert text == "1000\n/work\n/home/agent\nw\nw\nw\nw\nro\n"


def test_timeout_kills_the_command_and_its_children(box):
    result = box.run("sleep 300 & sleep 300", timeout=0.5)
    assert result.timed_out and result.exit_code == 137 and result.duration_s < 5
    assert box.run("pgrep -c sleep", timeout=10).stdout == b"0\n"


def test_output_is_bounded_with_a_marker(box):
    result = box.run("head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END", timeout=30)
    bound = box.limits.output_bytes
    assert len(result.stdout) < bound and result.truncated_bytes > 4_000_000
    assert b"bytes truncated]" in result.stdout and result.stdout.endswith(b"END\n")


def test_files_round_trip(box):
    data = bytes(range(256)) * 50
    box.write_file("deep/dir/blob.bin", data, mode=0o600)
    assert box.read_file("/work/deep/dir/blob.bin") == data
    assert box.run("stat -c '%a %U' deep/dir/blob.bin", timeout=10).stdout == b"600 agent\n"
    with pytest.raises(SandboxError, match="FileNotFoundError"):
        box.read_file("/work/missing")
    with pytest.raises(SandboxError, match="Read-only|Permission"):
        box.write_file("/usr/bin/evil", b"x")
    with pytest.raises(SandboxError, match="larger than"):
        box.read_file("deep/dir/blob.bin", max_bytes=10)


def test_reset_is_pristine(box):
    shell = box.open_shell()
    shell.run("cd /tmp && export X=1 && sleep 300 &", timeout=10)
    for path in ("/work/a", "/tmp/b", "/home/agent/.c", "/dev/shm/d"):
        box.write_file(path, b"x")
    box.reset()
    assert box.run("find /work /tmp /home/agent /dev/shm -mindepth 1", timeout=10).stdout == b""
    # ps alone (no pipeline whose members start concurrently): only the supervisor, the shell running ps, and ps.
    names = sorted(box.run("ps -e -o comm=", timeout=10).stdout.decode().split())
    assert names in (["bash", "ps", "python3"], ["ps", "python3"]), names
    with pytest.raises(SandboxError):
        shell.run("true", timeout=5)  # sessions do not survive a reset


def test_shell_session_keeps_state(box):
    shell = box.open_shell()
    shell.run("cd /tmp && X=42 && greet() { echo hi $1; }", timeout=10)
    result = shell.run("echo $X; greet you; false", timeout=10)
    assert (result.stdout, result.exit_code, result.cwd, result.restarted) == (b"42\nhi you\n", 1, "/tmp", None)
    assert shell.run("cat", timeout=10).stdout == b""  # stdin is /dev/null, never the protocol pipe


@pytest.mark.parametrize("command", ["exit 7", "exec bash", "kill -9 $$", "set -e; false", "break"])
def test_shell_recovers_when_the_shell_ends(box, command):
    shell = box.open_shell(cwd="/tmp")
    shell.run("cd /home/agent", timeout=10)
    result = shell.run(command, timeout=10)
    assert result.restarted == "exited" and result.cwd == "/home/agent"
    after = shell.run("echo alive; pwd", timeout=10)
    assert after.stdout == b"alive\n/home/agent\n" and after.restarted is None


def test_shell_timeout_spares_earlier_background_jobs(box):
    shell = box.open_shell()
    shell.run("sleep 300 >/dev/null 2>&1 & Y=kept", timeout=10)
    result = shell.run("sleep 30", timeout=0.5)
    assert result.timed_out and result.restarted is None
    assert shell.run("echo $Y; pgrep -c sleep", timeout=10).stdout == b"kept\n1\n"


def test_stuck_shell_is_restarted(box):
    shell = box.open_shell()
    shell.run("cd /tmp; Z=1", timeout=10)
    result = shell.run("while :; do :; done", timeout=0.5)
    assert result.timed_out and result.restarted == "stuck" and result.cwd == "/tmp"
    assert shell.run("echo ${Z:-unset}", timeout=10).stdout == b"unset\n"


def test_shell_takes_huge_and_binary_commands(box):
    shell = box.open_shell()
    assert shell.run(": " + "a" * (1 << 20), timeout=60).exit_code == 0
    assert shell.run("echo " + "b" * 100_000 + " | wc -c", timeout=60).stdout == b"100001\n"
    junk = bytes(range(1, 256)).decode("latin-1") * 20
    assert shell.run(junk, timeout=10).exit_code != 0  # a shell error, not a crash
    assert shell.run("echo a\x00b", timeout=10).stdout == b"ab\n"  # NUL cannot reach bash; it is dropped
    assert shell.run("echo fine", timeout=10).stdout == b"fine\n"


def test_dead_supervisor_raises_then_reset_recovers(backend):
    with sandboxes.make(backend) as fresh:
        fresh._terminate()  # what an OOM kill or a vanished container looks like from the host
        with pytest.raises(SandboxDied):
            fresh.run("true", timeout=5)
        with pytest.raises(SandboxDied, match="reset"):
            fresh.run("true", timeout=5)
        fresh.reset()
        assert fresh.run("echo back", timeout=10).stdout == b"back\n"


def test_concurrent_callers_are_serialised(box):
    outputs: list[bytes] = []

    def work(i: int) -> None:
        outputs.append(box.run(f"echo {i}", timeout=10).stdout)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outputs) == sorted(f"{i}\n".encode() for i in range(8))


@pytest.mark.parametrize("timeout", [0, -1, math.inf, math.nan, "5", True])
def test_bad_timeouts_are_rejected(box, timeout):
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        box.run("true", timeout=timeout)


def test_bad_arguments_are_rejected(box):
    with pytest.raises(ValueError, match="command must be"):
        box.run([], timeout=5)
    with pytest.raises(ValueError, match="NUL"):
        box.write_file("a\0b", b"")
    with pytest.raises(ValueError, match="backend must be one of"):
        sandboxes.make("chroot")
    with pytest.raises(ValueError, match="memory_mb must be at least 64"):
        Limits(memory_mb=10)
    with pytest.raises(ValueError, match="writable must be absolute"):
        Limits(writable=("work",))


def test_close_is_idempotent_and_final():
    require_backend("bwrap")
    box = sandboxes.make("bwrap")
    box.close()
    box.close()
    with pytest.raises(SandboxError, match="closed"):
        box.run("true", timeout=5)


def test_limits_reach_the_processes(backend):
    with sandboxes.make(backend, memory_mb=256, file_size_mb=1, open_files=64, cpu_seconds=7) as small:
        limits = small.run("ulimit -v; ulimit -f; ulimit -n; ulimit -t", timeout=10).stdout.split()
        assert limits == [str(256 * 1024).encode(), b"1024", b"64", b"7"]  # KiB, KiB blocks, fds, s
        assert small.run("head -c 2000000 /dev/zero > big", timeout=10).exit_code != 0
        assert int(small.run("stat -c %s big", timeout=10).stdout) == 1 << 20


def test_unsafe_backend_is_a_plain_temporary_directory():
    with sandboxes.make("unsafe") as box:
        workdir = box.run("pwd", timeout=10).stdout.decode().strip()
        assert os.path.isdir(workdir) and "agentgym-unsafe-" in workdir
        box.write_file("x.txt", b"1")
        assert os.path.exists(os.path.join(workdir, "x.txt"))
        shell = box.open_shell()
        assert shell.run("echo $((1 + 2))", timeout=10).stdout == b"3\n"
        box.reset()
        assert box.run("ls", timeout=10).stdout == b""
    assert not os.path.exists(workdir)
