"""GiGPO (Feng et al., 2025): episode-level groups plus step-level groups keyed by ``state_key``.

Rollouts of one task that pass through the same state form an *anchor-state group*: the replies written
in that state are compared by their discounted return from there on. A turn's advantage is
``A^E(episode) + ω · A^S(turn)``, both group-normalised the GRPO way (Dr.GRPO's mean-only when
``normalize_std=False``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import torch

from .outcome import grpo_advantages


def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """``G_t = Σ_{k≥t} γ^{k-t} r_k`` for one trajectory's per-turn rewards.

    >>> discounted_returns([0.0, 0.0, 1.0], 0.5)
    [0.25, 0.5, 1.0]
    """
    out, running = [0.0] * len(rewards), 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def step_group_advantages(turn_returns: Sequence[Sequence[float]], state_keys: Sequence[Sequence[str]], *,
                          normalize_std: bool = True, eps: float = 1e-6) -> list[list[float]]:
    """A^S for the G trajectories of one task: each turn's return normalised within its anchor-state group.

    A state visited once (a group of one) gets 0: there is nothing to compare it with.

    >>> step_group_advantages([[0.0, 1.0], [1.0]], [["s0", "s1"], ["s0"]], normalize_std=False)
    [[-0.5, 0.0], [0.5]]
    """
    groups: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for i, keys in enumerate(state_keys):
        for t, key in enumerate(keys):
            groups[key].append((i, t))
    out = [[0.0] * len(r) for r in turn_returns]
    for members in groups.values():
        if len(members) < 2:
            continue
        values = torch.tensor([[turn_returns[i][t] for i, t in members]], dtype=torch.float64)
        advantages = grpo_advantages(values, normalize_std=normalize_std, eps=eps)[0]
        for (i, t), a in zip(members, advantages.tolist()):
            out[i][t] = a
    return out


def gigpo_advantages(turn_rewards: Sequence[Sequence[float]], state_keys: Sequence[Sequence[str]], *,
                     gamma: float = 0.95, omega: float = 1.0, normalize_std: bool = True) -> list[list[float]]:
    """Per-turn GiGPO advantages for the G trajectories of one task.

    >>> gigpo_advantages([[0.0, 1.0], [0.0]], [["s0", "s1"], ["s0"]], gamma=1.0, normalize_std=False)
    [[1.0, 0.5], [-1.0]]
    """
    episode_returns = torch.tensor([[sum(r) for r in turn_rewards]], dtype=torch.float64)  # (1, G)
    episode_adv = grpo_advantages(episode_returns, normalize_std=normalize_std)[0].tolist()
    step_adv = step_group_advantages([discounted_returns(r, gamma) for r in turn_rewards], state_keys,
                                     normalize_std=normalize_std)
    return [[episode_adv[i] + omega * a for a in step_adv[i]] for i in range(len(turn_rewards))]
