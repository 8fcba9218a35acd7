"""Behaviour cloning from the scripted expert: the warm-up that gives RL a policy worth improving.

Expert episodes are turned into trajectories with the same :class:`~trainer.collect.trajectory.TrajectoryBuilder`
that rollouts use (each reply is ``encode(reply) + [end-of-turn]``, loss-masked in), so BC trains on
exactly the token layout the policy later samples in, in the rollout's sample unit: one sequence per
episode, or (``turn_window`` set, turn mode) one segment per turn from the last ``turn_window`` turns. The
loss is the mean negative log-likelihood of the replies' tokens over every segment, computed with the
chunked log-prob path.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from agentgym_envs.chat import episode_messages
from agentgym_envs.policies import Completion, EnvSidePolicy, ExpertPolicy, SamplingConfig

from ..collect.episodes import PlaySpec, TextEpisode, run_text_episodes
from ..collect.trajectory import Trajectory, TrajectoryBuilder
from ..errors import require
from .logprobs import pack, token_logprobs

if TYPE_CHECKING:  # a type only: BC trains any HF-backed policy the run built (trainer.models)
    from ..models.backends.hf import HFPolicy


@dataclass
class BCConfig:
    """Behaviour-cloning warm-up from the env's scripted expert (skipped when ``episodes`` is 0)."""

    episodes: int = 0
    epochs: int = 2
    batch_size: int = 16
    lr: float = 3e-3
    explore: float = 0.0
    """Probability that the expert takes one of the env's ``expert_detours()`` instead of its move when
    the env offers some (:class:`trainer.learn.bc.ExploringExpertPolicy`): recovery states for BC. 0: the plain
    scripted expert."""
    max_detours: int = 2
    """At most this many detours per BC episode."""
    expert_noise: float = 0.0
    """Probability that each move of the demonstrator is a uniformly drawn valid action instead of the
    expert's, *labelled* (:class:`trainer.learn.bc.NoisyExpertPolicy`): a weak demonstrator that BC alone cannot
    beat at the sampling temperature, however long it clones. 0: the plain scripted expert."""
    expert_habit: str = ""
    """With ``expert_noise``: the noisy move is always this native action (a dithering demonstrator, e.g.
    Maze's ``look``) instead of a uniformly drawn valid one."""
    group_by_length: int = 0
    """> 0: batches of episodes of similar length, drawn from shuffled megabatches of this many batches
    (:func:`trainer.learn.bc.epoch_batches`): the same data per epoch with less padding. 0: plain shuffled batches."""

    def __post_init__(self) -> None:
        require(self.episodes >= 0 and self.epochs >= 1 and self.batch_size >= 1 and self.group_by_length >= 0,
                "bc sizes must be positive (group_by_length >= 0)")
        require(0.0 <= self.explore <= 1.0 and self.max_detours >= 0, "bc.explore must be in [0, 1], max_detours >= 0")
        require(0.0 <= self.expert_noise <= 1.0, f"bc.expert_noise must be in [0, 1], got {self.expert_noise}")
        require(not (self.explore > 0 and self.expert_noise > 0),
                "bc.explore (unlabelled detours) and bc.expert_noise (labelled noise) are exclusive: set one to 0")


@dataclass
class BCResult:
    trajectories: int
    first_loss: float
    last_loss: float


def expert_trajectory(policy: HFPolicy, episode: TextEpisode, unlabeled_turns: frozenset[int] = frozenset(),
                      turn_window: int | None = None) -> Trajectory:
    """The token trajectory of a text episode, as if the policy had sampled the expert's replies.

    The replies of ``unlabeled_turns`` (the exploring expert's detours) stay in the context but get
    ``loss_mask`` 0: BC learns the expert's action in the states they lead to, not the detours themselves.
    ``turn_window`` set (turn mode): every turn is a segment of its own, prompted with the last
    ``turn_window`` turns, exactly as :class:`~trainer.collect.rollout.RolloutWorker` builds them.
    """
    history = episode.history
    builder = TrajectoryBuilder(policy, episode_messages(history.system_prompt, history.first_observation, [],
                                                         tools=history.tools), task_index=episode.task_index)
    # the id the template closes a reply with (Gemma: <end_of_turn>, not its <eos>), as the model should learn to stop
    end = policy.end_of_turn_id()
    eos = end if end is not None else policy.tokenizer.eos_token_id
    for k, (reply, _) in enumerate(history.turns):
        ids = policy.encode(reply) + [eos]
        builder.add_reply(Completion(reply, ids, [0.0] * len(ids)), state_key="")
        builder.record_step(episode.rewards[k])
        if k + 1 < len(history.turns):
            messages = episode_messages(history.system_prompt, history.first_observation, history.turns[:k + 1],
                                        window=turn_window, tools=history.tools)
            if turn_window is None:
                builder.add_observation(messages)
            else:
                builder.fold(messages)
    trajectory = builder.finish("terminated", won=episode.won)
    for segment in trajectory.segments:
        for i, turn in enumerate(segment.token_turns):
            if turn in unlabeled_turns:
                segment.loss_mask[i], segment.token_turns[i] = 0, -1
    return trajectory


class ExploringExpertPolicy(EnvSidePolicy):
    """The scripted expert, except that each of its moves for which the env offers detours is replaced,
    with probability ``explore`` (at most ``max_detours`` times per episode), by one of the env's
    ``expert_detours()`` drawn uniformly; the expert then carries on from there.

    An expert that reads hidden state (it walks straight to the object) never shows a state after a wrong
    guess. Detours put such states (arrive somewhere, the object is not there, go elsewhere) into the
    behaviour-cloning data: DAgger-style recovery without a learner in the loop. Which wrong turns make
    sense is env knowledge, so the env lists them (the optional ``expert_detours() -> list[str]`` hook,
    native actions; an env without it gets the plain expert). Draws come from a generator seeded from
    ``sampling.seed`` on each call, so data repeat exactly.
    """

    def __init__(self, protocol: Any = "plain", *, explore: float = 0.5, max_detours: int = 2):
        super().__init__(protocol)
        self.explore, self.max_detours = explore, max_detours
        self._detours: dict[int, list[int]] = {}  # id(env) → the turns that were detours
        self._turns: dict[int, int] = {}
        self.order: list[int] = []  # id(env) of each episode, in the order of the first bind

    def bind(self, envs: Sequence[Any]) -> None:
        super().bind(envs)
        if any(id(env) not in self._detours for env in self._envs):
            self.order = [id(env) for env in self._envs]
            self._detours = {key: [] for key in self.order}
            self._turns = {key: 0 for key in self.order}

    def detour_turns(self) -> list[frozenset[int]]:
        """Per episode of the last run (in task order), the turns that were detours."""
        return [frozenset(self._detours[key]) for key in self.order]

    def act(self, batch: list[list[Any]], *, sampling: SamplingConfig) -> list[Completion]:
        self._check(batch)
        rng = np.random.default_rng(sampling.seed)
        out = []
        for env in self._envs:
            action = env.expert_action()
            detours = self._offered(env)
            if detours and rng.random() < self.explore:
                action = detours[int(rng.integers(len(detours)))]
                self._detours[id(env)].append(self._turns[id(env)])
            self._turns[id(env)] += 1
            out.append(self._completion(action, env))
        return out

    def _offered(self, env: Any) -> list[str]:
        """The env's detours from here, or none once this episode has used its ``max_detours``."""
        if len(self._detours[id(env)]) >= self.max_detours:
            return []
        # TextEnv declares the hook (no detours by default); other gymnasium envs may lack it.
        return list(getattr(env, "expert_detours", list)())


class NoisyExpertPolicy(EnvSidePolicy):
    """A weak demonstrator: the scripted expert, except that each move is replaced, with probability
    ``noise``, by one of the env's ``valid_actions()`` drawn uniformly — and, unlike a detour, that move is
    *labelled*: behaviour cloning imitates it.

    Cloning it for longer only fits its noise better, so its sampled success bounds what BC alone reaches,
    while RL from the clone can sharpen onto the moves that win (the quickstart's warm-up: RL has to beat
    the demonstrator, not just copy it). Draws come from a generator seeded from ``sampling.seed`` on each
    call (one per turn), so data repeat exactly; an env without ``valid_actions`` gets the plain expert.
    ``habit`` set: the noisy move is always that native action (a demonstrator that dithers, e.g. ``look``
    when it should move) instead of a uniform draw.
    """

    def __init__(self, protocol: Any = "plain", *, noise: float = 0.3, habit: str = ""):
        super().__init__(protocol)
        self.noise, self.habit = noise, habit

    def act(self, batch: list[list[Any]], *, sampling: SamplingConfig) -> list[Completion]:
        self._check(batch)
        rng = np.random.default_rng(sampling.seed)
        out = []
        for env in self._envs:
            action = env.expert_action()
            draw, pick = rng.random(), int(rng.integers(1 << 30))  # both drawn for every env: no env shifts another's
            valid = [self.habit] if self.habit else list(getattr(env, "valid_actions", list)())
            if valid and draw < self.noise:
                action = valid[pick % len(valid)]
            out.append(self._completion(action, env))
        return out


def expert_trajectories(policy: HFPolicy, spec: PlaySpec, tasks: Sequence[int], seed: int, *,
                        explore: float = 0.0, max_detours: int = 2, turn_window: int | None = None,
                        noise: float = 0.0, habit: str = "") -> list[Trajectory]:
    """Won expert episodes on ``tasks`` as trajectories (64 envs at a time); ``explore > 0`` uses the
    :class:`ExploringExpertPolicy`, ``noise > 0`` the :class:`NoisyExpertPolicy`; ``turn_window`` set builds
    turn samples (:func:`expert_trajectory`)."""
    out = []
    for start in range(0, len(tasks), 64):
        expert = (ExploringExpertPolicy(spec.protocol, explore=explore, max_detours=max_detours) if explore > 0
                  else NoisyExpertPolicy(spec.protocol, noise=noise, habit=habit) if noise > 0 else ExpertPolicy(spec.protocol))
        episodes = run_text_episodes(expert, spec, tasks[start:start + 64],
                                     seed=seed + start, sampling=SamplingConfig(seed=seed + start))
        unlabeled = expert.detour_turns() if isinstance(expert, ExploringExpertPolicy) else [frozenset()] * len(episodes)
        out += [expert_trajectory(policy, e, u, turn_window) for e, u in zip(episodes, unlabeled) if e.won]
    return out


def epoch_batches(lengths: Sequence[int], batch_size: int, generator: torch.Generator,
                  group_by_length: int = 0) -> list[list[int]]:
    """One epoch's batches of indices into ``lengths``: every index once, in a seeded shuffle.

    ``group_by_length`` > 0: the shuffled order is cut into megabatches of ``group_by_length × batch_size``,
    each sorted by length (longest first) and split into batches, and the batches are shuffled again, so
    a batch holds rows of similar length (less padding: the same data per epoch in fewer padded tokens)
    while its position in the epoch stays random. The megabatch idea is Hugging Face Trainer's
    ``group_by_length``; 0: plain shuffled batches."""
    order = torch.randperm(len(lengths), generator=generator).tolist()
    if group_by_length <= 0:
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    mega = group_by_length * batch_size
    batches = []
    for start in range(0, len(order), mega):
        chunk = sorted(order[start:start + mega], key=lambda i: -lengths[i])  # stable: ties keep the shuffle
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def behaviour_clone(policy: HFPolicy, trajectories: Sequence[Trajectory], *, epochs: int, batch_size: int,
                    lr: float, seed: int, kernel_backend: str = "auto", on_batch: Any = None,
                    seconds: float | None = None, group_by_length: int = 0) -> BCResult:
    """Fit ``policy.model`` to the replies of ``trajectories`` (AdamW; shuffled with a seeded generator;
    ``group_by_length``: batches of similar length, :func:`epoch_batches`).

    ``seconds``: stop after the first batch that ends this long after the start, even mid-epoch (the
    quickstart's BC-only control clones for as long as RL trained); ``None`` runs every epoch.
    ``on_batch(loss)`` is called after each batch; a true return stops there too (a budget known only later)."""
    deadline = None if seconds is None else time.perf_counter() + seconds
    model = policy.model
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(seed)
    lengths = [max(len(s.token_ids) for s in t.segments) for t in trajectories]  # a trajectory's widest packed row
    losses: list[float] = []
    for _ in range(epochs):
        for indices in epoch_batches(lengths, batch_size, generator, group_by_length):
            batch = pack([s for i in indices for s in trajectories[i].segments], policy.pad_id,
                         device=next(model.parameters()).device)  # the model's device (policy.device)
            logp, _ = token_logprobs(model, batch, backend=kernel_backend)  # (B, T)
            loss = -(logp * batch.loss_mask).sum() / batch.loss_mask.sum()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            losses.append(float(loss.detach()))
            stop = on_batch is not None and on_batch(losses[-1])
            if stop or (deadline is not None and time.perf_counter() >= deadline):
                return BCResult(len(trajectories), losses[0], losses[-1])
    return BCResult(len(trajectories), losses[0] if losses else float("nan"), losses[-1] if losses else float("nan"))
