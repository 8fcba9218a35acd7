"""Registers the SDK's reference envs."""

from ..registration import register_env

_MAZE = "agentgym_envs.examples.maze:MazeEnv"
_GUESS = "agentgym_envs.examples.guess_number:GuessNumberEnv"

register_env("agentgym/Maze-v0", _MAZE, family="examples", max_episode_steps=60, kwargs={"size": 6},
             description="Find the exit of a 6×6 maze from local views (reference env of the SDK).")
register_env("agentgym/Maze-Easy-v0", _MAZE, family="examples", max_episode_steps=30, kwargs={"size": 4},
             description="Maze, 4×4 rooms.")
register_env("agentgym/Maze-Hard-v0", _MAZE, family="examples", max_episode_steps=150, kwargs={"size": 10},
             description="Maze, 10×10 rooms.")
register_env("agentgym/GuessNumber-v0", _GUESS, family="examples", max_episode_steps=20,
             description="Find a secret number with a guess(number) tool and higher/lower feedback (tool-env example).")
