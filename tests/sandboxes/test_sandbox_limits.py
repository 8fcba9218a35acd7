"""Whole-sandbox limits (a cgroup on bubblewrap, the container's on Docker): the sum is bounded, not each process.

Before the cgroup, six processes of 700 MB under ``memory_mb=1024`` took 4.2 GB on bubblewrap: each stayed
under its own RLIMIT_AS. Now the sum stays under the limit, the kernel kills the offenders, and that is
the command's outcome (exit 137 and a note on stderr), never an exception.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sandbox_backends import require_backend

import sandboxes
from sandboxes import cgroup
from sandboxes.supervised import OOM_NOTE

OOM_NOTE_START = OOM_NOTE.split("(")[0].strip()

HOG = "python3 -c 'import time; x = bytearray({mb} << 20); x[::4096] = b\"x\" * len(x[::4096]); time.sleep({sleep})'"


def _peak_mb(box: sandboxes.SupervisedSandbox) -> float:
    """The sandbox cgroup's peak memory (bubblewrap: ours; Docker: the container's)."""
    if box.backend == "bwrap":
        directory = box._cgroup.dirs["memory"]
    else:
        directory = box._oom_file.parent
    name = "memory.max_usage_in_bytes" if (directory / "memory.max_usage_in_bytes").exists() else "memory.peak"
    return int((directory / name).read_text()) / (1 << 20)


@pytest.fixture(params=sandboxes.REAL_BACKENDS)
def small(request):
    require_backend(request.param)
    with sandboxes.make(request.param, memory_mb=1024) as box:
        yield box


def test_six_processes_share_one_memory_limit(small):
    result = small.run(" & ".join([HOG.format(mb=300, sleep=3)] * 6) + "; wait; echo finished", timeout=120)
    assert result.exit_code == 0 and b"finished" in result.stdout and not result.timed_out
    killed = len(re.findall(rb"Killed", result.stderr))
    assert 3 <= killed <= 4, result.text()  # 6 x 300 MB cannot all fit in 1024 MB; 2 or 3 can
    assert _peak_mb(small) <= small.limits.sandbox_memory_mb + 1
    assert small.run("echo alive", timeout=10).stdout == b"alive\n"


def test_an_oom_killed_command_is_the_commands_outcome(small):
    result = small.run(f"{HOG.format(mb=300, sleep=5)} & sleep 0.5; {HOG.format(mb=900, sleep=0)}", timeout=60)
    assert result.exit_code == 137 and not result.timed_out
    assert OOM_NOTE_START.encode() in result.stderr, result.text()
    shell = small.open_shell()
    shell_result = shell.run(HOG.format(mb=900, sleep=0) + " & " + HOG.format(mb=900, sleep=0) + "; wait", timeout=60)
    assert shell_result.exit_code in (0, 137)
    assert shell.run("echo alive", timeout=10).stdout == b"alive\n"


def test_filling_every_disk_leaves_the_supervisor_alive(backend):
    """RAM-backed files count against the sandbox's memory; the limit keeps room for the supervisor."""
    with sandboxes.make(backend, memory_mb=256, disk_mb=128) as box:
        assert box.limits.sandbox_memory_mb == 3 * 128 + 16 + 192
        fill = ("head -c 30M /dev/urandom > /work/data; "
                "for d in /work /tmp /home/agent /dev/shm; do head -c 200M /dev/zero > $d/fill; done")
        box.run(fill, timeout=60)
        hog = box.run(HOG.format(mb=150, sleep=0), timeout=60)
        assert hog.exit_code in (0, 137) and box.run("echo alive", timeout=10).stdout == b"alive\n"
        assert len(box.read_file("/work/data")) == 30 << 20  # the supervisor's largest answer still fits
        box.reset()
        assert box.run("df -m /work | tail -n 1", timeout=10).stdout.split()[2] == b"0"


def test_processes_are_bounded_for_the_whole_sandbox(backend):
    with sandboxes.make(backend, processes=40) as box:
        spawn = ("import subprocess\nstarted = []\nfor i in range(100):\n    try:\n"
                 "        started.append(subprocess.Popen(['sleep', '30']))\n    except OSError:\n        break\n"
                 "print(len(started))")
        started = int(box.run(["python3", "-c", spawn], timeout=60).stdout)
        assert 30 <= started < 40 and len(box.processes()) <= 40 + cgroup.EXTRA_PIDS
        box.kill_processes()
        assert box.run("echo alive", timeout=20).stdout == b"alive\n"


def test_cpu_bandwidth_is_bounded(backend):
    with sandboxes.make(backend, cpus=0.25) as box:
        spin = ("python3 -c \"import time; end = time.time() + 2\nwhile time.time() < end: pass\n"
                "print(time.process_time())\"")
        cpu_seconds = float(box.run(spin, timeout=30).stdout)
        assert cpu_seconds < 2 * 0.25 * 1.6, cpu_seconds  # 0.5 s allowed in 2 s, with scheduling slack


def test_the_cgroup_is_made_per_sandbox_and_removed_with_it():
    require_backend("bwrap")
    box = sandboxes.make("bwrap")
    first = dict(box._cgroup.dirs)
    procs = (first["memory"] / "cgroup.procs").read_text().split()
    assert procs and all(path.is_dir() for path in first.values())
    box.run("sleep 100 &", timeout=10)
    box._stop_channel()  # what a failed in-place reset does
    box._channel = box._launch()
    assert not any(path.exists() for path in first.values()) and box._cgroup.dirs != first
    second = dict(box._cgroup.dirs)
    box.close()
    assert not any(path.exists() for path in second.values())


def test_v1_and_v2_hierarchies_are_detected():
    v1_mounts = ("cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\ncgroup /sys/fs/cgroup/pids cgroup rw,pids 0 0\n"
                 "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n")
    found = cgroup.detect(v1_mounts, "4:memory:/job/7\n3:pids:/\n2:cpu,cpuacct:/\n0::/\n")
    assert found.version == 1
    assert found.parents["memory"] == Path("/sys/fs/cgroup/memory/job/7", cgroup.GROUP)
    assert found.parents["cpu"] == Path("/sys/fs/cgroup/cpu,cpuacct", cgroup.GROUP)
    v2 = cgroup.detect("cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n", "0::/user.slice\n")
    assert v2.version == 2 and set(v2.parents.values()) == {Path("/sys/fs/cgroup", cgroup.GROUP)}
    assert cgroup.detect("proc /proc proc rw 0 0\n", "") is None


def test_v2_limits_are_written_to_the_unified_files(tmp_path):
    """The v2 path on a directory laid out like a cgroup2 root (this machine runs v1)."""
    (tmp_path / "cgroup.subtree_control").write_text("")
    hierarchy = cgroup.Hierarchy(2, dict.fromkeys(cgroup.CONTROLLERS, tmp_path / cgroup.GROUP))
    (tmp_path / cgroup.GROUP).mkdir()
    (tmp_path / cgroup.GROUP / "cgroup.subtree_control").write_text("")
    made = cgroup.SandboxCgroup(sandboxes.Limits(memory_mb=512, disk_mb=64, processes=50, cpus=1.5), hierarchy)
    directory = made.dirs["memory"]
    assert (directory / "memory.max").read_text() == str(512 << 20)
    assert (directory / "pids.max").read_text() == str(50 + cgroup.EXTRA_PIDS)
    assert (directory / "cpu.max").read_text() == "150000 100000"
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    (directory / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n")
    assert made.oom_kills() == 2


def test_without_cgroups_the_sandbox_refuses_with_the_remedy():
    with pytest.raises(sandboxes.SandboxUnavailable, match="whole_sandbox_limits=False"):
        cgroup.SandboxCgroup(sandboxes.Limits(), cgroup.Hierarchy(1, dict.fromkeys(cgroup.CONTROLLERS,
                                                                                   Path("/proc/none/x"))))
