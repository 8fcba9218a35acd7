"""``BwrapSandbox(binds=...)``: host directories over the root's (a task's prebuilt ``/opt``, issue 31 §5)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from sandbox_backends import require_backend

import sandboxes


@pytest.fixture
def tool_dir():
    """A world-traversable host directory holding ``tools/greet`` (bwrap runs as nobody under root)."""
    base = Path(tempfile.mkdtemp(prefix="agentgym-binds-test-"))
    os.chmod(base, 0o755)
    (base / "tools").mkdir(mode=0o755)
    (base / "tools" / "greet").write_text("#!/bin/sh\necho hi\n")
    os.chmod(base / "tools" / "greet", 0o755)
    yield base
    shutil.rmtree(base)


def test_a_read_only_bind_is_visible_unwritable_and_survives_reset(tool_dir):
    require_backend("bwrap")
    with sandboxes.make("bwrap", binds=[(str(tool_dir), "/opt", False)]) as box:
        assert box.run("/opt/tools/greet", timeout=10).stdout == b"hi\n"
        attempt = box.run("echo evil > /opt/tools/greet; touch /opt/new", timeout=10)
        assert attempt.exit_code != 0 and b"Read-only file system" in attempt.stderr
        box.reset()
        assert box.run("/opt/tools/greet; ls /opt", timeout=10).stdout == b"hi\ntools\n"
    assert (tool_dir / "tools" / "greet").read_text() == "#!/bin/sh\necho hi\n"


def test_a_writable_bind_keeps_what_a_build_writes(tool_dir):
    require_backend("bwrap")
    if os.getuid() == 0:
        os.chown(tool_dir / "tools", 65534, 65534)  # whom bwrap runs as under root
    with sandboxes.make("bwrap", binds=[(str(tool_dir), "/opt", True)]) as box:
        assert box.run("echo built > /opt/tools/out", timeout=10).ok
    assert (tool_dir / "tools" / "out").read_text() == "built\n"


@pytest.mark.parametrize("bind", [("/nonexistent-dir", "/opt", False), ("/tmp", "relative", False),
                                  ("/tmp", "/proc", False), ("/tmp", "/", True)])
def test_a_bad_bind_is_refused_before_anything_starts(bind):
    require_backend("bwrap")
    with pytest.raises(ValueError, match="a bind needs a host directory and an absolute sandbox directory"):
        sandboxes.make("bwrap", binds=[bind])
