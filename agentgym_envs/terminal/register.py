"""Registers the terminal family's ids (entry points are strings: nothing heavy is imported here)."""

from ..registration import register_env

register_env(
    "agentgym/Terminal-v0",
    "agentgym_envs.terminal.env:TerminalEnv",
    family="terminal",
    description="Shell tasks in a sandboxed persistent bash session (files, grep/sed/awk, Python, git, C builds, "
                "CSV/JSON, permissions, processes); reward = fraction of the task's tests passed. "
                "backend= bwrap (default) | docker; split= all/train/test; difficulty=, category=.",
    max_episode_steps=50,
    kwargs={"backend": "bwrap"},
)
