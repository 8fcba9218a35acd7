"""Generalised advantage estimation (Schulman et al., 2016) for PPO with a value head.

The same scan serves "over tokens" (one step per generated token, the turn's reward on its last token)
and "over turns" (one step per reply, value read at the reply's first token, the advantage broadcast to
the reply's tokens): the caller decides what a step is.
"""

from __future__ import annotations

import torch


def gae_advantages(rewards: torch.Tensor, values: torch.Tensor, *, gamma: float = 1.0,
                   lam: float = 0.95) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and value targets of one trajectory of T steps.

    Args:
        rewards: (T,) reward after each step.
        values: (T,) value estimate of the state before each step; the state after the last step is
            terminal (value 0).

    Returns:
        ``(advantages, returns)``, both (T,), with ``δ_t = r_t + γ V_{t+1} - V_t`` and
        ``A_t = δ_t + γλ A_{t+1}``, ``returns = A + V``.

    >>> a, r = gae_advantages(torch.tensor([0.0, 1.0]), torch.tensor([0.5, 0.5]), gamma=1.0, lam=1.0)
    >>> a, r
    (tensor([0.5000, 0.5000]), tensor([1., 1.]))
    """
    T = rewards.shape[0]
    if values.shape != rewards.shape:
        raise ValueError(f"expected values of shape {tuple(rewards.shape)}, got {tuple(values.shape)}")
    next_values = torch.cat([values[1:], values.new_zeros(1)])  # (T,)  V(s_{t+1}); terminal -> 0
    deltas = rewards + gamma * next_values - values  # (T,)
    advantages = torch.zeros_like(rewards)
    running = rewards.new_zeros(())
    for t in reversed(range(T)):
        running = deltas[t] + gamma * lam * running
        advantages[t] = running
    return advantages, advantages + values
