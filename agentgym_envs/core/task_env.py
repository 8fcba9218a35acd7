"""Task envs: a dataset of tasks plus a verifier.

A :class:`TaskEnv` is built on a finite task set per split. A task's ``instruction`` may be generic when the
real objective is only known once the episode starts (a generated game): put that in the reset info. It exposes ``num_tasks``;
``reset(options={"task_index": i})`` picks task ``i`` deterministically (evaluation and leaderboards
iterate tasks this way), and a plain ``reset(seed=s)`` draws a task with the env's own RNG.

The default episode is single-turn: the agent's action is its answer, the verifier scores it and the
episode ends. Multi-turn task envs override ``_step`` and call :meth:`TaskEnv.finish` when an answer is given.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence, overload

from .errors import SnapshotError
from .text_env import Step, TextEnv


@dataclass(frozen=True)
class Task:
    """One task: a stable id, the instruction shown to the agent, and whatever the verifier needs."""

    id: str
    instruction: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """A verifier's judgement of an answer: ``score`` in the env's reward bounds, ``won``, and feedback."""

    score: float
    won: bool
    feedback: str = ""


class LazyTasks(Sequence[Task]):
    """A task set whose tasks are built on demand from their index (large generated splits).

    Subclasses implement ``__len__`` and ``task(index)`` (``index`` already bounds-checked and non-negative);
    slicing and negative indices work as for a list.
    """

    def task(self, index: int) -> Task:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> Task: ...
    @overload
    def __getitem__(self, i: slice) -> list[Task]: ...
    def __getitem__(self, i: int | slice) -> Task | list[Task]:
        if isinstance(i, slice):
            return [self.task(j) for j in range(*i.indices(len(self)))]
        return self.task(range(len(self))[i])  # bounds check and negative indices


class TaskEnv(TextEnv):
    """Base class for envs defined by a task set and a verifier."""

    snapshot_exclude: ClassVar[tuple[str, ...]] = ("tasks",)

    def __init__(self, tasks: Sequence[Task], *, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        if not tasks:
            raise ValueError("a TaskEnv needs at least one task; got an empty task set")
        self.tasks = tasks
        self.task: Task = tasks[0]
        self.task_index = 0

    @property
    def num_tasks(self) -> int:
        return len(self.tasks)

    # ----------------------------------------------------------------- hooks
    def verify(self, task: Task, answer: str) -> Verdict:
        """Judge ``answer`` for ``task``."""
        raise NotImplementedError

    def first_observation(self, task: Task) -> str:
        """What the agent sees when the episode starts (the instruction by default)."""
        return task.instruction

    # ----------------------------------------------------------------- episode
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        index = options.get("task_index")
        if index is None:
            index = int(self.np_random.integers(self.num_tasks))
        try:
            index = operator.index(index)  # accepts numpy integers too
        except TypeError:
            raise ValueError(f"task_index must be an int in [0, {self.num_tasks}), got {index!r}") from None
        if not 0 <= index < self.num_tasks:
            raise ValueError(f"task_index must be an int in [0, {self.num_tasks}), got {index!r}")
        self.task_index, self.task = index, self.tasks[index]
        return self.first_observation(self.task), {"instruction": self.task.instruction, "task_id": self.task.id}

    def _step(self, action: str) -> Step:
        return self.finish(action)

    def finish(self, answer: str) -> Step:
        """Verify ``answer`` and end the episode with the verdict as reward and outcome."""
        verdict = self.verify(self.task, answer)
        observation = verdict.feedback or ("Correct." if verdict.won else "Incorrect.")
        return Step(observation, reward=verdict.score, terminated=True, won=verdict.won, score=verdict.score)

    def _get_state(self) -> Any:
        state = super()._get_state()
        state.pop("task", None)  # rebuilt from task_index so snapshots stay small
        state["_task_id"] = self.task.id  # checked on restore: the task set must be the same
        return state

    def _set_state(self, state: Any) -> None:
        index, task_id = state.get("task_index"), state.get("_task_id")
        if not isinstance(index, int) or not 0 <= index < self.num_tasks or self.tasks[index].id != task_id:
            raise SnapshotError(
                f"snapshot is of task {task_id!r} (index {index}), which this env's task set does not hold at that "
                "index; restore snapshots into an env made with the same split and options"
            )
        state = {k: v for k, v in state.items() if k != "_task_id"}
        super()._set_state(state)
        self.task = self.tasks[self.task_index]
