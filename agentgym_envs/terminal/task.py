"""Terminal tasks: what the sandbox starts with, the reference solution, and the verifier that scores it.

A :class:`TerminalTask` is data. :func:`install` puts it into a fresh sandbox (files, then the setup
script); after the agent submits, its ``verifier`` runs inside the same sandbox and returns a
:class:`GradeReport` whose ``score`` (fraction of tests passed) is the episode's reward. Three verifiers
cover the formats we run: shell-command tests (the shipped tasks), and, in :mod:`.verifiers`, pytest's
JUnit report (Terminal-Bench) and a reward file (Harbor).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sandboxes import SandboxError
from sandboxes.supervised import SupervisedSandbox

from ..core.task_env import Task

DIFFICULTIES = ("easy", "medium", "hard")
#: Fixed identity and clock for git, so commit hashes (and so observations) are the same in every rollout.
TASK_ENV = {
    "GIT_AUTHOR_NAME": "Agent", "GIT_AUTHOR_EMAIL": "agent@example.com", "GIT_AUTHOR_DATE": "2024-01-01T12:00:00Z",
    "GIT_COMMITTER_NAME": "Agent", "GIT_COMMITTER_EMAIL": "agent@example.com",
    "GIT_COMMITTER_DATE": "2024-01-01T12:00:00Z", "GIT_CONFIG_NOSYSTEM": "1", "EDITOR": "true", "PAGER": "cat",
    "GIT_PAGER": "cat",
}


class TaskSetupError(SandboxError):
    """A task's files or setup script failed: a bug in the task or a broken sandbox, never the agent."""


@dataclass(frozen=True)
class GradeReport:
    """Per-test outcomes and the score they give (``score`` is explicit: a reward file may give 0.5)."""

    results: dict[str, bool]
    score: float
    details: str = ""

    @property
    def won(self) -> bool:
        return self.score >= 1.0

    def summary(self) -> str:
        passed = sum(self.results.values())
        lines = [f"Tests passed: {passed}/{len(self.results)} (score {self.score:.2f})"]
        lines += [f"  {'PASS' if ok else 'FAIL'}  {name}" for name, ok in self.results.items()]
        return "\n".join(lines + ([self.details] if self.details else []))


class Verifier(Protocol):
    def verify(self, box: SupervisedSandbox, task: TerminalTask) -> GradeReport: ...


#: How a check is started: bash reads the check's text from its stdin, so no process's command line shows
#: the expected values to a program under test, then runs it with stdin at /dev/null.
CHECK_RUNNER = "IFS= read -r -d '' __agentgym_check; exec </dev/null; eval \"$__agentgym_check\""
#: Set for every check, over the task's environment: nothing the agent wrote under its home directory
#: (Python's user site and usercustomize, git's and jq's per-user config) can reach a check.
CHECK_ENV = {"HOME": "/nonexistent", "XDG_CONFIG_HOME": "/nonexistent", "GIT_CONFIG_GLOBAL": "/dev/null",
             "PYTHONNOUSERSITE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@dataclass(frozen=True)
class CommandTests:
    """Each test is a bash command run in the work directory after submit; it passes when it exits 0.

    The verdict is each check's exit status, as the supervisor reports it: no output is parsed. Every check
    is a fresh process started by the sandbox's supervisor (not the agent's shell, so none of its
    variables, functions or aliases), with the system ``PATH`` (read-only directories) and
    :data:`CHECK_ENV`. Checks run in the work directory because they inspect the files there, so a check
    that runs Python to judge them uses ``python3 -I`` (the work directory is then not on ``sys.path``:
    a planted ``json.py`` shadows nothing), and reference data lives in the check itself, never in a file
    the agent could rewrite.
    """

    tests: tuple[tuple[str, str], ...]

    def verify(self, box: SupervisedSandbox, task: TerminalTask) -> GradeReport:
        results, failures = {}, []
        env = {**task.env, **CHECK_ENV}
        for name, command in self.tests:
            result = box.run(["bash", "-c", CHECK_RUNNER], stdin=command.encode(), timeout=task.timeout_s,
                             cwd=task.workdir, env=env)
            results[name] = result.exit_code == 0 and not result.timed_out
            if not results[name]:
                why = f"timed out after {task.timeout_s:g} s" if result.timed_out else f"exit {result.exit_code}"
                failures.append(f"{name}: {why}")
        details = "Failed checks: " + "; ".join(failures) if failures else ""
        return GradeReport(results, sum(results.values()) / len(results), details)


@dataclass(frozen=True)
class ImageSpec:
    """A task's own image: a Docker build context, built locally (Docker backend only)."""

    context: Path
    dockerfile: str = "Dockerfile"
    reason: str = ""
    """Why the task needs a build (e.g. "uses RUN"), for refusal messages."""


@dataclass(frozen=True)
class PrebuildSpec:
    """An emulated Dockerfile whose ``RUN`` steps write system directories (``/opt``, ``/etc``, ``/usr/local``).

    Those cannot be replayed at each reset on a read-only root, so the steps run once per content
    (:mod:`.prebuilt`): the docker backend builds ``dockerfile`` (the task's Dockerfile rewritten for offline
    use: ``FROM`` our base image, ``RUN`` through the offline rules) into an image; bubblewrap runs the
    task's files and setup once into a per-task copy of each of ``dirs``, then binds it read-only.
    """

    context: Path
    dockerfile: str
    dirs: tuple[str, ...]


@dataclass(frozen=True)
class TerminalTask(Task):
    """One terminal task. ``files`` paths are relative to ``workdir`` unless absolute."""

    category: str = "misc"
    difficulty: str = "easy"
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    setup: str = ""
    solution: tuple[str, ...] = ()
    verifier: Verifier | None = None
    workdir: str = "/work"
    env: Mapping[str, str] = field(default_factory=lambda: dict(TASK_ENV))
    writable: tuple[str, ...] = ()
    """Directories besides /work, /tmp and the home directory that must be writable (e.g. /app)."""
    image: ImageSpec | None = None
    prebuild: PrebuildSpec | None = None
    """Set when the emulated RUN steps write system directories: built once per content, not at each reset."""
    timeout_s: float = 60.0
    """Wall-clock limit for the setup script and for each test."""
    source: str = "builtin"
    notes: tuple[str, ...] = ()
    """The import report: each rule applied while importing the task (see docs/terminal.md)."""

    def __post_init__(self) -> None:
        if self.difficulty not in DIFFICULTIES:
            raise ValueError(f"task {self.id}: difficulty must be one of {DIFFICULTIES}, got {self.difficulty!r}")
        if self.verifier is None:
            raise ValueError(f"task {self.id}: a verifier is required (CommandTests, PytestSummary or RewardFile)")


def make_task(
    id: str, category: str, difficulty: str, instruction: str, *, solution: list[str], tests: dict[str, str],
    files: dict[str, str | bytes] | None = None, setup: str = "",
) -> TerminalTask:
    """A shipped task in one call: ``tests`` maps a test's name to a bash command that exits 0 on success."""
    return TerminalTask(
        id=id, instruction=instruction.strip(), category=category, difficulty=difficulty, files=dict(files or {}),
        setup=setup.strip(), solution=tuple(solution), verifier=CommandTests(tuple(tests.items())),
    )


def install(task: TerminalTask, box: SupervisedSandbox) -> None:
    """Put ``task``'s starting state into a pristine sandbox: its files, then its setup script."""
    for path, content in task.files.items():
        data = content.encode() if isinstance(content, str) else content
        mode = 0o755 if path.endswith(".sh") else 0o644
        box.write_file(path if path.startswith("/") else f"{task.workdir}/{path}", data, mode=mode)
    if task.setup:
        result = box.run(["bash", "-euo", "pipefail", "-c", task.setup], timeout=task.timeout_s, cwd=task.workdir,
                         env=dict(task.env))
        if result.exit_code != 0:
            raise TaskSetupError(f"setup of task {task.id} failed (exit {result.exit_code}): {result.text()[-500:]}")
