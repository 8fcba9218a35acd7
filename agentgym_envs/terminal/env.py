"""The terminal env: an agent works in a live bash session inside a sandbox until it submits.

Action: a shell command, or a ``bash(command)`` / ``submit()`` tool call (JSON or call syntax). Each
command runs in the episode's persistent shell (cwd, variables, functions and files carry over) with a
wall-clock limit; the observation is its stdout, stderr (each clipped with a marker), notes (timeout,
shell restarted) and ``[exit code N] cwd$``. ``submit`` ends the episode: the task's tests run inside the
sandbox, reward = fraction passed, ``won`` = all passed. Other steps give reward 0.

Extra info keys: ``exit_code`` and ``cwd`` on command steps, ``tests`` (name → passed) on submit,
``task_id`` and ``task_notes`` (the import report: what of its Dockerfile was not honoured) on reset,
``sandbox_error`` when the sandbox refused an operation (below).

Whose failure is it? Everything an agent's command can reach is its own outcome, never ``infra_error``:

* the supervisor answered that an operation failed (``SandboxError`` that is not ``SandboxDied``: the
  disks the agent filled, the process table it filled, a work directory it made unreadable) — the
  sandbox works and its state is the agent's doing. A command step then observes the failure
  (``[the sandbox could not run this command: …]``, ``info["sandbox_error"]``) and the episode goes on;
  at submit the episode ends as a loss (reward 0, ``info["sandbox_error"]``);
* a shell the command killed, stopped or left without input, output or status pipes is restarted
  (``ShellResult.restarted``); commands over 64 KiB are delivered in pieces through the shell itself, not
  through a file in the agent-writable ``/tmp``, so a full ``/tmp`` cannot refuse them.

``infra_error`` (the episode truncated, not counted against the agent) is left for our own machinery:
the sandbox could not start or install the task (a fresh, pristine one, before the agent acted), or the
supervisor died or stopped answering (``SandboxDied``). The supervisor is shielded from the agent (the
sandbox's PID 1, non-dumpable, bounded reads and buffers, the agent's processes first in line for the
OOM killer), so an agent that can still cause ``SandboxDied`` has found a sandbox bug, which
tests/terminal/test_terminal_hardening.py exists to catch. The next ``reset`` starts a fresh sandbox.

Snapshots replay: ``get_state`` records the task and the commands run so far; ``set_state`` rebuilds a
pristine sandbox, installs the task and replays them. This reproduces the state exactly for commands that
are deterministic (everything in the shipped solutions; git dates are pinned), but not for commands that
read the clock, randomness or process ids — a live shell itself cannot be pickled. Likewise the same
command gives the same observation only when it is not racy: background jobs (`&`) writing to one stream
interleave in whatever order the kernel schedules them.
"""

from __future__ import annotations

import copy
import string
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

import sandboxes
from sandboxes import Limits, SandboxDied, SandboxError, ShellResult

from ..core.errors import InfraError, SnapshotError
from ..core.spaces import UnicodeText
from ..core.task_env import TaskEnv
from ..core.text_env import Step
from . import prebuilt
from .prebuilt import DEFAULT_WRITABLE
from .render import TOOLS, parse_action, render_result
from .task import CommandTests, TerminalTask, install

_SAMPLE_CHARS = string.ascii_letters + string.digits + " "
IMAGE_WRITABLE = ("/tmp", "/tests", "/logs", "/solution")
#: Commands whose UTF-8 form is longer are sent in pieces of this many characters (each under 64 KiB, the
#: supervisor's inline limit, even when every character is a quote and becomes four bytes).
PIECE_CHARS = 12_000
INLINE_BYTES = 60_000
RANDOM_COMMANDS = ("ls", "ls -la", "pwd", "find . -maxdepth 2 | head -n 20", "cat *.txt | head -n 20", "whoami",
                   "echo hello", "git status", "wc -l * | tail -n 1", "env | sort | head -n 5", "submit")


class TerminalEnv(TaskEnv):
    """Shell tasks in a sandbox; see the module docstring for actions, observations and rewards."""

    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Reply with exactly one shell command per turn (or a bash(command) tool call);':
            'Run exactly one shell command per turn;',
        'When the task is done, reply `submit`.': 'When the task is done, act with `submit`.',
        'reply `submit` when the task is done.': 'act with `submit` when the task is done.',
    }
    system_prompt: ClassVar[str] = (
        "You are working in a Linux bash shell to complete a task. Reply with exactly one shell command per "
        "turn (or a bash(command) tool call); you will see its output, exit code and working directory. "
        "The shell keeps its state between commands. There is no network. When the task is done, reply `submit`."
    )
    max_action_chars: ClassVar[int] = 1 << 20
    max_observation_chars: ClassVar[int] = 32_768
    snapshot_exclude: ClassVar[tuple[str, ...]] = (
        "tasks", "refused", "backend", "command_timeout", "_limits", "_backend_options", "_box", "_box_key", "_shell",
        "_prebuilds",
    )

    def __init__(
        self, tasks: Sequence[TerminalTask] | None = None, *, split: str = "all", difficulty: str | None = None,
        category: str | None = None, backend: str = "bwrap", command_timeout: float = 30.0,
        limits: Limits | None = None, skip_unavailable: bool = False, render_mode: str | None = None,
        **backend_options: Any,
    ):
        from .importers import usable_tasks
        from .tasks import builtin_tasks

        if backend not in sandboxes.REAL_BACKENDS:
            raise ValueError(f"backend must be one of {sandboxes.REAL_BACKENDS}, got {backend!r} (the unsafe backend "
                             "would run model commands on the host, and has no /work for the tasks)")
        chosen = builtin_tasks(split, difficulty, category) if tasks is None else list(tasks)
        usable, self.refused = usable_tasks(chosen, backend, skip_unavailable=skip_unavailable)
        super().__init__(usable, render_mode=render_mode)
        # Samples are plain words: random shell metacharacters (`&`, `|`) start concurrent processes whose
        # interleaved output no shell can reproduce, and sample() exists for checkers and baselines.
        self.action_space = UnicodeText(self.max_action_chars, sample_charset=_SAMPLE_CHARS)
        self.backend, self.command_timeout = backend, float(command_timeout)
        self._limits, self._backend_options = limits or Limits(), backend_options
        self._box: sandboxes.SupervisedSandbox | None = None
        self._box_key: tuple | None = None
        self._prebuilds: dict[tuple, str | prebuilt.Overlay] = {}
        self._shell: sandboxes.ShellSession | None = None
        self._history: list[str] = []
        self._expert_step = 0
        self._cwd = "/work"

    # ----------------------------------------------------------------- episode
    def first_observation(self, task: TerminalTask) -> str:
        return (f"{task.instruction}\n\n[You are in a bash shell in {task.workdir}. Run one command per turn; "
                f"reply `submit` when the task is done.]")

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        observation, info = super()._reset(options)
        self._history, self._expert_step, self._cwd = [], 0, self.task.workdir
        self._start_task()
        return observation, {**info, "task_notes": list(self.task.notes)}

    def _step(self, action: str) -> Step:
        kind, command = parse_action(action)
        if kind == "submit":
            return self._submit()
        self._history.append(command)
        solution = self.task.solution
        if self._expert_step < len(solution) and command == solution[self._expert_step]:
            self._expert_step += 1
        try:
            result = self._run_command(command)
        except SandboxDied as e:
            self._drop_box()
            raise InfraError(f"the {self.backend} sandbox failed: {e}") from e
        except SandboxError as e:  # the supervisor works and refused: the sandbox's state is the agent's doing
            observation = f"[the sandbox could not run this command: {e}]\n[exit code 126] {self._cwd}$"
            return Step(observation, info={"exit_code": 126, "cwd": self._cwd, "sandbox_error": str(e)})
        self._cwd = result.cwd
        info = {"exit_code": result.exit_code, "cwd": result.cwd}
        return Step(render_result(result, self.command_timeout), info=info)

    def _run_command(self, command: str) -> ShellResult:
        """Run ``command`` in the live shell; a long one is first assembled in a shell variable, piece by piece."""
        if len(command.encode("utf-8", "replace")) <= INLINE_BYTES:
            return self._shell.run(command, timeout=self.command_timeout)
        for start in range(0, len(command), PIECE_CHARS):
            piece = command[start : start + PIECE_CHARS].replace("'", "'\\''")
            operator = "=" if start == 0 else "+="
            result = self._shell.run(f"__agentgym_long{operator}'{piece}'", timeout=self.command_timeout)
            if result.restarted or result.timed_out or result.exit_code != 0:
                raise SandboxError("the shell lost the command while it was being delivered in pieces (it exited, "
                                   f"was stuck or refused an assignment: exit {result.exit_code}); it was not run")
        run = '__agentgym_run=$__agentgym_long; unset __agentgym_long; eval "$__agentgym_run"'
        return self._shell.run(run, timeout=self.command_timeout)

    def _submit(self) -> Step:
        try:
            if not isinstance(self.task.verifier, CommandTests):
                self._box.kill_processes()  # file-based verifiers: nothing the agent left may touch the tests
            report = self.task.verifier.verify(self._box, self.task)
        except SandboxDied as e:
            self._drop_box()
            raise InfraError(f"the {self.backend} sandbox failed while running the tests: {e}") from e
        except SandboxError as e:  # e.g. a test file could not be written where the agent filled the disk
            observation = f"Submitted.\nThe tests could not run in the sandbox as you left it (score 0.00): {e}"
            return Step(observation, reward=0.0, terminated=True, won=False, score=0.0,
                        info={"tests": {}, "sandbox_error": str(e)})
        return Step("Submitted.\n" + report.summary(), reward=report.score, terminated=True, won=report.won,
                    score=report.score, info={"tests": dict(report.results)})

    def expert_action(self) -> str:
        """The next command of the reference solution, then ``submit``."""
        solution = self.task.solution
        return solution[self._expert_step] if self._expert_step < len(solution) else "submit"

    def random_action(self, rng: np.random.Generator) -> str:
        """A harmless exploratory command (or, rarely, ``submit``): the random baseline."""
        return RANDOM_COMMANDS[int(rng.integers(len(RANDOM_COMMANDS)))]

    @property
    def tools(self) -> list[dict[str, Any]]:
        return copy.deepcopy(TOOLS)  # a consumer editing its copy cannot change the module's

    def as_tool_call(self, action: str) -> dict[str, Any]:
        """A command as the ``bash(command)`` call, ``submit`` as ``submit()``."""
        kind, command = parse_action(action)
        return {"name": "submit", "arguments": {}} if kind == "submit" else {"name": "bash", "arguments": {"command": command}}

    def state_key_material(self) -> str:
        """The task and the commands run so far: silent commands leave the last observation unchanged
        (``[exit code 0] /work$``), so the default key would merge different file-system states."""
        return "\x1f".join([self.task.id, *self._history])

    def metrics(self) -> dict[str, float]:
        return {"commands": float(len(self._history))}

    def close(self) -> None:
        self._drop_box()
        super().close()

    # ----------------------------------------------------------------- sandbox
    def _start_task(self) -> None:
        """A pristine sandbox with the task installed and a live shell in its work directory."""
        try:
            box = self._sandbox_for(self.task)
            self._install(self.task, box)
            self._shell = box.open_shell(cwd=self.task.workdir, env=dict(self.task.env))
        except SandboxError as e:
            self._drop_box()
            raise InfraError(f"the {self.backend} sandbox failed while starting task {self.task.id}: {e}") from e

    def _sandbox_for(self, task: TerminalTask) -> sandboxes.SupervisedSandbox:
        """Reuse the sandbox (reset to pristine) when the task needs the same kind, else start another."""
        key = self._sandbox_key(task)
        if self._box is not None and self._box_key == key:
            self._box.reset()
            return self._box
        self._drop_box()
        extra, writable = key
        options = {**self._backend_options, **dict(extra)}
        self._box = sandboxes.make(self.backend, self._limits, writable=writable, **options)
        self._box_key = key
        return self._box

    def _sandbox_key(self, task: TerminalTask) -> tuple[tuple[tuple[str, Any], ...], tuple[str, ...]]:
        """The backend options and writable directories ``task`` needs (images and overlays built once)."""
        as_image = (("writable_root", True), ("run_as_root", True))
        built = self._prebuilt(task)
        if isinstance(built, prebuilt.Overlay):
            return (("binds", built.binds()),), prebuilt.writable_dirs(task)
        if built is not None:
            return (("image", built), *as_image), IMAGE_WRITABLE
        if task.image is None:
            return (), prebuilt.writable_dirs(task)
        from sandboxes.image import build_image

        tag = build_image(task.image.context, name=task.id, dockerfile=task.image.dockerfile)
        return (("image", tag), *as_image), IMAGE_WRITABLE

    def _prebuilt(self, task: TerminalTask) -> str | prebuilt.Overlay | None:
        """The task's prebuilt image (docker) or overlay (bwrap), when its RUN steps write system dirs."""
        if task.image is not None or task.prebuild is None:
            return None
        key = (task.id, task.prebuild, task.setup)  # two imports may share an id (a directory's name)
        if key not in self._prebuilds:
            self._prebuilds[key] = prebuilt.prepare(task, self.backend)
        return self._prebuilds[key]

    def _install(self, task: TerminalTask, box: sandboxes.SupervisedSandbox) -> None:
        """Files and setup; a prebuilt task's are in its image (docker) or its kept state (bwrap)."""
        built = self._prebuilt(task)
        if isinstance(built, prebuilt.Overlay):
            prebuilt.install_state(built, box, task)
        elif built is None:
            install(task, box)

    def _drop_box(self) -> None:
        box, self._box, self._box_key, self._shell = self._box, None, None, None
        if box is not None:
            box.close()

    # ----------------------------------------------------------------- snapshots (replay)
    def _set_state(self, state: Any) -> None:
        super()._set_state(state)
        if not self._episode_started or self._episode_over:
            return
        try:
            self._start_task()
            for command in self._history:
                try:
                    self._run_command(command)
                except SandboxDied:
                    raise
                except SandboxError:  # refused when it was first run too: the same observation, nothing to redo
                    pass
        except (InfraError, SandboxError) as e:
            raise SnapshotError(f"could not rebuild the sandbox for this snapshot: {e}") from e
