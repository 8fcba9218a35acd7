"""``agentgym bench`` and ``agentgym leaderboard`` (registered in ``agentgym_envs/cli/main.py``)."""
