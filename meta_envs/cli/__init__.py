"""The meta-environments' subcommands (``agentgym selfplay``, ``agentgym skills``).

:data:`COMMANDS` is registered under the ``agentgym.commands`` entry-point group (``pyproject.toml``), where
``agentgym_envs/cli/main.py`` finds it; each module it names has ``add_arguments(parser)`` and ``run(args)``.
"""

#: name -> (module with add_arguments(parser) and run(args) -> int, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "selfplay": ("meta_envs.cli.selfplay", "self-play rounds: a designer writes envs, they are validated in a "
                                           "sandbox, a solver plays them, accepted ones are archived"),
    "skills": ("meta_envs.cli.skills", "skill learning: `skills eval` compares no skills, curated and "
                                       "self-generated skills per family"),
}
