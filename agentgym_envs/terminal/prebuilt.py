"""Tasks whose Dockerfile ``RUN`` steps write system directories, built once per content (:class:`PrebuildSpec`).

An emulated task replays its ``RUN`` steps at every reset, into its writable directories. A step that
writes ``/opt``, ``/etc``, ``/usr/local`` or ``/var/…`` cannot be replayed there (the root is read-only,
as a pristine image must be), so such a task is built once and the build is reused by every episode:

* **docker**: the task's Dockerfile, rewritten for offline use (``FROM`` our base image, ``RUN`` through
  the offline rules), is built as an image tagged by a hash of it and its context
  (:func:`sandboxes.image.build_image`); episodes run it like any task image (its own root, replaced at
  each reset).
* **bwrap**: a per-task copy of each such directory is made from the rootfs, the task's files and setup
  run once in a sandbox where those copies are writable, and what the setup left in the writable
  directories (``/app``, ``/work``, ...) is kept as a tar. Episodes bind the copies read-only over the root's
  directories and unpack the tar at install instead of replaying the setup. The build lives under
  ``$AGENTGYM_OVERLAYS`` (default ``/var/lib/agentgym/overlays`` as root, ``~/.cache/agentgym/overlays``
  otherwise), in a directory named by a hash of everything that shapes it.

A build that fails refuses the task at construction, with the reason (``TerminalEnv.refused``), rather
than failing every episode.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

import sandboxes
from sandboxes import Limits, SandboxError
from sandboxes.image import ROOTFS, build_image, rootfs

from .task import TaskSetupError, TerminalTask, install

DEFAULT_WRITABLE = ("/work", "/tmp", "/home/agent")
STATE_BYTES = 32 << 20
"""Largest tar of the writable directories a build may leave (it is unpacked at every reset)."""
COPY_BYTES = 256 << 20
"""Largest system directory copied for a bwrap build."""
STATE_IN_SANDBOX = "/tmp/.agentgym-prebuilt.tar"
BWRAP_RUN_AS = 65534  # the user bwrap runs as when the host process is root (see BwrapSandbox)


@dataclass(frozen=True)
class Overlay:
    """A finished bwrap build: ``tree/<dir>`` for each overlaid directory and ``state``, the tar to unpack."""

    tree: Path
    state: Path
    dirs: tuple[str, ...]

    def binds(self) -> tuple[tuple[str, str, bool], ...]:
        return tuple((str(self.tree / d.lstrip("/")), d, False) for d in self.dirs)


def writable_dirs(task: TerminalTask) -> tuple[str, ...]:
    """The writable directories of an emulated task's sandbox (the env uses the same)."""
    return tuple(dict.fromkeys(DEFAULT_WRITABLE + task.writable))


def prepare(task: TerminalTask, backend: str) -> str | Overlay:
    """The docker image tag or the bwrap overlay for ``task``, built now unless already built."""
    return docker_image(task) if backend == "docker" else bwrap_overlay(task)


def docker_image(task: TerminalTask) -> str:
    """Build (once per content) the image of the task's offline-mapped Dockerfile; its tag."""
    return build_image(task.prebuild.context, name=task.id, text=task.prebuild.dockerfile)


def bwrap_overlay(task: TerminalTask) -> Overlay:
    """Build (once per content) the per-task directories and the setup's tar for bubblewrap."""
    root = overlay_root()
    final = root / _content_key(task)
    overlay = Overlay(final / "tree", final / "state.tar", task.prebuild.dirs)
    if overlay.state.is_file():
        return overlay
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
    try:
        _build(task, work)
        try:
            os.rename(work, final)
        except OSError:  # another process finished the same build first: theirs is as good as ours
            if not overlay.state.is_file():
                raise
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return overlay


def install_state(overlay: Overlay, box: sandboxes.SupervisedSandbox, task: TerminalTask) -> None:
    """Put the build's writable-directory state into a pristine sandbox (the replayed setup, without replay)."""
    box.write_file(STATE_IN_SANDBOX, overlay.state.read_bytes())
    result = box.run(["sh", "-c", f"tar -C / -xf {STATE_IN_SANDBOX}; status=$?; rm -f {STATE_IN_SANDBOX}; "
                      "exit $status"], timeout=task.timeout_s)
    if result.exit_code != 0:
        raise TaskSetupError(f"unpacking the prebuilt state of task {task.id} failed: {result.stderr[-500:]!r}")


def overlay_root() -> Path:
    """Where bwrap builds live; created world-traversable (bwrap, run as nobody by root, must reach them)."""
    default = ROOTFS.parent / "overlays" if os.getuid() == 0 else Path.home() / ".cache/agentgym/overlays"
    root = Path(os.environ.get("AGENTGYM_OVERLAYS") or default)
    root.mkdir(parents=True, exist_ok=True)
    if root.stat().st_uid != os.getuid():
        raise SandboxError(f"{root} belongs to another user: set AGENTGYM_OVERLAYS to a directory of yours")
    os.chmod(root, 0o755)
    closed = [p for p in root.resolve().parents if not p.stat().st_mode & stat.S_IXOTH]
    if os.getuid() == 0 and closed:
        raise SandboxError(f"bwrap runs as uid {BWRAP_RUN_AS} and cannot reach {root} ({closed[0]} is closed to "
                           "other users): set AGENTGYM_OVERLAYS to a directory under world-traversable ones")
    return root


def _build(task: TerminalTask, work: Path) -> None:
    """Copy the directories, run files + setup once with them writable, keep the writable dirs as a tar."""
    os.chmod(work, 0o755)
    for directory in task.prebuild.dirs:
        _copy_from_rootfs(directory, work / "tree" / directory.lstrip("/"))
    writable = writable_dirs(task)
    limits = Limits(writable=writable, output_bytes=STATE_BYTES)
    binds = [(str(work / "tree" / d.lstrip("/")), d, True) for d in task.prebuild.dirs]
    with sandboxes.make("bwrap", limits, binds=binds) as box:
        try:
            install(task, box)
        except TaskSetupError as e:
            raise TaskSetupError(f"building task {task.id} once (bwrap) failed: {e}") from e
        kept = [d.lstrip("/") for d in writable if d != "/tmp"]
        result = box.run(["tar", "-C", "/", "-cf", "-", *kept], timeout=task.timeout_s)
    if result.exit_code != 0 or result.truncated_bytes:
        why = f"over {STATE_BYTES >> 20} MiB" if result.truncated_bytes else result.stderr[-300:].decode(errors="replace")
        raise TaskSetupError(f"keeping the setup of task {task.id} failed: {why}")
    (work / "state.tar").write_bytes(result.stdout)
    _strip_special_bits(work / "tree")


def _copy_from_rootfs(directory: str, target: Path) -> None:
    """A private copy of the root's ``directory``, owned by whoever bwrap runs as (so the build can write it)."""
    base = rootfs() or Path("/")
    source = base / directory.lstrip("/")
    size = sum(p.lstat().st_size for p in source.rglob("*")) if source.is_dir() else 0
    if size > COPY_BYTES:
        raise SandboxError(f"the RUN steps write {directory}, too large to copy for a bwrap build "
                           f"({size >> 20} MiB); the docker backend builds the image instead")
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    else:
        target.mkdir(parents=True)
    owner = BWRAP_RUN_AS if os.getuid() == 0 else os.getuid()
    for path in [target, *target.rglob("*")]:
        os.lchown(path, owner, owner)


def _strip_special_bits(tree: Path) -> None:
    """A build may leave setuid files; the host keeps none in its cache (sandboxes mount binds nosuid anyway)."""
    for path in [tree, *tree.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & (stat.S_ISUID | stat.S_ISGID):
            os.chmod(path, stat.S_IMODE(mode) & ~(stat.S_ISUID | stat.S_ISGID))


def _content_key(task: TerminalTask) -> str:
    """A hash of everything that shapes a bwrap build: the task's files, setup, env, dirs and the rootfs."""
    marker = (rootfs() / ".agentgym-rootfs").read_bytes() if rootfs() is not None else b"host"
    shape = {
        "id": task.id, "setup": task.setup, "env": dict(task.env), "workdir": task.workdir,
        "dirs": task.prebuild.dirs, "writable": writable_dirs(task), "rootfs": hashlib.sha256(marker).hexdigest(),
        "files": {p: hashlib.sha256(c.encode() if isinstance(c, str) else c).hexdigest() for p, c in task.files.items()},
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:24]
