"""Imported Dockerfiles whose ``RUN`` lines write into system directories (issue 31 §5).

A Terminal-Bench task that installs a tool under ``/opt/tools/bin`` (``ENV PATH="/opt/tools/bin:${PATH}"``
then ``RUN mkdir -p /opt/tools/bin``) used to fail every reset with "Read-only file system": the RUN lines
were replayed at each reset on the read-only root. Now the Docker backend builds the task's offline-mapped
Dockerfile into an image, and bubblewrap runs the RUN lines once into a per-task tree bound read-only over
``/opt``; both are cached by content hash, and what could not be honoured is in the task's notes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from terminal_backends import REAL_BACKENDS, require_backend

from sandboxes import SandboxError

from agentgym_envs.terminal import TaskRefused, load_task_dir
from agentgym_envs.terminal.env import TerminalEnv

DOCKERFILE = """\
FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620
ENV PATH="/opt/tools/bin:${PATH}"
RUN apt-get update && apt-get install -y jq
RUN mkdir -p /opt/tools/bin
RUN printf '#!/bin/sh\\necho "hello, $1"\\n' > /opt/tools/bin/greet && chmod 755 /opt/tools/bin/greet
RUN pip install surely-not-in-the-image==1.0
WORKDIR /app
COPY names.txt /app/names.txt
RUN greet setup > /app/setup.txt
"""
TESTS = """\
import shutil
from pathlib import Path


def test_tool_on_path():
    assert shutil.which("greet") == "/opt/tools/bin/greet"


def test_setup_ran_once_the_tool_existed():
    assert Path("/app/setup.txt").read_text() == "hello, setup\\n"


def test_greetings():
    assert Path("/app/greetings.txt").read_text() == "hello, ada\\nhello, alan\\n"
"""


def write_task(root, name: str = "tools-on-path") -> Path:
    task_dir = root / name
    (task_dir / "tests").mkdir(parents=True)
    (task_dir / "task.yaml").write_text("instruction: Greet everyone in /app/names.txt into /app/greetings.txt.\n"
                                        "difficulty: easy\ncategory: tools\nmax_test_timeout_sec: 60\n")
    (task_dir / "Dockerfile").write_text(DOCKERFILE)
    (task_dir / "names.txt").write_text("ada\nalan\n")
    (task_dir / "run-tests.sh").write_text('#!/bin/bash\npython3 -m pytest -p no:cacheprovider "$TEST_DIR" -rA\n')
    (task_dir / "tests" / "test_outputs.py").write_text(TESTS)
    (task_dir / "solution.sh").write_text("#!/bin/bash\nwhile read -r n; do greet \"$n\"; done < /app/names.txt"
                                          " > /app/greetings.txt\n")
    return task_dir


def play(env: TerminalEnv, actions: list[str] | None):
    """Reset (no infra_error allowed) and play ``actions``, or the expert when None, until the end."""
    observation, info = env.reset(seed=0, options={"task_index": 0})
    while True:
        action = env.expert_action() if actions is None else (actions.pop(0) if actions else "submit")
        observation, reward, terminated, truncated, info = env.step(action)
        assert info["infra_error"] is None, observation
        if terminated or truncated:
            return observation, reward, info


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_run_lines_writing_system_directories_work_on_every_backend(backend, tmp_path):
    require_backend(backend)
    task = load_task_dir(write_task(tmp_path))
    env = TerminalEnv(tasks=[task], backend=backend)
    try:
        observation, reward, info = play(env, None)
        assert info["won"] and reward == 1.0, observation
        observation, reward, info = play(env, ["echo evil > /opt/tools/bin/greet; touch /opt/x"])
        assert not info["won"] and reward < 1.0, observation
        # whatever the agent did to /opt, the next episode starts from the built tool again
        env.reset(seed=0, options={"task_index": 0})
        step = env.step("greet again; cat /app/setup.txt; test -e /opt/x || echo no-x")
        assert step[0].startswith("hello, again\nhello, setup\nno-x"), step[0]
    finally:
        env.close()


def test_what_could_not_be_honoured_is_recorded(tmp_path):
    task = load_task_dir(write_task(tmp_path))
    notes = "\n".join(task.notes)
    assert "surely-not-in-the-image" in notes and "not in the image" in notes
    assert "skipped `apt-get update`" in notes
    assert task.image is None and task.prebuild is not None and task.prebuild.dirs == ("/opt",)
    require_backend("bwrap")
    env = TerminalEnv(tasks=[task], backend="bwrap")
    try:
        _, info = env.reset(seed=0, options={"task_index": 0})
        assert any("surely-not-in-the-image" in note for note in info["task_notes"])
    finally:
        env.close()


def test_bwrap_overlay_is_built_once_per_content(tmp_path, monkeypatch):
    require_backend("bwrap")
    from agentgym_envs.terminal import prebuilt

    overlays = Path(tempfile.mkdtemp(prefix="agentgym-overlays-test-"))  # bwrap (as nobody) must reach it
    os.chmod(overlays, 0o755)
    monkeypatch.setenv("AGENTGYM_OVERLAYS", str(overlays))
    try:
        check_built_once(tmp_path, prebuilt)
    finally:
        shutil.rmtree(overlays)
    if os.getuid() == 0:  # a cache bwrap cannot reach is refused with the reason, not a dead sandbox
        monkeypatch.setenv("AGENTGYM_OVERLAYS", str(tmp_path / "closed"))
        os.chmod(tmp_path, 0o700)
        with pytest.raises(SandboxError, match="closed to other users"):
            prebuilt.bwrap_overlay(load_task_dir(tmp_path / "tools-on-path"))


def check_built_once(tmp_path, prebuilt):
    task = load_task_dir(write_task(tmp_path))
    first = prebuilt.bwrap_overlay(task)
    stamp = os.stat(first.state).st_mtime_ns
    again = prebuilt.bwrap_overlay(load_task_dir(tmp_path / "tools-on-path"))
    assert again == first and os.stat(again.state).st_mtime_ns == stamp
    assert (first.tree / "opt/tools/bin/greet").read_bytes().startswith(b"#!/bin/sh")
    (tmp_path / "tools-on-path" / "names.txt").write_text("grace\n")
    changed = prebuilt.bwrap_overlay(load_task_dir(tmp_path / "tools-on-path"))
    assert changed.tree != first.tree


def test_docker_image_is_built_from_the_offline_dockerfile_once(tmp_path):
    require_backend("docker")
    from agentgym_envs.terminal import prebuilt

    task = load_task_dir(write_task(tmp_path))
    text = task.prebuild.dockerfile
    assert text.startswith("FROM agentgym/base:1\n") and "apt-get" not in text and "pip install" not in text
    tag = prebuilt.docker_image(task)
    assert tag.startswith("agentgym/task-terminal-bench-tools-on-path:")
    assert prebuilt.docker_image(load_task_dir(tmp_path / "tools-on-path")) == tag


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_a_build_that_cannot_be_honoured_refuses_the_task_once_with_the_reason(backend, tmp_path):
    """A RUN step that still fails offline fails the one build: refused at construction, not every episode."""
    require_backend(backend)
    task_dir = write_task(tmp_path)
    (task_dir / "Dockerfile").write_text(DOCKERFILE + "RUN curl -fsS https://example.invalid/tool -o /opt/tools/bin/x\n")
    broken, good = load_task_dir(task_dir), load_task_dir(write_task(tmp_path, "good"))
    with pytest.raises(TaskRefused, match=r"tools-on-path cannot run on the .* backend: .*(curl|example\.invalid|failed)"):
        TerminalEnv(tasks=[broken], backend=backend)
    env = TerminalEnv(tasks=[broken, good], backend=backend, skip_unavailable=True)
    try:
        assert len(env.tasks) == 1 and env.refused[0][0] == "terminal-bench/tools-on-path"
        assert play(env, None)[1] == 1.0
    finally:
        env.close()
