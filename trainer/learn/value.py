"""The critic for PPO: a linear value head on the policy's final hidden states, read once per turn.

Over turns, the state a reply is written in is the whole context before the reply's first sampled token,
so the value of turn ``k`` is read from the hidden state at the position just before that token. GAE
(:func:`trainer.learn.algorithms.gae_advantages`) then runs over the turns of each trajectory.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..collect.trajectory import Trajectory


class ValueHead(torch.nn.Module):
    """``V(h) = w·h + b``; zero-initialised so the first advantages are the plain returns."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.linear = torch.nn.Linear(hidden_size, 1)
        torch.nn.init.zeros_(self.linear.weight)
        torch.nn.init.zeros_(self.linear.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., H) -> (...) values, in float32."""
        return self.linear(hidden.float()).squeeze(-1)


def turn_starts(segment: Trajectory) -> dict[int, int]:
    """For each turn sampled in this token sequence, the position whose hidden state precedes its first token."""
    starts: dict[int, int] = {}
    for i, turn in enumerate(segment.token_turns):
        if turn >= 0 and turn not in starts:
            starts[turn] = i - 1
    return starts


def dense_value_targets(segment: Trajectory, turn_targets: Sequence[float]) -> list[float]:
    """A per-token list holding each turn's value target at its start position in ``segment``, NaN elsewhere."""
    row = [float("nan")] * len(segment.token_ids)
    for turn, position in turn_starts(segment).items():
        row[position] = float(turn_targets[turn])
    return row
