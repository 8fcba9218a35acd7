"""Tic-tac-toe: pure rules (``rules.py``), perfect scripted play (``policy.py``), the AEC env (``env.py``)."""

from .env import TicTacToeEnv, env

__all__ = ["TicTacToeEnv", "env"]
