"""Liar's Dice: pure rules (``rules.py``), probability-driven scripted play (``policy.py``), the AEC env (``env.py``)."""

from .env import LiarsDiceEnv, env

__all__ = ["LiarsDiceEnv", "env"]
