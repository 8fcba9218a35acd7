"""agentgym_envs: text environments for LLM agents, each one ``gymnasium.make`` away.

>>> import gymnasium, agentgym_envs
>>> env = gymnasium.make("agentgym/Maze-Easy-v0")
>>> obs, info = env.reset(seed=0)
>>> isinstance(obs, str) and "instruction" in info
True
"""

from __future__ import annotations

import importlib

from .core import InvalidAction, Step, Task, TaskEnv, TextEnv, ToolEnv, UnicodeText, Verdict, tool
from .registration import catalogue, env_ids, make, make_multi, multi_ids, register_env, register_multi

__version__ = "0.1.0"

#: Each family registers its ids from a light ``<family>/register.py`` (entry points are strings).
_FAMILIES = ("examples", "household", "games", "games.multiagent", "games.textworld", "search", "web", "tutoring", "terminal")

for _family in _FAMILIES:
    importlib.import_module(f"{__name__}.{_family}.register")

from .plugins import load_env_plugins  # noqa: E402  (after our own ids: plugins may build on them)

load_env_plugins()  # meta_envs.register and any other package's ids (the ``agentgym.envs`` group)

__all__ = [
    "TextEnv", "ToolEnv", "TaskEnv", "Task", "Verdict", "Step", "InvalidAction", "UnicodeText", "tool",
    "make", "make_multi", "multi_ids", "env_ids", "catalogue", "register_env", "register_multi",
]
