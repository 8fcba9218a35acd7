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

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import gymnasium
import numpy as np

from agentgym_envs.chat import ChatHistory, Message
from agentgym_envs.policies import EnvBoundPolicy, Policy, SamplingConfig
from agentgym_envs.protocols import ToolCalls, protocol_names
from agentgym_envs.seeding import derive_seed
from agentgym_envs.stats import normal_half_width

from ..errors import require

#: Task ids of an env without a task list: how many the train stream and the held-out stream hold by default.
SEEDED_TRAIN_TASKS, SEEDED_EVAL_TASKS = 100_000, 100
#: The protocol name that picks one per env (:func:`auto_protocol`).
AUTO_PROTOCOL = "auto"


@dataclass
class EnvConfig:
    """The env trained on and the held-out tasks it is evaluated on.

    The trainer knows no env's make kwargs: ``train_kwargs`` / ``eval_kwargs`` go to
    :func:`agentgym_envs.make` as given. ``train_split``, ``eval_split``, ``dense_reward`` and ``expert`` are
    shortcuts for the kwargs of the same name (``split=`` …) that some envs take (Household, Search, Terminal,
    TextWorld, WebShop); each is passed only when set, and an explicit ``*_kwargs`` entry wins.
    """

    env_id: str = "agentgym/Household-PickPlace-v0"
    train_kwargs: dict[str, Any] = field(default_factory=dict)
    """Make kwargs of the train env (e.g. ``{split: train, dense_reward: true}`` for Household)."""
    eval_kwargs: dict[str, Any] = field(default_factory=dict)
    """Make kwargs of the evaluation env (e.g. ``{split: valid_seen}`` for Household); ``{}`` with an env that
    has a task list evaluates on the train env's tasks, so set a held-out split where the env has one."""
    train_split: str = ""
    """Shortcut for ``train_kwargs.split`` (``""``: not passed; the env's default split)."""
    eval_split: str = ""
    """Shortcut for ``eval_kwargs.split`` (``""``: not passed)."""
    protocol: str = "auto"
    """How replies are parsed (``plain``, ``react``, ``tags``, ``tool_calls``), or ``auto``: ``tool_calls`` for a
    tool env (its tools go to the model's chat template, results come back as ``tool`` turns), ``plain`` else."""
    max_turns: int = 8
    dense_reward: bool = False
    """Shortcut for ``train_kwargs.dense_reward: true`` (passed only when true)."""
    system_prompt: str | None = None
    """``None``: the env's recommended prompt; a string replaces it (``""`` drops it: cheaper for tiny models)."""
    train_tasks: int = 0
    """Train on the first this many train tasks only (0: all; for an env without a task list, 0 means
    ``SEEDED_TRAIN_TASKS`` seeds); small sets make easy problems."""
    task_reminder: bool = False
    """Repeat the instruction after every observation (BC data, rollouts and evaluation alike)."""
    expert: str = ""
    """Shortcut for ``train_kwargs.expert``: which scripted expert the train env offers behaviour cloning,
    for envs that have several (the env's docs list the choices); ``""``: not passed, the env's default."""
    step_latency_s: float = 0.0
    """Seconds every env step sleeps first (:class:`agentgym_envs.core.latency.StepLatency`; train and
    evaluation envs): a stand-in for slow envs, e.g. the async-collection benchmark. 0: none."""

    def __post_init__(self) -> None:
        require(isinstance(self.step_latency_s, (int, float)) and 0 <= self.step_latency_s < 3600,
                f"env.step_latency_s must be a number of seconds in [0, 3600), got {self.step_latency_s!r}")
        require(self.max_turns >= 1, f"env.max_turns must be >= 1, got {self.max_turns}")
        require(self.protocol in ("auto", *protocol_names()),
                f"env.protocol must be 'auto' or one of {protocol_names()}, got {self.protocol!r}")
        require(self.train_tasks >= 0, f"env.train_tasks must be >= 0 (0: all tasks), got {self.train_tasks}")
        for name in ("train_kwargs", "eval_kwargs"):
            value = getattr(self, name)
            require(isinstance(value, dict) and all(isinstance(k, str) for k in value),
                    f"env.{name} must be a mapping of make kwargs (e.g. {{split: train}}), got {value!r}")
            require(not {"protocol", "max_turns"} & set(value),
                    f"env.{name} must not set protocol or max_turns: use env.protocol / env.max_turns")

    def make_kwargs(self, train: bool) -> dict[str, Any]:
        """The kwargs for :func:`agentgym_envs.make` of the train (or evaluation) env: shortcuts, then the dict."""
        if not train:
            return {**({"split": self.eval_split} if self.eval_split else {}), **self.eval_kwargs}
        shortcuts: dict[str, Any] = {"split": self.train_split} if self.train_split else {}
        if self.dense_reward:
            shortcuts["dense_reward"] = True
        if self.expert:
            shortcuts["expert"] = self.expert
        return {**shortcuts, **self.train_kwargs}


def play_specs(env: EnvConfig, eval_tasks: int = 0) -> tuple[PlaySpec, PlaySpec]:
    """The train and evaluation specs: the make kwargs are the config's (:meth:`EnvConfig.make_kwargs`), the
    trainer adds none. An env without a task list gets seeded task ids, train and held-out streams disjoint
    (:func:`trainer.collect.episodes.task_seed`); its held-out stream holds ``eval_tasks`` (``eval.num_tasks``)
    when that asks for more than the default 100, so a request for 128 is never cut to 100 unseen."""
    common = dict(protocol=env.protocol, max_turns=env.max_turns, system_prompt=env.system_prompt,
                  task_reminder=env.task_reminder, step_latency_s=env.step_latency_s)
    return (PlaySpec(env.env_id, env.make_kwargs(train=True), **common, seed_stream=0),
            PlaySpec(env.env_id, env.make_kwargs(train=False), **common, seed_stream=1,
                     seeded_tasks=max(SEEDED_EVAL_TASKS, int(eval_tasks))))


@dataclass
class EvalConfig:
    every: int = 0
    """Evaluate every this many updates (0: only before and after training)."""
    num_tasks: int = 64
    """Held-out tasks evaluated: the first this many (0: the whole split, e.g. 3,553 on Household's default:
    hours on a CPU with a real model). 64 bounds the default while its 95% interval stays about ±0.12."""
    temperature: float = 0.0
    repeats: int = 1
    """Episodes per task (useful with ``temperature > 0``)."""


def reusing_prefixes(policy: Any) -> contextlib.AbstractContextManager:
    """The policy's prefix-reuse scope for one batch of episodes (``HFPolicy.reusing_prefixes``: each turn's
    prefill reuses the episode's earlier turns), or a no-op for a policy without one (vLLM caches prefixes
    itself; text policies have no cache)."""
    scope = getattr(policy, "reusing_prefixes", None)
    return scope() if callable(scope) else contextlib.nullcontext()


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


def pass_at_k(episodes: Sequence[TextEpisode], ks: Sequence[int] = (1, 4, 8)) -> dict[int, float]:
    """pass@k over tasks: the chance that at least one of ``k`` attempts at a task succeeds, with the unbiased
    estimator of Chen et al. 2021 (``1 - C(n-c, k) / C(n, k)`` for a task tried ``n`` times with ``c`` wins),
    averaged over tasks. Only the ``k`` that every task was tried at least ``k`` times for are reported, so
    pass@8 needs ``eval.repeats >= 8``. Infra-failed episodes are left out, as in :func:`success_rate`."""
    from math import comb

    tries: dict[int, list[bool]] = {}
    for e in episodes:
        if e.infra_error is None:
            tries.setdefault(e.task_index, []).append(bool(e.won))
    if not tries:
        return {}
    fewest = min(len(t) for t in tries.values())
    return {k: float(np.mean([1.0 - comb(len(t) - sum(t), k) / comb(len(t), k) for t in tries.values()]))
            for k in ks if k <= fewest}


def success_rate(episodes: Sequence[TextEpisode]) -> tuple[float, float]:
    """Mean success and the half-width of its 95% normal-approximation confidence interval."""
    wins = [e.won for e in episodes if e.infra_error is None]
    if not wins:
        return 0.0, 0.0
    p = float(np.mean(wins))
    return p, normal_half_width(p, len(wins))
