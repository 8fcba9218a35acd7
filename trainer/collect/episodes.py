"""Text episodes: any :class:`~agentgym_envs.policies.Policy` plays envs chat-to-chat (evaluation, BC data, corpora).

This is the text path: the policy sees chat messages and answers text, so it serves the scripted expert,
random baselines, HTTP models and evaluation of trained models alike. Training rollouts, which must keep
exact token ids, go through :mod:`trainer.collect.rollout` instead.

>>> spec = PlaySpec("agentgym/Maze-Easy-v0", max_turns=30)
>>> from agentgym_envs.policies import ExpertPolicy
>>> episodes = run_text_episodes(ExpertPolicy(), spec, task_indices=[0, 1], seed=0)
>>> [e.won for e in episodes]
[True, True]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import gymnasium
import numpy as np

from agentgym_envs.chat import ChatHistory, Message
from agentgym_envs.policies import EnvBoundPolicy, Policy, SamplingConfig
from agentgym_envs.protocols import ToolCalls
from agentgym_envs.seeding import derive_seed

from ..models.backends import reusing_prefixes
from agentgym_envs.stats import normal_half_width

#: Task ids of an env without a task list: how many the train stream and the held-out stream hold by default.
SEEDED_TRAIN_TASKS, SEEDED_EVAL_TASKS = 100_000, 100
#: The protocol name that picks one per env (:func:`auto_protocol`).
AUTO_PROTOCOL = "auto"


def task_seed(task: int, stream: int) -> int:
    """The reset seed that *is* task ``task`` of seed stream ``stream`` (0: train, 1: held-out) for an env
    without a task list: ``2 * task + stream``. Train seeds are even and held-out seeds odd, so the two
    streams are disjoint by construction, whatever their sizes."""
    return 2 * int(task) + int(stream)


class SeededTasks(gymnasium.Wrapper):
    """Gives an env without a task list (procedural: Maze, games, Tutoring) tasks: ``reset(options=
    {"task_index": t})`` resets with seed :func:`task_seed` ``(t, stream)``, so a task id names one start
    state, the same for every member of a group and every epoch. Without ``task_index`` it passes through."""

    def __init__(self, env: gymnasium.Env, stream: int):
        super().__init__(env)
        self.stream = stream

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        options = dict(options or {})
        task = options.pop("task_index", None)
        if task is not None:
            seed = task_seed(task, self.stream)
        return self.env.reset(seed=seed, options=options or None)


def auto_protocol(env_id: str, kwargs: dict[str, Any] | None = None) -> str:
    """The protocol ``"auto"`` stands for: ``"tool_calls"`` for a tool env (one whose ``tools`` are not
    ``None``, so its reset info lists them: GuessNumber, Search, Terminal, Tutoring, PracticeScheduling),
    else ``"plain"``. Builds the env once to ask it (no reset).

    >>> auto_protocol("agentgym/GuessNumber-v0"), auto_protocol("agentgym/Maze-Easy-v0")
    ('tool_calls', 'plain')
    """
    import agentgym_envs

    env = agentgym_envs.make(env_id, **(kwargs or {}))
    try:
        return ToolCalls.name if env.unwrapped.tools is not None else "plain"
    finally:
        env.close()


def has_task_list(env: gymnasium.Env) -> bool:
    """Whether ``env`` picks tasks by ``options["task_index"]`` itself (it has ``num_tasks``)."""
    return getattr(env.unwrapped, "num_tasks", None) is not None


@dataclass(frozen=True)
class PlaySpec:
    """Which env to play and how: id, make kwargs (``split=`` …), reply protocol and a turn limit, plus how
    the chat shows it (system prompt, task reminder). Not gymnasium's ``EnvSpec`` (a registry entry)."""

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    protocol: str = "plain"
    """A protocol name, or ``"auto"``: ``tool_calls`` for a tool env, ``plain`` otherwise (:func:`auto_protocol`,
    resolved when the spec is made, so ``protocol`` always names the protocol played)."""
    max_turns: int = 10
    system_prompt: str | None = None
    """``None`` keeps the env's recommended system prompt; a string replaces it (``""``: no system message,
    which saves a small model from re-reading ~100 identical tokens every turn)."""
    task_reminder: bool = False
    """Repeat the task's instruction after every observation (``Task: …``), as agent prompts for ALFWorld
    often do, so the goal is always a few tokens away instead of at the top of a growing history."""
    seed_stream: int = 0
    """For an env without a task list: which seed stream task ids name (0: train, 1: held-out; :func:`task_seed`)."""
    seeded_tasks: int = SEEDED_TRAIN_TASKS
    """For an env without a task list: how many task ids (seeds) :meth:`num_tasks` reports."""
    step_latency_s: float = 0.0
    """Seconds each step sleeps first (:class:`~agentgym_envs.core.latency.StepLatency`; 0: not wrapped)."""

    def __post_init__(self) -> None:
        if self.protocol == AUTO_PROTOCOL:
            object.__setattr__(self, "protocol", auto_protocol(self.env_id, self.kwargs))

    @property
    def tool_calling(self) -> bool:
        """Whether replies are tool calls: the chat carries the env's tools and tool results come back as
        ``tool`` messages (:class:`~agentgym_envs.chat.ChatHistory`)."""
        return self.protocol == ToolCalls.name

    def new_history(self) -> ChatHistory:
        """An empty chat for one episode of this spec (tool-calling or not)."""
        return ChatHistory(tool_calling=self.tool_calling)

    def observation_text(self, observation: str, instruction: str | None) -> str:
        """What the policy reads after a step: the observation, plus the task reminder when asked for."""
        return f"{observation}\n\nTask: {instruction}" if self.task_reminder and instruction else observation

    def make(self) -> gymnasium.Env:
        """A fresh env from :func:`agentgym_envs.make`, wrapped so that raw model replies are parsed
        (``info["native_action"]``) and turns are capped at ``max_turns``; an env without a task list is
        wrapped in :class:`SeededTasks` so that task ids name seeds of ``seed_stream``."""
        import agentgym_envs  # (registers the ids, also in worker processes)

        env = agentgym_envs.make(self.env_id, protocol=self.protocol, max_turns=self.max_turns, **self.kwargs)
        if self.step_latency_s:
            from agentgym_envs.core.latency import StepLatency

            env = StepLatency(env, self.step_latency_s)
        return env if has_task_list(env) else SeededTasks(env, self.seed_stream)

    def start_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """The reset info with this spec's system prompt applied."""
        return info if self.system_prompt is None else {**info, "system_prompt": self.system_prompt}

    def num_tasks(self) -> int:
        """The env's task count, or ``seeded_tasks`` for an env without a task list."""
        env = self.make()
        try:
            return int(env.unwrapped.num_tasks) if has_task_list(env) else self.seeded_tasks
        finally:
            env.close()


@dataclass
class TextEpisode:
    """One finished episode as chat: the messages a model saw, plus the outcome."""

    task_index: int
    history: ChatHistory
    rewards: list[float] = field(default_factory=list)
    won: bool = False
    infra_error: str | None = None

    @property
    def ret(self) -> float:
        return float(sum(self.rewards))

    def messages(self, window: int | None = None) -> list[Message]:
        return self.history.messages(window=window)


def turn_seed(seed: int | None, turn: int) -> int | None:
    """A per-turn sampler seed derived from the episode batch's seed (so turns do not share draws)."""
    return None if seed is None else derive_seed(seed, turn)


def run_text_episodes(policy: Policy, spec: PlaySpec, task_indices: Sequence[int], *, seed: int = 0,
                      sampling: SamplingConfig | None = None, window: int | None = None) -> list[TextEpisode]:
    """Play one episode per task index with ``policy``, all in one batch, in this process.

    Env ``i`` is reset with ``seed + i``; sampling seeds derive from ``sampling.seed`` and the turn number.
    ``window`` shows the policy only the last this-many turns (after the first observation), as turn-mode
    training does (``rollout.turn_window``); ``None`` shows the whole chat.
    """
    sampling = sampling or SamplingConfig(temperature=0.0)
    envs = [spec.make() for _ in task_indices]
    episodes, instructions = [], []
    for i, (env, task) in enumerate(zip(envs, task_indices)):
        obs, info = env.reset(seed=seed + i, options={"task_index": int(task)})
        episodes.append(TextEpisode(int(task), spec.new_history()))
        episodes[-1].history.start(obs, spec.start_info(info))
        instructions.append(info.get("instruction"))
    active = list(range(len(envs)))
    with reusing_prefixes(policy):
        _play(policy, spec, envs, episodes, instructions, active, sampling, window)
    for env in envs:
        env.close()
    return episodes


def _play(policy: Policy, spec: PlaySpec, envs: list, episodes: list[TextEpisode], instructions: list,
          active: list[int], sampling: SamplingConfig, window: int | None) -> None:
    for turn in range(spec.max_turns):
        if not active:
            break
        if isinstance(policy, EnvBoundPolicy):
            policy.bind([envs[i] for i in active])
        batch = [episodes[i].messages(window) for i in active]
        completions = policy.act(batch, sampling=replace(sampling, seed=turn_seed(sampling.seed, turn)))
        still = []
        for i, completion in zip(active, completions):
            obs, reward, terminated, truncated, info = envs[i].step(completion.text)
            episode = episodes[i]
            episode.history.add(completion.text, spec.observation_text(obs, instructions[i]))
            episode.rewards.append(float(reward))
            episode.won = bool(info.get("won", False))
            episode.infra_error = info.get("infra_error")
            if not (terminated or truncated):
                still.append(i)
        active = still


def success_rate(episodes: Sequence[TextEpisode]) -> tuple[float, float]:
    """Mean success and the half-width of its 95% normal-approximation confidence interval."""
    wins = [e.won for e in episodes if e.infra_error is None]
    if not wins:
        return 0.0, 0.0
    p = float(np.mean(wins))
    return p, normal_half_width(p, len(wins))
