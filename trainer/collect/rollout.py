"""Multi-turn rollouts with exact token bookkeeping: groups of G episodes per task from one start state.

One :class:`RolloutWorker` owns a :class:`~agentgym_envs.vector.TextVectorEnv` of ``num_tasks × G`` envs in
group mode, so the G members of each group start from one identical state (a snapshot of the first
member). Each turn, the ids of every running episode go to ``policy.generate`` in one batch; replies go
to the envs as raw text (the action protocol parses them); observations come back and are appended with
:class:`~trainer.collect.trajectory.TrajectoryBuilder`, which asserts the prefix-extension invariant.

A context budget bounds each episode: when the next prompt plus ``max_new_tokens`` would exceed
``max_context_tokens`` the episode ends with ``finish="context"`` (it is still trained on up to there), or,
with ``fold_keep_turns`` > 0, its history is folded to the last ``fold_keep_turns`` turns (the first
observation stays, with a note of how many turns were left out) and it goes on in a new token segment
(:meth:`~trainer.collect.trajectory.TrajectoryBuilder.fold`).

``sample_unit`` says what one training sample is. ``"episode"``: the whole episode is one token sequence
(prefix extension checked every turn). ``"turn"``: every turn is a sample of its own (a segment): the
template's rendering of the system prompt, the first observation and the last ``turn_window`` turns, then
the ids sampled on it; memory per sample is bounded by the window and templates that rewrite past turns
train token-exactly. ``"auto"`` (:func:`resolve_sample_unit`) probes the template once and picks episodes
where prefix extension holds, turns where it does not.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agentgym_envs.chat import ChatHistory
from agentgym_envs.policies import SamplingConfig, TokenPolicy
from agentgym_envs.vector import TextVectorEnv

from ..errors import require
from ..seeding import derive_seed
from .episodes import PlaySpec, reusing_prefixes, turn_seed
from .trajectory import Trajectory, TrajectoryBuilder, prefix_extension_mismatch

_log = logging.getLogger(__name__)

#: What one training sample is (see the module docstring).
SAMPLE_UNITS = ("episode", "turn", "auto")


@dataclass
class RolloutConfig:
    """How trajectories are sampled."""

    tasks_per_step: int = 8
    """Distinct tasks (groups) per update."""
    group_size: int = 4
    """G: rollouts per task from one identical start state."""
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 16
    max_context_tokens: int = 1024
    """Context budget per episode: an episode whose next prompt would not fit ends (``finish="context"``),
    unless ``fold_keep_turns`` > 0."""
    fold_keep_turns: int = 0
    """History folding: > 0 re-renders an episode that outgrows the budget with only its last this-many
    turns (the first observation stays) and continues it in a new token segment; 0 ends it instead."""
    sample_unit: str = "auto"
    """What one training sample is: ``episode`` (the whole episode as one token sequence; needs a template
    whose rendering of each turn extends the last), ``turn`` (each turn its own sample: system prompt, first
    observation and the last ``turn_window`` turns as the template renders them, then the sampled ids;
    verl-agent/GiGPO style) or ``auto`` (episode where the template keeps past turns verbatim, turn where it
    rewrites them, e.g. Qwen3 dropping past ``<think>``; probed once per run and logged)."""
    turn_window: int = 4
    """Turn mode: how many past turns each prompt shows (>= 1); bounds the memory per sample."""
    mode: str = "thread"
    """Vector-env workers: ``thread`` or ``process`` (with ``backend=local``)."""
    backend: str = "local"
    """Where the rollout envs run: ``local`` (``mode`` workers on this machine) or ``ray`` (env actors spread
    over the Ray cluster of ``ray.address``; the policy and training stay in this process group)."""
    invalid_penalty: float = 0.0
    """Subtracted from a training turn's reward when the env says the action was invalid
    (``info["action_valid"]`` false); evaluation and ``won`` are unaffected."""
    stall_penalty: float = 0.0
    """Subtracted from a training turn's reward when the episode goes on in the state it was in (its
    ``state_key`` unchanged: a maze's wall bump or ``look``); the larger of this and ``invalid_penalty`` applies.
    Unlike the invalid penalty alone it leaves no valid no-op as a safe haven. Training only, as above."""
    revisit_penalty: float = 0.0
    """Subtracted from a training turn's reward when the episode goes on in a state it was already in earlier
    in the episode (its ``state_key`` seen before, the start and the state before the turn included: a maze
    loop back to a visited room, and so also a stall); the largest of the three penalties applies. A
    deterministic policy that repeats its choice in a room cycles, so this asks the policy to use its
    history. Training only, as above."""
    dump: bool = False
    """Write every step's rollouts as chat-format records to ``out_dir/rollouts/step_<n>.jsonl``
    (:mod:`trainer.collect.rollout_dump`; export them with ``agentgym export --train-run``). Off: nothing is written."""
    source: str = "envs"
    """Where trajectories come from: ``envs`` (the trainer plays ``env.env_id`` itself) or ``gateway`` (an external
    harness plays through the trajectory-capturing gateway, ``gateway.*``; trainer/serve/gateway/source.py)."""

    def __post_init__(self) -> None:
        require(self.source in ("envs", "gateway"), f"rollout.source must be 'envs' or 'gateway', got {self.source!r}")
        require(self.tasks_per_step >= 1, f"rollout.tasks_per_step must be >= 1, got {self.tasks_per_step}")
        require(self.group_size >= 2, f"rollout.group_size must be >= 2 for group-relative advantages, got {self.group_size}")
        for name in ("invalid_penalty", "stall_penalty", "revisit_penalty"):
            require(getattr(self, name) >= 0, f"rollout.{name} must be >= 0 (subtracted from rewards), got {getattr(self, name)}")
        require(self.fold_keep_turns >= 0, f"rollout.fold_keep_turns must be >= 0 (0: no folding), got {self.fold_keep_turns}")
        require(self.sample_unit in ("episode", "turn", "auto"),
                f"rollout.sample_unit must be 'episode', 'turn' or 'auto', got {self.sample_unit!r}")
        require(self.turn_window >= 1, f"rollout.turn_window must be >= 1 (past turns shown in turn mode), got {self.turn_window}")
        require(self.backend in ("local", "ray"), f"rollout.backend must be 'local' or 'ray', got {self.backend!r}")
        require(self.max_context_tokens > self.max_new_tokens,
                f"rollout.max_context_tokens ({self.max_context_tokens}) must exceed max_new_tokens ({self.max_new_tokens})")


def resolve_sample_unit(policy: TokenPolicy, unit: str, turn_window: int = 4) -> str:
    """``"episode"`` or ``"turn"``: ``unit`` itself, or for ``"auto"`` the result of probing ``policy``'s template
    (:func:`~trainer.collect.trajectory.prefix_extension_mismatch`), logged with the reason."""
    if unit not in SAMPLE_UNITS:
        raise ValueError(f"expected a sample unit in {SAMPLE_UNITS}, got {unit!r}")
    if unit != "auto":
        return unit
    mismatch = prefix_extension_mismatch(policy)
    if mismatch is None:
        _log.info("rollout.sample_unit=auto: the chat template extends each turn's rendering (prefix extension "
                  "holds), so each episode is trained as one token sequence (episode mode)")
        return "episode"
    _log.warning("rollout.sample_unit=auto: the chat template rewrites earlier turns, so each turn is trained as "
                 "its own sample (turn mode, the last %d turns in each prompt; set rollout.sample_unit=turn to "
                 "silence this). The probe found: %s", turn_window, mismatch)
    return "turn"


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
        mode: ``"thread"`` (cheap; pure-Python envs), ``"process"`` (envs that may crash or hang) or ``"ray"``
            (actors across a cluster; trainer/run/ray_rollout.py).
        ray_options: with ``mode="ray"``, how envs are laid out on actors
            (:class:`~agentgym_envs.vector.ray_mode.RayOptions` or its dict).
        invalid_penalty: subtracted from a turn's reward when the env reports ``info["action_valid"]`` false
            (shaping for training only; ``won`` and evaluation are unaffected).
        stall_penalty: subtracted (instead, when larger) when an episode that goes on reports the
            ``state_key`` it had before the turn (no progress; also training-only shaping).
        revisit_penalty: subtracted (instead, when larger) when an episode that goes on reports a
            ``state_key`` it already had earlier in the episode (a loop; training-only shaping).
        fold_keep_turns: 0 ends an episode at the context budget; ``k`` > 0 folds its history to the last
            ``k`` turns instead (and ends it only if even that does not fit).
        sample_unit: ``"episode"``, ``"turn"`` or ``"auto"`` (resolved by probing the policy's template at the
            first :meth:`collect`; the trainer resolves it itself, once).
        turn_window: in turn mode, the past turns each prompt shows (>= 1).
    """

    def __init__(self, spec: PlaySpec, *, tasks_per_batch: int, group_size: int, max_context_tokens: int,
                 mode: str = "thread", invalid_penalty: float = 0.0, stall_penalty: float = 0.0,
                 revisit_penalty: float = 0.0, fold_keep_turns: int = 0, sample_unit: str = "episode",
                 turn_window: int = 4, ray_options: dict | None = None):
        if sample_unit not in SAMPLE_UNITS or turn_window < 1:
            raise ValueError(f"expected sample_unit in {SAMPLE_UNITS} and turn_window >= 1, got {sample_unit!r} "
                             f"and {turn_window}")
        self.spec, self.group_size, self.max_context_tokens = spec, group_size, max_context_tokens
        self.invalid_penalty, self.stall_penalty, self.fold_keep_turns = invalid_penalty, stall_penalty, fold_keep_turns
        self.revisit_penalty = revisit_penalty
        self.sample_unit, self.turn_window = sample_unit, turn_window
        self.venv = TextVectorEnv([spec.make] * (tasks_per_batch * group_size), mode=mode,
                                  group_size=group_size, autoreset=False, ray_options=ray_options)

    def close(self) -> None:
        self.venv.close()

    def collect(self, policy: TokenPolicy, tasks: Sequence[int], *, sampling: SamplingConfig,
                seed: int, group_offset: int | None = None) -> tuple[list[Trajectory], RolloutStats]:
        """One trajectory per env: envs ``[g*G, (g+1)*G)`` play ``tasks[g]`` from the same start.

        ``group_offset`` (this rank's first global group; 0 in a plain process) keys env reset seeds
        (``seed + group_offset + g``) and per-episode sampling seeds by the global group / episode index, so
        nothing an episode draws depends on which rank or batch row it lands in (trainer/run/distributed.py)."""
        if len(tasks) * self.group_size != self.venv.num_envs:
            raise ValueError(f"expected {self.venv.num_envs // self.group_size} tasks, got {len(tasks)}")
        start = time.perf_counter()
        stats = RolloutStats()
        if self.sample_unit == "auto":
            self.sample_unit = resolve_sample_unit(policy, "auto", self.turn_window)
        window = self.turn_window if self.sample_unit == "turn" else None
        options = [{"task_index": int(t)} for t in tasks for _ in range(self.group_size)]
        observations, infos = self.venv.reset(seed=seed + (group_offset or 0), options=options)
        episodes = [_Episode(policy, obs, self.spec.start_info(info), int(tasks[i // self.group_size]), i // self.group_size,
                             self.spec, turn_window=window)
                    for i, (obs, info) in enumerate(zip(observations, infos))]
        self._end_oversized_first_prompts(episodes, self.max_context_tokens - sampling.max_new_tokens)
        with reusing_prefixes(policy):  # each turn's prefill reuses the episode's earlier turns (HF sampler)
            self._play(policy, episodes, sampling, seed, group_offset, stats)
        stats.seconds = time.perf_counter() - start
        trajectories = [e.close() for e in episodes]
        for i, trajectory in enumerate(trajectories):  # group mode: env i reset with seed + its global group
            trajectory.reset_seed = seed + (group_offset or 0) + i // self.group_size
        return trajectories, stats

    def _play(self, policy: TokenPolicy, episodes: list[_Episode], sampling: SamplingConfig, seed: int,
              group_offset: int | None, stats: RolloutStats) -> None:
        """The turns of one collection: sample every running episode, step the envs, record."""
        for turn in range(self.spec.max_turns):
            active = [i for i, e in enumerate(episodes) if e.running]
            if not active:
                break
            turn_sampling = replace(sampling, seed=turn_seed(seed, turn))
            per_episode = {} if group_offset is None else {"seeds": [
                derive_seed(turn_sampling.seed, group_offset * self.group_size + i) for i in active]}
            completions = policy.generate([episodes[i].builder.ids for i in active], sampling=turn_sampling,
                                          **per_episode)
            actions: list[str | None] = [None] * len(episodes)
            for i, completion in zip(active, completions):
                episodes[i].reply(completion)
                actions[i] = completion.text
                stats.generated_tokens += completion.num_tokens
            observations, rewards, terminated, truncated, infos = self.venv.step(actions)
            for i in active:
                valid = infos[i].get("action_valid") is not False
                if self.spec.tool_calling:  # whether each tool call executed, per turn (TAO filtering)
                    episodes[i].builder.trajectory.turn_valid.append(valid)
                penalty = 0.0 if valid else self.invalid_penalty
                if not (terminated[i] or truncated[i]):
                    if self.stall_penalty and episodes[i].stalled(infos[i]):
                        penalty = max(penalty, self.stall_penalty)
                    if self.revisit_penalty and episodes[i].revisited(infos[i]):
                        penalty = max(penalty, self.revisit_penalty)
                episodes[i].observe(observations[i], float(rewards[i]) - penalty, bool(terminated[i]), bool(truncated[i]),
                                    infos[i], budget=self.max_context_tokens - sampling.max_new_tokens,
                                    fold_keep_turns=self.fold_keep_turns)
            stats.env_steps += len(active)

    @staticmethod
    def _end_oversized_first_prompts(episodes: list[_Episode], budget: int) -> None:
        """An episode whose first prompt alone exceeds the context budget ends before its first reply
        (``finish="context"``, nothing to train on) instead of being sampled past the model's positions."""
        for e in episodes:
            if e.running and len(e.builder.ids) > budget:
                _log.warning("first prompt of task %d is %d tokens, over the context budget of %d "
                             "(rollout.max_context_tokens - max_new_tokens): the episode ends unplayed; raise "
                             "rollout.max_context_tokens or shorten the prompt (env.system_prompt)",
                             e.builder.trajectory.task_index, len(e.builder.ids), budget)
                e._end("context", False)


class _Episode:
    """One env's episode in a collection: its chat, its trajectory builder and its end state.

    ``turn_window`` set: turn mode, every turn starts a segment of its own from the last ``turn_window`` turns.
    """

    def __init__(self, policy: TokenPolicy, observation: str, info: dict, task_index: int, group: int, spec: PlaySpec,
                 turn_window: int | None = None):
        self.spec, self.instruction, self.turn_window = spec, info.get("instruction"), turn_window
        self.history = spec.new_history()
        self.history.start(observation, info)
        self.builder = TrajectoryBuilder(policy, self.history.messages(), task_index=task_index, group=group)
        self.state_key = str(info.get("state_key", ""))
        self.visited = {self.state_key} - {""}  # every state_key of the episode so far (revisit_penalty)
        self.running = info.get("infra_error") is None
        self.trajectory: Trajectory | None = None
        self.window: int | None = None  # turns rendered in the current segment once folded (None: all)
        self._reply = ""
        if not self.running:
            self.trajectory = self.builder.finish("infra_error", infra_error=str(info["infra_error"]))

    def reply(self, completion) -> None:
        self.builder.add_reply(completion, state_key=self.state_key)
        self._reply = completion.text

    def stalled(self, info: dict) -> bool:
        """Whether the turn left the episode in the state it started from (both states known)."""
        key = str(info.get("state_key", ""))
        return bool(key) and key == self.state_key

    def revisited(self, info: dict) -> bool:
        """Whether the turn led to a state the episode was already in (the current one included)."""
        return str(info.get("state_key", "")) in self.visited

    def observe(self, observation: str, reward: float, terminated: bool, truncated: bool, info: dict,
                budget: int, fold_keep_turns: int = 0) -> None:
        self.builder.record_step(reward)
        won = bool(info.get("won", False))
        if info.get("infra_error"):
            return self._end("infra_error", won, str(info["infra_error"]))
        self.history.add(self._reply, self.spec.observation_text(observation, self.instruction))
        if terminated or truncated:
            return self._end("terminated" if terminated else "truncated", won)
        self.state_key = str(info.get("state_key", ""))
        if self.state_key:
            self.visited.add(self.state_key)
        if self.turn_window is not None:
            self._next_turn_prompt(self.turn_window, budget, fold_keep_turns)
        else:
            self._extend_episode(budget, fold_keep_turns)
        if len(self.builder.ids) > budget:
            self._end("context", won)

    def _extend_episode(self, budget: int, fold_keep_turns: int) -> None:
        """Episode mode: append what the template adds after the reply; fold if the budget is outgrown."""
        if self.window is not None:
            self.window += 1
        self.builder.add_observation(self.history.messages(window=self.window))
        if len(self.builder.ids) > budget and 0 < fold_keep_turns < (self.window or len(self.history)):
            self.window = fold_keep_turns
            self.builder.fold(self.history.messages(window=self.window))

    def _next_turn_prompt(self, window: int, budget: int, fold_keep_turns: int) -> None:
        """Turn mode: the next turn is a new segment from the last ``window`` turns (fewer, down to
        ``fold_keep_turns``, if that many outgrow the budget)."""
        self.builder.fold(self.history.messages(window=window))
        if len(self.builder.ids) > budget and 0 < fold_keep_turns < min(window, len(self.history)):
            self.builder.fold(self.history.messages(window=fold_keep_turns))  # replaces the prompt-only segment

    def _end(self, how, won: bool, infra_error: str | None = None) -> None:
        self.running = False
        self.trajectory = self.builder.finish(how, won=won, infra_error=infra_error)

    def close(self) -> Trajectory:
        trajectory = self.trajectory if self.trajectory is not None else self.builder.finish("truncated")
        trajectory.chat = self.history.messages()  # every turn, for rollout dumps (trainer/collect/rollout_dump.py)
        return trajectory
