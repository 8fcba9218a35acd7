"""Outcome-level advantage estimators: one number per trajectory, from its group of G rollouts.

All take ``returns`` of shape (num_groups, G) (the G rollouts of each task) and return advantages of the
same shape; every generated token of a trajectory then gets its trajectory's advantage.
"""

from __future__ import annotations

import torch


def grpo_advantages(returns: torch.Tensor, *, normalize_std: bool = True, eps: float = 1e-6) -> torch.Tensor:
    """GRPO (Shao et al., 2024): ``(R_i - mean_group R) / (std_group R + eps)``.

    ``normalize_std=False`` is Dr.GRPO (Liu et al., 2025): dividing by the group's std over-weights groups
    that are nearly all-solved or all-failed, so only the mean is subtracted.

    >>> grpo_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]), normalize_std=False)
    tensor([[ 0.5000, -0.5000, -0.5000,  0.5000]])
    """
    centred = returns - returns.mean(dim=-1, keepdim=True)  # (n, G)
    if not normalize_std:
        return centred
    return centred / (returns.std(dim=-1, unbiased=True, keepdim=True) + eps)


def rloo_advantages(returns: torch.Tensor) -> torch.Tensor:
    """RLOO (Ahmadian et al., 2024): ``R_i`` minus the mean return of the *other* G-1 rollouts.

    Equal to ``G/(G-1) · (R_i - mean R)``; unbiased because the baseline does not use ``R_i``.

    >>> rloo_advantages(torch.tensor([[1.0, 0.0, 0.0]]))
    tensor([[ 1.0000, -0.5000, -0.5000]])
    """
    G = returns.shape[-1]
    if G < 2:
        raise ValueError(f"RLOO needs at least 2 rollouts per group, got group_size={G}")
    leave_one_out = (returns.sum(dim=-1, keepdim=True) - returns) / (G - 1)  # (n, G)
    return returns - leave_one_out


def reinforce_pp_advantages(returns: torch.Tensor, *, group_baseline: bool = True, eps: float = 1e-6) -> torch.Tensor:
    """REINFORCE++ (Hu, 2025): returns normalised by the *global batch* statistics instead of per group.

    With ``group_baseline`` (the "REINFORCE++-baseline" variant) the group mean is subtracted first, then
    everything is divided by the std over the whole batch: group-relative, yet without GRPO's per-group std.

    >>> reinforce_pp_advantages(torch.tensor([[1.0, 0.0], [1.0, 1.0]]))
    tensor([[ 1.2247, -1.2247],
            [ 0.0000,  0.0000]])
    """
    centred = returns - (returns.mean(dim=-1, keepdim=True) if group_baseline else returns.mean())
    return centred / (centred.std(unbiased=True) + eps)
