"""The ``agentgym`` command line. Each subcommand is a module with ``add_arguments`` and ``run``.

:data:`COMMANDS` holds the env package's own; the trainer and the leaderboards register theirs the same way
(their ``cli/__init__.py``), all under the ``agentgym.commands`` entry-point group that ``main`` reads.
"""

#: name -> (module with add_arguments(parser) and run(args) -> int, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("agentgym_envs.cli.list_envs", "list registered env ids with one-line descriptions"),
    "play": ("agentgym_envs.cli.play", "play an env yourself in the terminal"),
    "check": ("agentgym_envs.cli.check", "run check_env on env ids and print a verdict"),
    "new": ("agentgym_envs.cli.new", "scaffold a new env module with a test"),
    "baselines": ("agentgym_envs.cli.baselines", "evaluate random and scripted-expert agents on registered envs"),
}
