"""Play one game of a PettingZoo AEC text env between policies (used by the league and the benchmarks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ...seeding import derive_rng
from ...policies.opponents import Opponent

#: Second entry of the policies' seed sequence, so their stream differs from the game's chance stream.
POLICY_STREAM = 7919


@dataclass
class GameRecord:
    """The outcome of one game: each seat's total reward, moves made, and any illegal moves (seat → reason)."""

    seed: int
    returns: dict[str, float]
    moves: int
    forfeits: dict[str, str] = field(default_factory=dict)


def play_game(env: Any, policies: Mapping[str, Opponent], *, seed: int, max_moves: int = 100_000) -> GameRecord:
    """Reset ``env`` with ``seed`` and let ``policies[agent]`` choose every move until the game ends.

    The policies share one generator (``info["rng"]``) seeded from ``seed``, so a game is a pure function
    of the seed and the policies. Exceptions raised by a policy propagate (they are bugs of the policy).
    """
    env.reset(seed=seed)
    rng = derive_rng(seed, POLICY_STREAM)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    forfeits: dict[str, str] = {}
    moves = 0
    for agent in env.agent_iter(max_moves):
        observation, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
        else:
            env.step(policies[agent](observation, {**info, "rng": rng}))
            moves += 1
            after = env.infos.get(agent, {})
            if after.get("action_valid") is False:
                forfeits[agent] = str(after.get("parse_error"))
        for a, r in env.rewards.items():
            totals[a] += float(r)
    return GameRecord(seed, totals, moves, forfeits)
