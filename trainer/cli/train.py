"""``agentgym train CONFIG [key=value …]``: train from a YAML config with command-line overrides.

A run in ``out_dir`` that has a checkpoint resumes from it (the same command continues a killed run) if
the checkpoint was written under the same config (``steps`` and the logging/eval-frequency keys may
differ); a changed config is refused with the differing keys, unless ``--resume`` forces it.

Many processes (docs/trainer.md, "Many GPUs"): ``torchrun --nproc_per_node N -m trainer.cli.train CONFIG
key=value …`` (or ``torchrun --nproc_per_node N --no-python agentgym train …``) trains data-parallel with
``distributed.strategy`` ``ddp`` or ``fsdp``; rank 0 logs, evaluates, prints and writes checkpoints.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="YAML config file (see configs/), or '-' for the defaults")
    # REMAINDER: ``--resume`` may come anywhere among the overrides (argparse's "*" stops at the first option
    # and then refuses the overrides after it); run() takes it out of the list.
    parser.add_argument("overrides", nargs=argparse.REMAINDER, metavar="key=value",
                        help="e.g. rollout.group_size=8 loss.kl_coef=0.01")
    parser.add_argument("--resume", action="store_true",
                        help="resume the checkpoint in out_dir even if its config differs (the differences are logged); "
                             "anywhere on the line")


def run(args: argparse.Namespace) -> int:
    from ..errors import CheckpointError, TrainerError
    from ..run.config import load_config
    from ..run.distributed import close_world, init_world
    from . import quiet_transformers

    if args.config != "-":
        from agentgym_envs.cli.errors import require_file

        require_file(args.config, "config file", "give a YAML file, '-' for the defaults, or copy a shipped recipe "
                                                  "with `agentgym configs copy NAME` (`agentgym configs list`)")
    quiet_transformers()
    try:
        overrides = [o for o in args.overrides if o != "--resume"]
        forced = ["resume=true"] if getattr(args, "resume", False) or len(overrides) < len(args.overrides) else []
        config = load_config(None if args.config == "-" else args.config, overrides + forced)
        world = init_world(config.distributed)  # under torchrun: join the ranks (Trainer finds the same group)
    except TrainerError as e:
        print(f"agentgym train: {e}", file=sys.stderr)
        return 2
    try:
        return _train(config, world)
    except (CheckpointError, TrainerError) as e:
        print(f"agentgym train{f' (rank {world.rank})' if world.active else ''}: {e}", file=sys.stderr)
        return 2
    finally:
        close_world(world)


def _train(config: Any, world: Any) -> int:
    """Train, evaluate, print the held-out success (rank 0 under torchrun); raises TrainerError on bad input."""
    from ..run.fit import fit
    from ..run.loop import Trainer

    trainer = Trainer(config)
    try:
        fit(trainer)
        result = trainer.evaluate()  # every rank takes part (FSDP gathers); rank 0 evaluates
    finally:
        trainer.close()
    if world.is_main:
        print(f"held-out success ({config.env.make_kwargs(train=False).get('split', 'eval env')}): "
              f"{result['eval_success']:.3f} ± {result['eval_success_ci95']:.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m trainer.cli.train CONFIG key=value …``: the entry ``torchrun`` launches (one per rank)."""
    parser = argparse.ArgumentParser(prog="python -m trainer.cli.train", description=__doc__.splitlines()[0])
    add_arguments(parser)
    from agentgym_envs.cli.errors import UsageError

    try:
        return run(parser.parse_args(argv))
    except UsageError as e:
        print(f"{parser.prog}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
