"""agentgym envs in TRL's ``GRPOTrainer(environment_factory=...)`` (TRL 1.16; extra ``agentgym[trl]``).

TRL's contract for an environment class: it calls the class with no arguments (one instance per rollout,
pooled and reused across batches), calls ``reset(**row)`` with each dataset row and appends the returned
string to the prompt's last message, exposes every public method other than ``reset``/``get_reward`` as a
tool (its name, typed signature and docstring become the JSON schema the model sees), calls the tools the
model's replies name with the parsed JSON arguments, and scores the rollout with ``get_reward()``.

:func:`environment_factory` builds that class for a registered env id:

* a **tool env** (its reset info has ``tools``) gets one typed method per tool, generated from the schemas
  by :mod:`agentgym_envs.interop.tool_methods` (no ``exec``); a call becomes the env's JSON action
  ``{"name": ..., "arguments": {...}}``;
* a **text env** gets one tool, ``act(action: str)`` (the ``tool_calls`` protocol's name for it): the
  action is the env's native command.

Bad model input never raises into TRL's rollout: wrong types, unknown or missing arguments, huge strings
and calls after the episode ended come back as observations that say what was wrong (the env's own
invalid-action text). ``get_reward()`` is the episode's return (the sum of the env's rewards), or ``None``
when the env's own machinery failed (``info["infra_error"]``): TRL leaves such a rollout out of its group's
baseline and gives it no advantage, rather than scoring our failure as the model's.
:func:`dataset_rows` / :func:`make_dataset` build the rows (``prompt`` with the env's system prompt,
``seed``, ``task_index``) that ``reset`` reads. Usage (docs/trainer.md, "Using agentgym envs from TRL")::

    from trl import GRPOConfig, GRPOTrainer
    from agentgym_envs.interop.trl import environment_factory, make_dataset
    trainer = GRPOTrainer(model="Qwen/Qwen3-0.6B", args=GRPOConfig(max_completion_length=256),
                          train_dataset=make_dataset("agentgym/GuessNumber-v0", 64),
                          environment_factory=environment_factory("agentgym/GuessNumber-v0"))
    trainer.train()
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Sequence
from typing import Any, Callable, ClassVar

from ..core.errors import AgentGymError
from ..protocols.tool_calls import ACT_TOOL
from ..registration import make
from .tool_methods import build_tool_method

#: Added to a text env's system prompt: the model acts through the ``act`` tool, not by writing the command.
ACT_HINT = f"Act by calling the {ACT_TOOL} tool with one action per call."
EPISODE_OVER = "The episode is over; stop calling tools."

ACT_ARG = "action"
_ACT_SCHEMA = {"type": "function", "function": {
    "name": ACT_TOOL, "description": "Send one action to the environment and get its observation back.",
    "parameters": {"type": "object", "required": [ACT_ARG], "properties": {
        ACT_ARG: {"type": "string", "description": "the action, in the words the environment asks for."}}}}}


class InteropConfigError(AgentGymError, ValueError):
    """The adapter was given something it cannot use (a bad dataset row, an env whose tools changed)."""


class AgentGymTRLEnv:
    """Base of the classes :func:`environment_factory` returns; see the module docstring.

    Only ``reset`` and ``get_reward`` are public functions here, because TRL turns every other public
    function of the class into a tool. Read-only properties (``won``, ``done``, ``steps``, ``info``) are for reward
    functions, which TRL hands the instances as ``environments=``.
    """

    env_id: ClassVar[str] = ""
    make_kwargs: ClassVar[dict[str, Any]] = {}
    tool_names: ClassVar[tuple[str, ...]] = ()
    text_env: ClassVar[bool] = False

    def __init__(self) -> None:
        self._env = make(self.env_id, **self.make_kwargs)
        self._return, self._done, self._info, self._started, self._steps = 0.0, False, {}, False, 0

    def reset(self, seed: int | None = None, task_index: int | None = None, **row: Any) -> str:
        """Start the episode of a dataset row (``seed``, optional ``task_index``; other columns are ignored)."""
        options = {"task_index": _row_int(task_index, "task_index")} if task_index is not None else None
        observation, info = self._env.reset(seed=_row_int(seed, "seed"), options=options)
        if not self.text_env and [t["function"]["name"] for t in info.get("tools") or []] != list(self.tool_names):
            raise InteropConfigError(f"expected {self.env_id}'s tools to stay {list(self.tool_names)}, got "
                                     f"{info.get('tools')!r:.200}; build the factory with the same make kwargs")
        self._return, self._done, self._info, self._started, self._steps = 0.0, False, info, True, 0
        return observation

    def get_reward(self) -> float | None:
        """The episode's return so far; ``None`` (not scored by TRL) when the env's infrastructure failed."""
        return None if self._info.get("infra_error") else self._return

    @property
    def won(self) -> bool:
        """Whether the episode was won (the env's ``info["won"]``)."""
        return bool(self._info.get("won"))

    @property
    def done(self) -> bool:
        """Whether the episode ended (terminated or truncated)."""
        return self._done

    @property
    def steps(self) -> int:
        """How many tool calls reached the env this episode (calls after its end do not)."""
        return self._steps

    @property
    def info(self) -> dict[str, Any]:
        """The env's latest info dict (reset or step)."""
        return self._info

    def _call_tool(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        """What a generated tool method does: build the env's action from the call and step the env."""
        if self.text_env:
            if len(args) + len(kwargs) != 1 or (kwargs and ACT_ARG not in kwargs):
                got = ", ".join(map(repr, kwargs))[:200] if kwargs else f"{len(args)} positional arguments"
                return f"Invalid call to {ACT_TOOL}: expected exactly one argument, {ACT_ARG!r}; got {got}."
            return self._step(args[0] if args else kwargs[ACT_ARG])
        arguments = dict(kwargs)
        names = getattr(type(self), name).__agentgym_parameters__
        for param, value in zip(names, args):
            if param in arguments:
                return f"Invalid call to {name}: {param!r} was given twice."
            arguments[param] = value
        if len(args) > len(names):
            return f"Invalid call to {name}: expected at most {len(names)} arguments, got {len(args)}."
        try:
            call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False, default=repr)
        except (RecursionError, ValueError):  # nesting past the encoder's depth, circular structures
            return f"Invalid call to {name}: the arguments nest too deeply to encode; send flat values."
        return self._step(call)

    def _step(self, action: Any) -> str:
        if not self._started:
            raise InteropConfigError("expected reset() before a tool call; TRL calls reset(**row) first")
        if self._done:
            return EPISODE_OVER
        observation, reward, terminated, truncated, info = self._env.step(action)
        self._steps += 1
        self._return += float(reward)
        self._info, self._done = info, bool(terminated or truncated)
        return f"{observation}\n{EPISODE_OVER}" if self._done else observation


def _row_int(value: Any, column: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise InteropConfigError(f"expected the dataset column {column!r} to hold non-negative integers or None, "
                                 f"got {value!r:.60}; build rows with agentgym_envs.interop.trl.dataset_rows")
    return int(value)


def _class_name(env_id: str) -> str:
    """``agentgym/GuessNumber-v0`` -> ``GuessNumberV0`` (TRL logs the env reward under the class name)."""
    words = re.split(r"[^0-9A-Za-z]+", env_id.rpartition("/")[2])
    return "".join(w[:1].upper() + w[1:] for w in words if w) or "AgentGymEnv"


def environment_factory(env_id: str, **make_kwargs: Any) -> type[AgentGymTRLEnv]:
    """A class for ``GRPOTrainer(environment_factory=...)`` playing ``env_id`` (``make_kwargs`` go to ``make``).

    The env is made once here to read its tools, so an unknown id or a tool that cannot be a Python method
    fails now, with the reason, rather than inside the trainer.
    """
    probe = make(env_id, **make_kwargs)
    try:
        _, info = probe.reset(seed=0)
    finally:
        probe.close()
    schemas = info.get("tools")
    methods = [build_tool_method(schema) for schema in (schemas or [_ACT_SCHEMA])]
    namespace: dict[str, Any] = {m.__name__: m for m in methods}
    if len(namespace) != len(methods):
        raise InteropConfigError(f"expected {env_id}'s tool names to be distinct, got {[m.__name__ for m in methods]}")
    namespace.update(env_id=env_id, make_kwargs=dict(make_kwargs), tool_names=tuple(namespace), text_env=not schemas,
                     __doc__=f"{env_id} for TRL's GRPOTrainer; tools: {', '.join(namespace)}.",
                     __module__=__name__)
    cls = type(_class_name(env_id), (AgentGymTRLEnv,), namespace)
    _check_schemas(methods)
    return cls


def _check_schemas(methods: Sequence[Callable[..., str]]) -> None:
    """Fail early if transformers (which TRL uses to render tools) cannot read a generated method."""
    try:
        from transformers.utils import get_json_schema
    except ImportError:  # the schemas are only rendered where transformers is installed
        return
    for method in methods:
        try:
            get_json_schema(method)
        except Exception as e:  # transformers' parsing exceptions have no common public base
            raise InteropConfigError(f"expected transformers to read the schema of tool {method.__name__!r}, "
                                     f"got {type(e).__name__}: {e}") from None


def dataset_rows(env_id: str, num_rows: int, *, seed: int = 0, task_indices: Sequence[int] | None = None,
                 **make_kwargs: Any) -> list[dict[str, Any]]:
    """``num_rows`` rows for TRL: ``prompt`` (the env's system prompt, then an empty user turn that ``reset``
    fills with the first observation), ``seed`` (``seed + i``) and ``task_index``.

    ``task_index`` cycles through ``task_indices`` (default: the env's tasks in order) on task envs and is
    ``None`` on envs without a task set. The system prompt is read from each row's reset info, the authority
    on it; a text env's gets :data:`ACT_HINT` appended.
    """
    if isinstance(num_rows, bool) or not isinstance(num_rows, int) or num_rows < 1:
        raise InteropConfigError(f"expected num_rows to be a positive integer, got {num_rows!r:.60}")
    env = make(env_id, **make_kwargs)
    try:
        num_tasks = getattr(env.unwrapped, "num_tasks", None)
        indices = list(task_indices) if task_indices is not None else range(num_tasks or 0)
        if num_tasks is not None and not indices:
            raise InteropConfigError("expected at least one task index, got an empty task_indices")
        rows = []
        for i in range(num_rows):
            task_index = _row_int(indices[i % len(indices)], "task_index") if num_tasks is not None else None
            options = {"task_index": task_index} if task_index is not None else None
            _, info = env.reset(seed=seed + i, options=options)
            system = info.get("system_prompt") or ""
            if not info.get("tools"):
                system = f"{system}\n\n{ACT_HINT}" if system else ACT_HINT
            rows.append({"prompt": [{"role": "system", "content": system}, {"role": "user", "content": ""}],
                         "seed": seed + i, "task_index": task_index})
        return rows
    finally:
        env.close()


def make_dataset(env_id: str, num_rows: int, *, seed: int = 0, task_indices: Sequence[int] | None = None,
                 **make_kwargs: Any) -> Any:
    """:func:`dataset_rows` as a Hugging Face ``datasets.Dataset`` (the ``train_dataset`` TRL takes)."""
    from datasets import Dataset

    return Dataset.from_list(dataset_rows(env_id, num_rows, seed=seed, task_indices=task_indices, **make_kwargs))
