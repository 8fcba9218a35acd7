"""The seccomp filter (sandboxes/seccomp.py) on both real backends: denied calls fail, ordinary work still works.

The probe calls each system call by number through ctypes inside the sandbox, with harmless arguments:
a call the filter lets through reaches the kernel and fails with its own errno (EFAULT, EINVAL, EBADF…) or
succeeds, so only EPERM/ENOSYS from the filter count as denied, and the probe tells them apart by checking
that the allowed control calls do *not* come back as EPERM.
"""

from __future__ import annotations

import errno
import json
import platform

import pytest

from sandboxes import seccomp

PROBE = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}
for name, nr, args in json.loads(sys.argv[1]):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    out[name] = 0 if result >= 0 else ctypes.get_errno()
print(json.dumps(out))
"""
BAD = 1 << 46  # an unmapped address: a call that reaches the kernel fails with EFAULT, harmlessly


def _calls() -> list[tuple[str, int, list[int]]]:
    numbers = seccomp.ARCHES[platform.machine()][2]
    calls = [(name, numbers[name], [BAD, BAD, BAD, BAD, BAD, BAD]) for name in seccomp.DENIED if name in numbers]
    ns = seccomp.NAMESPACE_FLAGS
    calls += [
        ("clone3", numbers["clone3"], [BAD, 88]),
        ("unshare(NEWUSER)", numbers["unshare"], [ns["CLONE_NEWUSER"]]),
        ("unshare(NEWNS)", numbers["unshare"], [ns["CLONE_NEWNS"]]),
        ("unshare(NEWNET)", numbers["unshare"], [ns["CLONE_NEWNET"]]),
        ("clone(NEWPID)", numbers["clone"], [ns["CLONE_NEWPID"] | 17, BAD, 0, 0, 0]),
        ("personality(ADDR_NO_RANDOMIZE)", numbers["personality"], [0x0040000]),
        ("personality(READ_IMPLIES_EXEC)", numbers["personality"], [0x0400000]),
    ]
    controls = [  # allowed: must not come back EPERM
        ("unshare(FILES)", numbers["unshare"], [0x400]),
        ("personality(query)", numbers["personality"], [0xFFFFFFFF]),
        ("personality(PER_LINUX)", numbers["personality"], [0]),
    ]
    return calls + controls


def test_every_denied_call_fails_inside(box):
    result = box.run(["python3", "-c", PROBE, json.dumps(_calls())], timeout=30)
    assert result.exit_code == 0, result.text()
    seen = json.loads(result.stdout)
    for name in seccomp.DENIED:
        if name in seccomp.ARCHES[platform.machine()][2]:
            if box.backend == "docker" and name in seccomp.NEWER_THAN_DOCKER:
                assert seen[name] != 0, name  # not filtered there, but refused by the kernel (no capability)
                continue
            assert seen[name] in (errno.EPERM, errno.ENOSYS), (name, errno.errorcode.get(seen[name]))
    assert seen["clone3"] == errno.ENOSYS
    for name in ("unshare(NEWUSER)", "unshare(NEWNS)", "unshare(NEWNET)", "clone(NEWPID)",
                 "personality(ADDR_NO_RANDOMIZE)", "personality(READ_IMPLIES_EXEC)"):
        assert seen[name] == errno.EPERM, (name, seen[name])
    for name in ("unshare(FILES)", "personality(query)", "personality(PER_LINUX)"):
        assert seen[name] == 0, (name, errno.errorcode.get(seen[name]))


def test_io_uring_and_ptrace_are_denied_to_real_programs(box):
    probe = ("import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
             "params = ctypes.create_string_buffer(120); "
             "print(libc.syscall(425, 8, params), os.strerror(ctypes.get_errno()))")  # io_uring_setup, valid args
    assert box.run(["python3", "-c", probe], timeout=10).stdout == b"-1 Operation not permitted\n"
    # ptrace a sibling of our own uid (the shell): without the filter PTRACE_ATTACH on it would succeed.
    attach = ("sleep 30 & victim=$!; python3 -c \"import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True); "
              "r = libc.ptrace(16, int(sys.argv[1]), 0, 0); print(r, os.strerror(ctypes.get_errno()))\" $victim; "
              "kill $victim")
    assert box.run(attach, timeout=20).stdout == b"-1 Operation not permitted\n"
    assert b"Seccomp:\t2" in box.run("grep Seccomp: /proc/self/status", timeout=10).stdout  # filter mode


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the x32 ABI exists on x86_64 only")
def test_foreign_abi_calls_kill_the_process(box):
    x32_getpid = "import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 39); print('survived')"
    result = box.run(["python3", "-c", x32_getpid], timeout=10)
    assert result.exit_code == 128 + 31 and b"survived" not in result.stdout  # SIGSYS


def test_ordinary_work_still_works(box):
    script = r"""
set -e
cat > hello.c <<'EOF'
#include <stdio.h>
#include <pthread.h>
static void *work(void *arg) { return arg; }
int main(void) { pthread_t t; pthread_create(&t, 0, work, 0); pthread_join(t, 0); puts("c ok"); return 0; }
EOF
gcc -O1 -pthread -o hello hello.c && ./hello
python3 -c "import threading, subprocess, multiprocessing as mp
t = threading.Thread(target=print, args=('thread ok',)); t.start(); t.join()
print(subprocess.run(['echo', 'subprocess ok'], capture_output=True, text=True).stdout.strip())
with mp.Pool(2) as pool: print('pool ok', sum(pool.map(abs, [-1, -2])))"
git init -q repo && cd repo && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x && git log --oneline | wc -l
cd .. && printf 'def test_one():\n    assert 1 + 1 == 2\n' > test_x.py && python3 -m pytest -q test_x.py 2>&1 | tail -n 1
set -m; sleep 0.2 & jobs | grep -c sleep; wait; echo jobs ok
"""
    result = box.run(script, timeout=120)
    out = result.stdout.decode()
    assert result.exit_code == 0, result.text()
    for expected in ("c ok", "thread ok", "subprocess ok", "pool ok 3", "1 passed", "jobs ok"):
        assert expected in out, (expected, result.text())
    shell = box.open_shell()
    assert shell.run("sleep 0.1 & wait %1; echo $?", timeout=10).stdout == b"0\n"


def test_the_docker_profile_says_what_the_filter_says():
    profile = json.loads(seccomp.docker_profile("x86_64"))
    denied = {name for rule in profile["syscalls"] if "args" not in rule and rule["errnoRet"] == errno.EPERM
              for name in rule["names"]}
    assert denied == set(seccomp.DENIED) and profile["defaultAction"] == "SCMP_ACT_ALLOW"
    unshare_bits = {rule["args"][0]["valueTwo"] for rule in profile["syscalls"] if rule["names"] == ["unshare"]}
    assert unshare_bits == set(seccomp.NAMESPACE_FLAGS.values())
    assert len(seccomp.bpf_program("x86_64")) % 8 == 0 and len(seccomp.bpf_program("aarch64")) % 8 == 0
    with pytest.raises(seccomp.SandboxUnavailable, match="supports"):
        seccomp.bpf_program("riscv64")
