"""The ``agentgym`` command line. Each subcommand is a module with ``add_arguments`` and ``run``."""
