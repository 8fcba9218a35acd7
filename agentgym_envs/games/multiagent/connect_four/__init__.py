"""Connect Four: pure rules (``rules.py``), threat-aware scripted play (``policy.py``), the AEC env (``env.py``)."""

from .env import ConnectFourEnv, env

__all__ = ["ConnectFourEnv", "env"]
