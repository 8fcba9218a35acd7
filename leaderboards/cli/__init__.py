"""``agentgym bench``, ``agentgym leaderboard`` and ``agentgym view``: the leaderboards' subcommands.

:data:`COMMANDS` is registered under the ``agentgym.commands`` entry-point group (``pyproject.toml``), where
``agentgym_envs/cli/main.py`` finds it; each module it names has ``add_arguments(parser)`` and ``run(args)``.
"""

#: name -> (module with add_arguments(parser) and run(args) -> int, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("leaderboards.cli.bench", "evaluate a policy on a benchmark suite into a results store (resumable)"),
    "export": ("leaderboards.cli.export", "export episodes (a store, an env played by a policy, training rollouts) as JSONL / datasets"),
    "leaderboard": ("leaderboards.cli.leaderboard", "render results stores as a Markdown table and an HTML page with plots"),
    "view": ("leaderboards.cli.view", "show stored episodes turn by turn: one static HTML file, or served on loopback"),
}
