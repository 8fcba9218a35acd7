"""``agentgym train CONFIG [key=value …]``: train from a YAML config with command-line overrides.

A run in ``out_dir`` that has a checkpoint resumes from it (the same command continues a killed run) if
the checkpoint was written under the same config (``steps`` and the logging/eval-frequency keys may
differ); a changed config is refused with the differing keys, unless ``--resume`` forces it.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="YAML config file (see configs/), or '-' for the defaults")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="e.g. rollout.group_size=8 loss.kl_coef=0.01")
    parser.add_argument("--resume", action="store_true",
                        help="resume the checkpoint in out_dir even if its config differs (the differences are logged)")


def run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..errors import CheckpointError, TrainerError
    from ..loop import Trainer, fit
    from . import quiet_transformers

    quiet_transformers()
    try:
        forced = ["resume=true"] if getattr(args, "resume", False) else []
        config = load_config(None if args.config == "-" else args.config, list(args.overrides) + forced)
    except TrainerError as e:
        print(f"agentgym train: {e}")
        return 2
    trainer = Trainer(config)
    try:
        fit(trainer)
        result = trainer.evaluate()
    except CheckpointError as e:
        print(f"agentgym train: {e}")
        return 2
    finally:
        trainer.close()
    print(f"held-out success ({config.env.make_kwargs(train=False).get('split', 'eval env')}): {result['eval_success']:.3f} ± {result['eval_success_ci95']:.3f}")
    return 0
