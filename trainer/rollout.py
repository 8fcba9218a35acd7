"""Multi-turn rollouts with exact token bookkeeping: groups of G episodes per task from one start state.

One :class:`RolloutWorker` owns a :class:`~agentgym_envs.vector.TextVectorEnv` of ``num_tasks × G`` envs in
group mode, so the G members of each group start from one identical state (a snapshot of the first
member). Each turn, the ids of every running episode go to ``policy.generate`` in one batch; replies go
to the envs as raw text (the action protocol parses them); observations come back and are appended with
:class:`~trainer.trajectory.TrajectoryBuilder`, which asserts the prefix-extension invariant.

A context budget bounds each episode: when the next prompt plus ``max_new_tokens`` would exceed
``max_context_tokens`` the episode ends with ``finish="context"`` (it is still trained on up to there), or,
with ``fold_keep_turns`` > 0, its history is folded to the last ``fold_keep_turns`` turns (the first
observation stays, with a note of how many turns were left out) and it goes on in a new token segment
(:meth:`~trainer.trajectory.TrajectoryBuilder.fold`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agentgym_envs.chat import ChatHistory
from agentgym_envs.policies import SamplingConfig, TokenPolicy
from agentgym_envs.vector import TextVectorEnv

from .episodes import PlaySpec, turn_seed
from .trajectory import Trajectory, TrajectoryBuilder


@dataclass
class RolloutStats:
    """Throughput of one collection: env steps and sampled tokens per second of wall time."""

    env_steps: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0

    @property
    def env_steps_per_s(self) -> float:
        return self.env_steps / max(self.seconds, 1e-9)

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / max(self.seconds, 1e-9)


class RolloutWorker:
    """Collects ``tasks_per_batch`` groups of ``group_size`` trajectories per call to :meth:`collect`.

    Args:
        spec: the env, its kwargs, reply protocol and turn limit.
        tasks_per_batch: distinct tasks per collection (groups).
        group_size: G, rollouts per task from one identical initial state.
        max_context_tokens: the context budget per episode.
        mode: ``"thread"`` (cheap; pure-Python envs) or ``"process"`` (envs that may crash or hang).
        invalid_penalty: subtracted from a turn's reward when the env reports ``info["action_valid"]`` false
            (shaping for training only; ``won`` and evaluation are unaffected).
        fold_keep_turns: 0 ends an episode at the context budget; ``k`` > 0 folds its history to the last
            ``k`` turns instead (and ends it only if even that does not fit).
    """

    def __init__(self, spec: PlaySpec, *, tasks_per_batch: int, group_size: int, max_context_tokens: int,
                 mode: str = "thread", invalid_penalty: float = 0.0, fold_keep_turns: int = 0):
        self.spec, self.group_size, self.max_context_tokens = spec, group_size, max_context_tokens
        self.invalid_penalty, self.fold_keep_turns = invalid_penalty, fold_keep_turns
        self.venv = TextVectorEnv([spec.make] * (tasks_per_batch * group_size), mode=mode,
                                  group_size=group_size, autoreset=False)

    def close(self) -> None:
        self.venv.close()

    def collect(self, policy: TokenPolicy, tasks: Sequence[int], *, sampling: SamplingConfig,
                seed: int) -> tuple[list[Trajectory], RolloutStats]:
        """One trajectory per env: envs ``[g*G, (g+1)*G)`` play ``tasks[g]`` from the same start."""
        if len(tasks) * self.group_size != self.venv.num_envs:
            raise ValueError(f"expected {self.venv.num_envs // self.group_size} tasks, got {len(tasks)}")
        start = time.perf_counter()
        stats = RolloutStats()
        options = [{"task_index": int(t)} for t in tasks for _ in range(self.group_size)]
        observations, infos = self.venv.reset(seed=seed, options=options)
        episodes = [_Episode(policy, obs, self.spec.start_info(info), int(tasks[i // self.group_size]), i // self.group_size,
                             self.spec)
                    for i, (obs, info) in enumerate(zip(observations, infos))]
        for turn in range(self.spec.max_turns):
            active = [i for i, e in enumerate(episodes) if e.running]
            if not active:
                break
            completions = policy.generate([episodes[i].builder.ids for i in active],
                                          sampling=replace(sampling, seed=turn_seed(seed, turn)))
            actions: list[str | None] = [None] * len(episodes)
            for i, completion in zip(active, completions):
                episodes[i].reply(completion)
                actions[i] = completion.text
                stats.generated_tokens += completion.num_tokens
            observations, rewards, terminated, truncated, infos = self.venv.step(actions)
            for i in active:
                penalty = self.invalid_penalty if infos[i].get("action_valid") is False else 0.0
                episodes[i].observe(observations[i], float(rewards[i]) - penalty, bool(terminated[i]), bool(truncated[i]),
                                    infos[i], budget=self.max_context_tokens - sampling.max_new_tokens,
                                    fold_keep_turns=self.fold_keep_turns)
            stats.env_steps += len(active)
        stats.seconds = time.perf_counter() - start
        return [e.close() for e in episodes], stats


class _Episode:
    """One env's episode in a collection: its chat, its trajectory builder and its end state."""

    def __init__(self, policy: TokenPolicy, observation: str, info: dict, task_index: int, group: int, spec: PlaySpec):
        self.spec, self.instruction = spec, info.get("instruction")
        self.history = ChatHistory()
        self.history.start(observation, info)
        self.builder = TrajectoryBuilder(policy, self.history.messages(), task_index=task_index, group=group)
        self.state_key = str(info.get("state_key", ""))
        self.running = info.get("infra_error") is None
        self.trajectory: Trajectory | None = None
        self.window: int | None = None  # turns rendered in the current segment once folded (None: all)
        self._reply = ""
        if not self.running:
            self.trajectory = self.builder.finish("infra_error", infra_error=str(info["infra_error"]))

    def reply(self, completion) -> None:
        self.builder.add_reply(completion, state_key=self.state_key)
        self._reply = completion.text

    def observe(self, observation: str, reward: float, terminated: bool, truncated: bool, info: dict,
                budget: int, fold_keep_turns: int = 0) -> None:
        self.builder.record_step(reward)
        won = bool(info.get("won", False))
        if info.get("infra_error"):
            return self._end("infra_error", won, str(info["infra_error"]))
        if terminated or truncated:
            return self._end("terminated" if terminated else "truncated", won)
        self.history.add(self._reply, self.spec.observation_text(observation, self.instruction))
        if self.window is not None:
            self.window += 1
        self.builder.add_observation(self.history.messages(window=self.window))
        self.state_key = str(info.get("state_key", ""))
        if len(self.builder.ids) > budget and 0 < fold_keep_turns < (self.window or len(self.history)):
            self.window = fold_keep_turns
            self.builder.fold(self.history.messages(window=self.window))
        if len(self.builder.ids) > budget:
            self._end("context", won)

    def _end(self, how, won: bool, infra_error: str | None = None) -> None:
        self.running = False
        self.trajectory = self.builder.finish(how, won=won, infra_error=infra_error)

    def close(self) -> Trajectory:
        return self.trajectory if self.trajectory is not None else self.builder.finish("truncated")
