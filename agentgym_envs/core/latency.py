"""A configurable step latency: any env made slow by sleeping, to stand in for envs whose time is not ours.

Terminal, browser and remote envs spend most of a step waiting (a process, a page load, a network round
trip) while the CPU is free. :class:`StepLatency` reproduces exactly that: each ``step`` sleeps
``seconds`` before passing the action on, using no CPU. The trainer applies it through the config key
``env.step_latency_s`` (docs/trainer.md), which is how ``benchmarks/async_speedup.py`` builds a
rollout-bound setting without registering a new env id.
"""

from __future__ import annotations

import math
import time
from typing import Any

import gymnasium

from .errors import AgentGymError


class StepLatency(gymnasium.Wrapper):
    """``env`` whose every ``step`` first sleeps ``seconds`` (``reset`` is not delayed).

    The wrapper changes nothing else: observations, rewards, infos and ``env.unwrapped`` (snapshots, task
    lists) are the wrapped env's, so determinism and group snapshots are unaffected.

    >>> import gymnasium, agentgym_envs
    >>> env = StepLatency(gymnasium.make("agentgym/Maze-Easy-v0"), 0.01)
    >>> _ = env.reset(seed=0); start = time.perf_counter(); _ = env.step("look")
    >>> time.perf_counter() - start >= 0.01
    True
    """

    def __init__(self, env: gymnasium.Env, seconds: float):
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not math.isfinite(seconds) or seconds < 0:
            raise AgentGymError(f"expected a step latency in seconds >= 0, got {seconds!r}")
        super().__init__(env)
        self.seconds = float(seconds)

    def step(self, action: Any):
        if self.seconds:
            time.sleep(self.seconds)
        return self.env.step(action)
