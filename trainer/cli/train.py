"""``agentgym train CONFIG [key=value …]``: train from a YAML config with command-line overrides.

A run in ``out_dir`` that has a checkpoint resumes from it (the same command continues a killed run).
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="YAML config file (see configs/), or '-' for the defaults")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="e.g. rollout.group_size=8 loss.kl_coef=0.01")


def run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..errors import TrainerError
    from ..loop import Trainer, fit
    from . import quiet_transformers

    quiet_transformers()
    try:
        config = load_config(None if args.config == "-" else args.config, args.overrides)
    except TrainerError as e:
        print(f"agentgym train: {e}")
        return 2
    trainer = Trainer(config)
    try:
        fit(trainer)
        result = trainer.evaluate()
    finally:
        trainer.close()
    print(f"held-out success ({config.env.make_kwargs(train=False).get('split', 'eval env')}): {result['eval_success']:.3f} ± {result['eval_success_ci95']:.3f}")
    return 0
