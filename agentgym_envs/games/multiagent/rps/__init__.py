"""Rock-Paper-Scissors over many rounds: pure rules (``rules.py``), a frequency-counter scripted policy
(``policy.py``), and both a turn-based AEC env and a simultaneous Parallel env (``env.py``)."""

from .env import RockPaperScissorsEnv, RockPaperScissorsParallelEnv, env, parallel_env

__all__ = ["RockPaperScissorsEnv", "RockPaperScissorsParallelEnv", "env", "parallel_env"]
