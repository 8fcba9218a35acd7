"""Where the sandbox userland comes from, and whether each backend can run here (with the fix when not).

Both real backends run the same Debian root filesystem, built once by ``scripts/setup_sandboxes.sh``
(debootstrap from the Debian mirror; no image registry is assumed): bubblewrap mounts it read-only as
``/``, Docker runs it as the image ``agentgym/base:1`` (the rootfs loaded with ``docker import`` plus a
small Dockerfile). A task behaves the same on both. Without the rootfs, bubblewrap falls back to the
host's own ``/usr`` and ``/etc`` (read-only), which is fine for commands but not for task parity.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tarfile
import threading
from functools import cache
from pathlib import Path
from typing import Any

from .base import SandboxUnavailable

ROOTFS = Path(os.environ.get("AGENTGYM_ROOTFS", "/var/lib/agentgym/rootfs"))
BASE_IMAGE = os.environ.get("AGENTGYM_IMAGE", "agentgym/base:1")
CONTAINER_LABEL = "org.agentgym.sandbox"
OFFLINE_DOCKERFILE = ".agentgym.Dockerfile"
SETUP_HINT = ("run `sudo bash scripts/setup_sandboxes.sh` (installs bubblewrap and docker.io, starts dockerd, "
              "builds the image)")
#: What tasks may rely on (kept in sync with scripts/setup_sandboxes.sh). The first line serves the shipped
#: tasks; the second is the toolset that imported Terminal-Bench and Harbor tasks expect of the python,
#: ubuntu and debian base images they are mapped from (docs/terminal.md).
ROOTFS_PACKAGES = ("python3", "python3-pytest", "git", "gcc", "libc6-dev", "make", "procps", "psmisc", "jq", "gawk",
                   "bc", "file", "patch", "xz-utils", "bzip2", "zip", "unzip", "less",
                   "python3-pip", "python3-venv", "python-is-python3", "curl", "ca-certificates", "openssl", "sqlite3",
                   "xxd", "g++", "wget", "tmux")

_client_lock = threading.Lock()
_client: Any = None


def rootfs() -> Path | None:
    """The shared root filesystem when it has been built, else ``None``."""
    return ROOTFS if (ROOTFS / ".agentgym-rootfs").is_file() else None


@cache
def rootfs_packages() -> frozenset[str]:
    """Debian packages installed in the shared rootfs (from its dpkg status), or ROOTFS_PACKAGES without one.

    Both backends run that rootfs, so this is what an imported task's ``apt-get install`` would find.
    """
    status = ROOTFS / "var/lib/dpkg/status"
    if rootfs() is None or not status.is_file():
        return frozenset(ROOTFS_PACKAGES)
    names, name = set(), ""
    for line in status.read_text(errors="replace").splitlines():
        if line.startswith("Package: "):
            name = line[9:].strip()
        elif line.startswith("Status: ") and line.endswith(" installed"):
            names.add(name.split(":")[0])
    return frozenset(names)


@cache
def python_distributions() -> frozenset[str]:
    """Python distributions the rootfs's ``python3`` can import (normalised names: lower case, ``_``)."""
    found = {"pip", "pytest", "setuptools"}
    if rootfs() is not None:
        for meta in (ROOTFS / "usr/lib/python3/dist-packages").glob("*.*-info"):
            found.add(meta.name.split("-")[0])
    return frozenset(re.sub(r"[-_.]+", "_", name).lower() for name in found)


def bwrap_problem() -> str | None:
    """Why bubblewrap cannot run here, or ``None`` when it can."""
    if shutil.which("bwrap") is None:
        return f"bubblewrap is not installed (`bwrap` not on PATH); {SETUP_HINT}"
    return None


def docker_client() -> Any:
    """One shared Docker SDK client (the SDK's connection pool is safe to share between threads)."""
    global _client
    with _client_lock:
        if _client is None:
            try:
                import docker
            except ImportError as e:
                raise SandboxUnavailable("the `docker` Python package is missing: pip install docker") from e
            try:
                client = docker.from_env(timeout=120)
                client.ping()
            except Exception as e:  # the SDK raises several types for "no engine"
                message = f"no Docker engine is reachable ({type(e).__name__}: {e}); {SETUP_HINT}"
                raise SandboxUnavailable(message) from e
            _client = client
        return _client


@cache
def _image_present(image: str) -> bool:
    import docker

    try:
        docker_client().images.get(image)
        return True
    except docker.errors.ImageNotFound:
        return False


def docker_problem(image: str = BASE_IMAGE) -> str | None:
    """Why the Docker backend cannot run ``image`` here, or ``None`` when it can."""
    try:
        docker_client()
    except SandboxUnavailable as e:
        return str(e)
    if not _image_present(image):
        _image_present.cache_clear()
        return f"the image {image} is not built; {SETUP_HINT}"
    return None


def build_image(context: Path, *, name: str, dockerfile: str = "Dockerfile", text: str | None = None) -> str:
    """Build a task's own image locally (tagged by a hash of its build context, so rebuilding is skipped).

    ``text``, when given, is the Dockerfile to build instead of the context's ``dockerfile`` (an imported
    task's Dockerfile rewritten for offline use); it is part of the hash. Builds run without network
    (``network_mode="none"``): the sandboxes have none, and no registry is assumed.
    Raises :class:`SandboxUnavailable` with the build log's tail when the build fails — typically a
    ``FROM`` image that is not present locally while no registry is reachable.
    """
    import docker

    client = docker_client()
    try:  # rebuilt when the base image changes too (task images usually start FROM it)
        base_id = client.images.get(BASE_IMAGE).id
    except docker.errors.ImageNotFound:
        base_id = ""
    tag = f"agentgym/task-{_slug(name)}:{_context_hash(context, base_id + (text or ''))}"
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    try:
        source: dict[str, Any] = {"path": str(context), "dockerfile": dockerfile}
        if text is not None:
            source = {"fileobj": _context_tar(context, OFFLINE_DOCKERFILE, text), "custom_context": True,
                      "dockerfile": OFFLINE_DOCKERFILE}
        client.images.build(**source, tag=tag, rm=True, forcerm=True, pull=False, network_mode="none")
    except docker.errors.BuildError as e:
        log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in e.build_log)[-800:]
        raise SandboxUnavailable(f"building the image for {name} failed: {e.msg}\n{log}") from e
    except docker.errors.APIError as e:
        raise SandboxUnavailable(f"building the image for {name} failed: {e.explanation or e}") from e
    return tag


def _context_hash(context: Path, salt: str) -> str:
    digest = hashlib.sha256(salt.encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(context)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _context_tar(context: Path, name: str, text: str) -> io.BytesIO:
    """The build context as a tar, with ``text`` added as the Dockerfile ``name`` (symlinks kept as links)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(context.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(context)), recursive=False)
        data = text.encode()
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name.lower()).strip("-.")[:60] or "task"
