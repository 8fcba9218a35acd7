"""``agentgym train``, ``quickstart``, ``gateway``, ``plot``, ``configs`` and ``models``: the trainer's subcommands.

:data:`COMMANDS` is registered under the ``agentgym.commands`` entry-point group (``pyproject.toml``), where
``agentgym_envs/cli/main.py`` finds it; each module it names has ``add_arguments(parser)`` and ``run(args)``.
The top of the trainer: nothing imports it.

May import: errors, seeding, collect, learn, models, serve, run, config, recipes.
"""

#: name -> (module with add_arguments(parser) and run(args) -> int, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("trainer.cli.train", "train a policy with RL from a YAML config and key=value overrides"),
    "quickstart": ("trainer.cli.quickstart", "warm the tiny policy up by behaviour cloning, train it with RL (GiGPO) on seeded 3x3 mazes, report held-out success before/after and of a BC-only control (CPU, one thread, about 7 minutes; --model for a pretrained model)"),
    "gateway": ("trainer.cli.gateway", "serve the trajectory-capturing gateway: OpenAI API per session, exact tokens recorded"),
    "plot": ("trainer.cli.plot", "draw a run's training curves (or several runs overlaid) to PNGs and an HTML page"),
    "configs": ("trainer.cli.configs", "list the training recipes the package ships, or copy one to edit (`configs copy NAME DEST`)"),
    "models": ("trainer.cli.models", "list the models known by name (hf:NAME, policy.path=NAME): source and whether installed"),
}


def quiet_transformers() -> None:
    """No progress bars or advisory warnings from transformers on our command lines; never reach the Hub."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
