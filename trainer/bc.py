"""Behaviour cloning from the scripted expert: the warm-up that gives RL a policy worth improving.

Expert episodes are turned into trajectories with the same :class:`~trainer.trajectory.TrajectoryBuilder`
that rollouts use (each reply is ``encode(reply) + [end-of-turn]``, loss-masked in), so BC trains on
exactly the token layout the policy later samples in. The loss is the mean negative log-likelihood of
the replies' tokens, computed with the chunked log-prob path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from agentgym_envs.chat import episode_messages

from .backends.hf import HFPolicy
from .baselines import ScriptedExpertPolicy
from .episodes import EnvSpec, TextEpisode, run_text_episodes
from .logprobs import pack, token_logprobs
from .policy import Completion, SamplingConfig
from .trajectory import Trajectory, TrajectoryBuilder


@dataclass
class BCResult:
    trajectories: int
    first_loss: float
    last_loss: float


def expert_trajectory(policy: HFPolicy, episode: TextEpisode) -> Trajectory:
    """The token trajectory of a text episode, as if the policy had sampled the expert's replies."""
    history = episode.history
    builder = TrajectoryBuilder(policy, episode_messages(history.system_prompt, history.first_observation, []),
                                task_index=episode.task_index)
    eos = policy.tokenizer.eos_token_id
    for k, (reply, _) in enumerate(history.turns):
        ids = policy.encode(reply) + [eos]
        builder.add_reply(Completion(reply, ids, [0.0] * len(ids)), state_key="")
        builder.record_step(episode.rewards[k])
        if k + 1 < len(history.turns):
            builder.add_observation(episode_messages(history.system_prompt, history.first_observation,
                                                     history.turns[:k + 1]))
    return builder.finish("terminated", won=episode.won)


def expert_trajectories(policy: HFPolicy, spec: EnvSpec, tasks: Sequence[int], seed: int) -> list[Trajectory]:
    """Won expert episodes on ``tasks`` as trajectories (64 envs at a time)."""
    out = []
    for start in range(0, len(tasks), 64):
        episodes = run_text_episodes(ScriptedExpertPolicy(spec.protocol), spec, tasks[start:start + 64],
                                     seed=seed + start, sampling=SamplingConfig(seed=seed))
        out += [expert_trajectory(policy, e) for e in episodes if e.won]
    return out


def behaviour_clone(policy: HFPolicy, trajectories: Sequence[Trajectory], *, epochs: int, batch_size: int,
                    lr: float, seed: int, kernel_backend: str = "auto", on_batch: Any = None) -> BCResult:
    """Fit ``policy.model`` to the replies of ``trajectories`` (AdamW; shuffled with a seeded generator)."""
    model = policy.model
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(seed)
    losses: list[float] = []
    for _ in range(epochs):
        order = torch.randperm(len(trajectories), generator=generator).tolist()
        for start in range(0, len(order), batch_size):
            batch = pack([trajectories[i] for i in order[start:start + batch_size]], policy.pad_id)
            logp, _ = token_logprobs(model, batch, backend=kernel_backend)  # (B, T)
            loss = -(logp * batch.loss_mask).sum() / batch.loss_mask.sum()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            losses.append(float(loss.detach()))
            if on_batch is not None:
                on_batch(losses[-1])
    return BCResult(len(trajectories), losses[0] if losses else float("nan"), losses[-1] if losses else float("nan"))
