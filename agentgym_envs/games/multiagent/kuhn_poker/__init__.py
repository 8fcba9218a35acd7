"""Kuhn poker: pure rules (``rules.py``), equilibrium scripted play (``policy.py``), the AEC env (``env.py``)."""

from .env import KuhnPokerEnv, env

__all__ = ["KuhnPokerEnv", "env"]
