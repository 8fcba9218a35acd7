"""HouseholdEnv: the ALFWorld-compatible household simulator behind the text-env contract.

Arguments (also ``gymnasium.make`` kwargs): ``split`` (``train`` 3,553 tasks, ``valid_seen`` 140,
``valid_unseen`` 134), ``task_type`` (one of the six ALFWorld types, or ``None`` for all), ``dense_reward``.

Episode: ``reset`` builds task ``i`` of the set (``options={"task_index": i}``, or an index drawn with
``self.np_random`` for a plain ``reset(seed=s)``); ``info["task_id"]`` is ``household/<split>/<index>``,
the same id in the all-types and the per-type envs. Each ``step`` is one ALFWorld command. The task's
:class:`~agentgym_envs.household.tasks.TaskSpec` and the :class:`~agentgym_envs.household.world.World`
are readable as ``env.unwrapped.task_spec`` and ``env.unwrapped.world`` (for analysis; not for agents);
``env.unwrapped.use_world(world, spec)`` goes on in a hand-built room (tests, replays of ALFWorld transcripts).

* Observations are ALFWorld's text (see :mod:`~agentgym_envs.household.render`); the first one ends with
  "Your task is to: <goal>". ``put X in/on Y`` is answered "You put the X in/on the Y." and the newer
  ALFWorld's ``move X to Y`` "You move the X to the Y.".
* ``info["valid_actions"]`` are the admissible commands in canonical form.
* An understood but inadmissible command (``take apple 9 from fridge 1`` with no such apple, ``open`` on
  a drawer that is open) is an invalid action with ALFWorld's observation "Nothing happens."; text that is
  no command at all is an invalid action whose observation starts "Nothing happens." too (ALFWorld's
  answer to anything it cannot carry out) and then lists the command forms. Neither ends the episode.
* Reward: 1.0 when the goal holds (``terminated``, ``won``). With ``dense_reward=True`` subgoals pay as
  documented in :mod:`~agentgym_envs.household.goals`; the return stays at most 1.0.
* ``info["metrics"]``: ``progress`` (fraction of subgoals reached so far, ``done`` included),
  ``subgoals_reached``, ``subgoals_total``; on reset also ``task_index``.
* ``state_key`` covers the task, the agent's place and hand, and every receptacle it has seen (door state,
  and contents once it has looked inside) with the visible state of those objects.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

from ..core import InvalidAction, LazyTasks, Step, Task, TaskEnv
from . import render
from .expert import detour_commands, expert_command, search_command
from .generate import build_world
from .goals import DONE, SUBGOALS, goal_met, instruction, subgoals_met
from .grammar import USAGE, format_command, is_move, parse, resolve
from .knowledge import Knowledge
from .tasks import EXAMINE, SPLITS, TaskSpec, task_indices
from .tasks import task_spec as spec_of
from .world import Command, World

SYSTEM_PROMPT = (
    "You are an agent in a household. Each turn, reply with exactly one command: go to X, open X, close X, "
    "take X from Y, put X in/on Y, clean X with Y, heat X with Y, cool X with Y, slice X with Y, use X, "
    "examine X, inventory or look. Names are numbered (apple 1, countertop 2). You can hold one object. "
    "Complete the task given after 'Your task is to:'."
)


class HouseholdTasks(LazyTasks):
    """The tasks of a split (optionally of one type), built on demand: indexing costs microseconds and
    the set holds no per-task data, so a 3,553-task split costs nothing to open."""

    def __init__(self, split: str, task_type: str | None = None):
        self.split, self.task_type = split, task_type

    @cached_property
    def indices(self) -> tuple[int, ...]:
        """Split indices of this set's tasks (a per-type set keeps the split's ids)."""
        return task_indices(self.split, self.task_type)

    def __len__(self) -> int:
        return len(self.indices)

    def task(self, index: int) -> Task:
        spec = spec_of(self.split, self.indices[index])
        return Task(spec.task_id, instruction(spec), {"spec": spec})


class HouseholdEnv(TaskEnv):
    """ALFWorld's six task types in a pure-Python room; see the module docstring."""

    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Each turn, reply with exactly one command:': 'Each turn, act with exactly one command:',
    }
    system_prompt: ClassVar[str] = SYSTEM_PROMPT
    #: ``tasks`` is static; the command tables are derived from ``world`` and rebuilt on restore.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("tasks", "_go_table", "_go_lists", "_local")

    def __init__(self, split: str = "train", task_type: str | None = None, dense_reward: bool = False,
                 expert: str = "oracle", render_mode: str | None = None):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        if expert not in ("oracle", "search"):
            raise ValueError(f"expert must be 'oracle' (knows where everything is) or 'search' (only what "
                             f"the agent has seen), got {expert!r}")
        super().__init__(HouseholdTasks(split, task_type), render_mode=render_mode)
        self.split, self.task_type, self.dense_reward, self.expert = split, task_type, bool(dense_reward), expert
        self.world: World | None = None
        self.task_spec: TaskSpec | None = None
        self.knowledge: Knowledge | None = None
        self._reached: set[str] = set()  # subgoals reached this episode
        self._paid = 0.0  # dense reward paid so far this episode
        self._picked_up = False  # a take succeeded this episode (ends the expert's detours)
        # Command tables, so that a step costs a dict lookup instead of re-deriving every command:
        self._go_table: dict[str, Command] = {}  # "go to X" for every receptacle (fixed per episode)
        self._go_lists: dict[str | None, list[str]] = {}  # location -> its go-tos (built on demand)
        self._local: dict[str, Command] = {}  # the other admissible commands, now

    # ----------------------------------------------------------------- episode
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        _, info = super()._reset(options)
        self.task_spec = self.task.data["spec"]
        self.world = build_world(self.task_spec)
        self.knowledge = Knowledge(self.world)
        self._reached, self._paid, self._picked_up = set(), 0.0, False
        self._build_tables()
        info["metrics"] = {**self._metrics(), "task_index": float(self.task_index)}
        return render.welcome(self.world, instruction(self.task_spec)), info

    def use_world(self, world: World, spec: TaskSpec) -> str:
        """Go on with the current episode (after ``reset``) in a hand-built ``world`` with goal ``spec``,
        and return its first observation. For tests and for replaying ALFWorld transcripts in the room
        they show; ``info["task_id"]`` stays the reset task's."""
        self.task_spec, self.world, self.knowledge = spec, world, Knowledge(world)
        self._reached, self._paid, self._picked_up = set(), 0.0, False
        self._build_tables()
        return render.welcome(world, instruction(spec))

    def _step(self, action: str) -> Step:
        command = self._local.get(action) or self._go_table.get(action)
        if command is None or command.obj == self.world.location:  # (going where you are is inadmissible)
            command = self._interpret(action)
        self.world.apply(command)
        self.knowledge.observe(self.world)
        self._picked_up = self._picked_up or command.verb == "take"
        observation = render.result(self.world, command, moved=command.verb == "put" and is_move(action))
        reward, done = self._progress(command)
        self._local = self._local_table()
        return Step(observation, reward=reward, terminated=done, won=True if done else None, score=1.0 if done else None)

    def _interpret(self, action: str) -> Command:
        """Slow path for text that is not a canonical admissible command."""
        parsed = parse(action)
        if parsed is None:
            raise InvalidAction(f"Nothing happens. I don't understand {action[:80]!r}. {USAGE}")
        options = resolve(parsed, self.world.admissible())
        if len(options) == 1:
            return options[0]
        if len(options) > 1:
            raise InvalidAction(f"Nothing happens. Which one: {', '.join(format_command(c) for c in options[:6])}?")
        raise InvalidAction("Nothing happens.")

    def _progress(self, command: Command) -> tuple[float, bool]:
        """Reward for newly reached subgoals and whether the goal holds."""
        # Skip the goal tests after commands that cannot change them (arriving matters only for examine
        # goals, which hold at a lamp): most steps then cost a dict lookup and a string.
        if command.verb in _NEUTRAL_VERBS or (command.verb == "go" and self.task_spec.task_type != EXAMINE):
            return 0.0, False
        met = subgoals_met(self.world, self.task_spec) - self._reached
        self._reached |= met
        done = DONE in met
        if not self.dense_reward:
            return (1.0 if done else 0.0), done
        reward = 1.0 - self._paid if done else sum(w for name, w in SUBGOALS[self.task_spec.task_type] if name in met)
        self._paid += reward
        return reward, done

    def _build_tables(self) -> None:
        self._go_table = {format_command(c): c for c in (Command("go", n) for n in self.world.receptacles)}
        self._go_lists = {}
        self._local = self._local_table()

    def _local_table(self) -> dict[str, Command]:
        return {format_command(c): c for c in self.world.local_commands()}

    def _metrics(self) -> dict[str, float]:
        total = len(SUBGOALS[self.task_spec.task_type])
        reached = len(self._reached)
        return {"progress": reached / total, "subgoals_reached": float(reached), "subgoals_total": float(total)}

    # ----------------------------------------------------------------- contract hooks
    def valid_actions(self) -> list[str] | None:
        if self.world is None:
            return None
        location = self.world.location
        gos = self._go_lists.get(location)
        if gos is None:
            gos = self._go_lists[location] = [a for a, c in self._go_table.items() if c.obj != location]
        return [*gos, *self._local]

    def expert_action(self) -> str:
        """The scripted expert's next command (``look`` once the goal holds or before reset): the oracle,
        or with ``expert="search"`` the one that knows only what the agent has seen."""
        command = self._expert_command()
        return "look" if command is None else format_command(command)

    def expert_detours(self) -> list[str]:
        """Wrong turns the expert may take instead of :meth:`expert_action` and recover from: before
        anything was picked up, a ``go to`` any other receptacle in place of the expert's ``go to``
        (:func:`~agentgym_envs.household.expert.detour_commands`); otherwise none."""
        command = self._expert_command()
        if command is None:
            return []
        return [format_command(c) for c in detour_commands(self.world, command, picked_up=self._picked_up)]

    def _expert_command(self) -> Command | None:
        if self.world is None or goal_met(self.world, self.task_spec):
            return None
        if self.expert == "search":
            return search_command(self.world, self.task_spec, self.knowledge)
        return expert_command(self.world, self.task_spec)

    def state_key_material(self) -> str:
        return self.knowledge.key(self.world, self.task_spec.task_id) if self.world is not None else ""

    # ----------------------------------------------------------------- info and snapshots
    def metrics(self) -> dict[str, float]:
        return self._metrics() if self.world is not None else {}

    def _get_state(self) -> Any:
        state = super()._get_state()
        state.pop("task_spec", None)  # rebuilt from the task, like ``task``
        return state

    def _set_state(self, state: Any) -> None:
        super()._set_state(state)
        self.task_spec = self.task.data["spec"]
        self._go_table, self._go_lists, self._local = {}, {}, {}
        if self.world is not None:
            self._build_tables()


#: Commands that cannot change whether a subgoal holds.
_NEUTRAL_VERBS = frozenset({"open", "close", "examine", "inventory", "look", "slice"})
