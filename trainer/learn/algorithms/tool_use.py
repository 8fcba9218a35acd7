"""Tool-env data shaping: TAO-style filtering of failed tool use, and an EAPO-style tool-abuse penalty.

**TAO filtering.** Source: Cao et al. 2026, "Tool-Aware Optimization with Entropy Guidance for Efficient
Agentic Reinforcement Learning" (TAO-RL), arXiv:2606.03762 (its abstract). Two filters: drop the trajectories whose *every* tool
call failed to execute, and drop the groups whose rollouts all got the same outcome (both give degenerate
advantages). The second is the trainer's ``algorithm.filter_zero_variance`` (reused, not repeated here).
A tool env reports a failed call as an invalid action: the call did not parse, named an unknown tool or
had bad arguments (``agentgym_envs/core/tool_env.py`` raises ``InvalidAction``, so ``info["action_valid"]``
is false); :attr:`~trainer.collect.trajectory.Trajectory.turn_valid` holds it per turn (the rollout records it with each
step of a tool-calling episode). A trajectory without that record is never dropped. TAO's
entropy bonus at post-tool-call tokens is not implemented.

**EAPO penalty.** Source: Chen et al. 2026, "Learning When Not to Act: Mitigating Tool Abuse in Agentic
Reinforcement Learning" (EAPO), arXiv:2606.02132 (its abstract): difficulty-aware reward shaping that penalises redundant tool calls mainly on
easier queries. The abstract gives no formula; ours: a call is *redundant* when the episode already made
the same call (the reply text with whitespace collapsed); the group's success rate ``p`` (fraction won)
measures how easy the task is for the current policy, and each redundant call's turn reward becomes
``r_t − λ · p``: no penalty on tasks the policy never solves (tools may be its only way in), the full
``λ`` on tasks it always solves. EAPO's tool-free rollouts and confidence-aware token reweighting are not
implemented.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ...collect.trajectory import Trajectory


def all_tool_calls_failed(trajectory: Trajectory) -> bool:
    """Whether every turn's call was rejected by the env (``False`` when validity was not recorded).

    >>> t = Trajectory([], [], [], [], 0, rewards=[0.0, 0.0], turn_valid=[False, False])
    >>> all_tool_calls_failed(t), all_tool_calls_failed(dataclasses.replace(t, turn_valid=[False, True]))
    (True, False)
    """
    valid = trajectory.turn_valid
    return len(valid) == trajectory.num_turns > 0 and not any(valid)


def drop_failed_tool_use(groups: Sequence[Sequence[Trajectory]], min_size: int = 2) -> list[list[Trajectory]]:
    """Each group without its all-calls-failed trajectories; a group left with fewer than ``min_size``
    members (nothing to compare) is dropped."""
    kept = [[t for t in g if not all_tool_calls_failed(t)] for g in groups]
    return [g for g in kept if len(g) >= min_size]


def redundant_calls(replies: Sequence[str]) -> list[bool]:
    """Per turn, whether the same call (whitespace collapsed) was already made earlier in the episode.

    >>> redundant_calls(['search("a")', 'search( "a")', ' search("a") ', 'answer("x")'])
    [False, False, True, False]
    """
    seen: set[str] = set()
    out = []
    for reply in replies:
        call = " ".join(reply.split())
        out.append(call in seen)
        seen.add(call)
    return out


def tool_abuse_penalty(group: Sequence[Trajectory], weight: float) -> list[Trajectory]:
    """Copies of ``group``'s trajectories with ``weight · p`` subtracted from each redundant call's reward
    (``p``: the group's success rate). The originals are untouched."""
    p = sum(t.won for t in group) / len(group)
    out = []
    for t in group:
        rewards = [r - weight * p if redundant else r for r, redundant in zip(t.rewards, redundant_calls(t.replies))]
        out.append(dataclasses.replace(t, rewards=rewards) if rewards != t.rewards else t)
    return out
