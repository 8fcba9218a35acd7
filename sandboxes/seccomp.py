"""The sandbox's seccomp policy: one list of denied system calls, compiled for bubblewrap and for Docker.

Why: namespaces and dropped capabilities already stop most of these calls, but each is a large piece of
kernel code reachable from unprivileged processes (io_uring, bpf, perf_event_open, userfaultfd, keyctl)
or a way to inspect or tamper with another process of the sandbox (ptrace, process_vm_*), which is how
untrusted code would attack the supervisor or a trusted helper such as :class:`~sandboxes.runner.PythonRunner`'s
harness. Denying them shrinks the kernel surface an exploit can use.

The policy (the same on both backends; ``docs/sandboxes.md`` lists it):

- :data:`DENIED` fail with ``EPERM``; ``clone3`` fails with ``ENOSYS`` (its flags sit in memory, where a
  filter cannot read them, so C libraries fall back to ``clone``, whose flags the filter does check);
- ``clone`` and ``unshare`` fail with ``EPERM`` when asked for a new namespace (:data:`NAMESPACE_FLAGS`);
- ``personality`` fails with ``EPERM`` when it would switch off address randomisation or make data
  executable (:data:`PERSONALITY_FLAGS`); querying it (``0xffffffff``) still works;
- everything else is allowed. Processes of another architecture (32-bit x86 through ``int 0x80``, x32)
  are killed on bubblewrap and on Docker alike, and on bubblewrap calls numbered above the newest one this
  table knows (:data:`NEWEST_KNOWN`) fail with ``ENOSYS``, so a kernel upgrade adds no reachable call.

:func:`bpf_program` builds the classic-BPF program bubblewrap loads from ``--seccomp FD``;
:func:`docker_profile` writes the same policy as a Docker seccomp profile (JSON for ``security_opt``).
"""

from __future__ import annotations

import errno
import json
import platform
import struct

from .base import SandboxUnavailable

DENIED = (
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "kexec_load", "kexec_file_load", "reboot",
    "init_module", "finit_module", "delete_module",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd", "fanotify_init", "lookup_dcookie",
    "mount", "umount2", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "open_tree_attr",
    "mount_setattr", "pivot_root", "chroot", "setns",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "nfsservctl", "syslog", "vhangup",
    "open_by_handle_at", "name_to_handle_at",
    "settimeofday", "clock_settime", "clock_adjtime",
    "iopl", "ioperm", "uselib", "_sysctl", "ustat", "sysfs",
)
"""System calls that always fail with EPERM inside a sandbox."""

NEWER_THAN_DOCKER = ("open_tree_attr",)
"""Denied calls too new for the libseccomp of Docker 20.10 (which skips names it does not know): on Docker
they are not filtered, and stay refused by the kernel for want of a capability (``docs/sandboxes.md``)."""

ENOSYS_CALLS = ("clone3",)
NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000, "CLONE_NEWTIME": 0x00000080,
}
"""New-namespace flags refused to ``unshare`` and (all but CLONE_NEWTIME, whose bit is ``clone``'s exit signal) ``clone``."""
PERSONALITY_FLAGS = {"ADDR_NO_RANDOMIZE": 0x0040000, "MMAP_PAGE_ZERO": 0x0100000, "READ_IMPLIES_EXEC": 0x0400000}
"""``personality`` flags refused: each weakens memory protections that exploits have to defeat."""
_QUERY_BIT = 0x80000000  # set only by personality(0xffffffff), the query

# System call numbers (from the kernel's unistd tables) of the calls the filter names, per architecture.
_X86_64 = {
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "pidfd_getfd": 438, "kexec_load": 246,
    "kexec_file_load": 320, "reboot": 169, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "fanotify_init": 300, "lookup_dcookie": 212, "mount": 165, "umount2": 166, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428, "open_tree_attr": 467,
    "mount_setattr": 442, "pivot_root": 155, "chroot": 161, "setns": 308, "swapon": 167, "swapoff": 168,
    "acct": 163, "quotactl": 179, "quotactl_fd": 443, "nfsservctl": 180, "syslog": 103, "vhangup": 153,
    "open_by_handle_at": 304, "name_to_handle_at": 303, "settimeofday": 164, "clock_settime": 227,
    "clock_adjtime": 305, "iopl": 172, "ioperm": 173, "uselib": 134, "_sysctl": 156, "ustat": 136, "sysfs": 139,
    "clone3": 435, "clone": 56, "unshare": 272, "personality": 135,
}
_AARCH64 = {  # the generic table: the legacy calls above do not exist here
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "pidfd_getfd": 438, "kexec_load": 104,
    "kexec_file_load": 294, "reboot": 142, "init_module": 105, "finit_module": 273, "delete_module": 106,
    "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
    "fanotify_init": 262, "lookup_dcookie": 18, "mount": 40, "umount2": 39, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428, "open_tree_attr": 467,
    "mount_setattr": 442, "pivot_root": 41, "chroot": 51, "setns": 268, "swapon": 224, "swapoff": 225,
    "acct": 89, "quotactl": 60, "quotactl_fd": 443, "nfsservctl": 42, "syslog": 116, "vhangup": 58,
    "open_by_handle_at": 265, "name_to_handle_at": 264, "settimeofday": 170, "clock_settime": 112,
    "clock_adjtime": 266, "clone3": 435, "clone": 220, "unshare": 97, "personality": 92,
}
ARCHES = {  # machine -> (AUDIT_ARCH_*, Docker's name, numbers)
    "x86_64": (0xC000003E, "SCMP_ARCH_X86_64", _X86_64),
    "aarch64": (0xC00000B7, "SCMP_ARCH_AARCH64", _AARCH64),
}
NEWEST_KNOWN = 469  # file_setattr (Linux 6.17); the numbers above 400 are shared by every architecture
_X32_BIT = 0x40000000

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_ABS, _JEQ, _JGT, _JSET, _RET = 0x20, 0x15, 0x25, 0x45, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (args[0]'s low half on little-endian)


def _arch(machine: str | None) -> tuple[int, str, dict[str, int]]:
    machine = machine or platform.machine()
    if machine not in ARCHES:
        raise SandboxUnavailable(f"the sandbox's seccomp filter supports {sorted(ARCHES)}, got {machine!r}")
    return ARCHES[machine]


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _flag_check(nr: int, mask: int, *, skip_bit: int = 0) -> list[bytes]:
    """``nr`` with any bit of ``mask`` in its first argument fails with EPERM (unless ``skip_bit`` is set)."""
    body = [_insn(_LD_ABS, _ARG0)]
    if skip_bit:
        body.append(_insn(_JSET, skip_bit, 2, 0))
    body += [_insn(_JSET, mask, 0, 1), _insn(_RET, _ERRNO | errno.EPERM), _insn(_RET, _ALLOW)]
    return [_insn(_JEQ, nr, 0, len(body)), *body]


def bpf_program(machine: str | None = None) -> bytes:
    """The filter as bubblewrap's ``--seccomp FD`` reads it: an array of ``struct sock_filter``."""
    machine = machine or platform.machine()
    audit_arch, _, numbers = _arch(machine)
    deny_errno = _insn(_RET, _ERRNO | errno.ENOSYS)
    program = [_insn(_LD_ABS, _ARCH), _insn(_JEQ, audit_arch, 1, 0), _insn(_RET, _KILL_PROCESS), _insn(_LD_ABS, _NR)]
    if machine == "x86_64":
        program += [_insn(_JSET, _X32_BIT, 0, 1), _insn(_RET, _KILL_PROCESS)]
    for name in DENIED:
        if name in numbers:
            program += [_insn(_JEQ, numbers[name], 0, 1), _insn(_RET, _ERRNO | errno.EPERM)]
    for name in ENOSYS_CALLS:
        program += [_insn(_JEQ, numbers[name], 0, 1), deny_errno]
    clone_mask = sum(NAMESPACE_FLAGS.values()) & ~NAMESPACE_FLAGS["CLONE_NEWTIME"]
    program += _flag_check(numbers["clone"], clone_mask)
    program += _flag_check(numbers["unshare"], sum(NAMESPACE_FLAGS.values()))
    program += _flag_check(numbers["personality"], sum(PERSONALITY_FLAGS.values()), skip_bit=_QUERY_BIT)
    program += [_insn(_JGT, NEWEST_KNOWN, 0, 1), deny_errno, _insn(_RET, _ALLOW)]
    return b"".join(program)


def docker_profile(machine: str | None = None) -> str:
    """The same policy as a Docker seccomp profile (the JSON text ``security_opt=["seccomp=..."]`` takes)."""
    _, docker_arch, numbers = _arch(machine)

    def flag_rules(name: str, flags: dict[str, int], extra_mask: int = 0) -> list[dict]:
        return [{"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
                 "args": [{"index": 0, "value": bit | extra_mask, "valueTwo": bit, "op": "SCMP_CMP_MASKED_EQ"}]}
                for bit in flags.values()]

    clone_flags = {k: v for k, v in NAMESPACE_FLAGS.items() if k != "CLONE_NEWTIME"}
    rules = [
        {"names": [n for n in DENIED if n in numbers], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM},
        {"names": list(ENOSYS_CALLS), "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS},
        *flag_rules("clone", clone_flags), *flag_rules("unshare", NAMESPACE_FLAGS),
        *flag_rules("personality", PERSONALITY_FLAGS, _QUERY_BIT),
    ]
    return json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "architectures": [docker_arch], "syscalls": rules})


def syscall_number(name: str, machine: str | None = None) -> int:
    """The number of a system call this module names, on ``machine`` (for probes in tests)."""
    return _arch(machine)[2][name]
