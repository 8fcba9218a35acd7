"""An episode's return kept inside the env's ``reward_bounds`` (the protocol contract, ``docs/sdk.md``).

The meta-envs pay per step, and several steps of an episode may each cost up to the bound (an invalid
operation −1, a harmful measured change −1.9, a failed repair …), so their *sum* could leave the declared
bounds: SkillLibrary-v0 returned −4 against (−2, 1), TaskDesign-v0 −2 and Reflect-v0 −3 against (−1, 1).
The contract (:mod:`agentgym_envs.protocols.wrapper`) reads ``reward_bounds`` as the bounds of the episode's
return, and one stream of garbage must earn what one illegal move earns under any protocol. So each step's
reward is cut to what keeps the running return inside the bounds: once it reaches the floor, further losses
are free and gains still pay. ``info["reward_uncut"]`` holds the env's own reward on a step that was cut.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BoundedReturn", "bounded_reward"]


def bounded_reward(reward: float, episode_return: float, bounds: tuple[float, float]) -> float:
    """``reward`` cut so that ``episode_return + reward`` stays in ``bounds`` (``episode_return`` already in them).

    >>> bounded_reward(-1.0, -1.5, (-2.0, 1.0)), bounded_reward(-1.0, -2.0, (-2.0, 1.0)), bounded_reward(0.5, 0.5, (-1.0, 1.0))
    (-0.5, 0.0, 0.5)
    """
    low, high = bounds
    return float(min(max(reward, low - episode_return), high - episode_return))


class BoundedReturn:
    """Mixin before :class:`~agentgym_envs.core.TextEnv`: every step's reward goes through :func:`bounded_reward`.

    It wraps the public ``reset``/``step`` (whose guards stay the base's), so invalid actions the base
    contract rejects, the env's own verdicts and steps after the end are all counted. The running return is
    an instance attribute, so snapshots carry it.
    """

    _episode_return: float = 0.0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        self._episode_return = 0.0
        return super().reset(seed=seed, options=options)  # type: ignore[misc]

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict]:
        observation, reward, terminated, truncated, info = super().step(action)  # type: ignore[misc]
        paid = bounded_reward(reward, self._episode_return, self.reward_bounds)  # type: ignore[attr-defined]
        if paid != reward:
            info["reward_uncut"] = float(reward)
        self._episode_return += paid
        return observation, paid, terminated, truncated, info
