"""Limit Hold'em: cards and the hand evaluator (``cards.py``), pure rules (``rules.py``), hand-strength
scripted play (``policy.py``), the AEC env (``env.py``)."""

from .env import LimitHoldemEnv, env

__all__ = ["LimitHoldemEnv", "env"]
