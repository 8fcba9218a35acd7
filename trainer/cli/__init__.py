"""``agentgym train`` and ``agentgym quickstart`` (registered in ``agentgym_envs/cli/main.py``)."""


def quiet_transformers() -> None:
    """No progress bars or advisory warnings from transformers on our command lines; never reach the Hub."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
