"""``agentgym quickstart``: build the tiny policy, warm it up on expert play, improve it with RL, and show it.

On a CPU in a few minutes: the tokenizer and model are built locally from household text, behaviour
cloning fits the scripted expert's pick-and-place episodes, RL (GiGPO) trains on train-split tasks, and
held-out (``valid_seen``) success is measured before and after RL. The last line printed is exactly
``held-out success: before=<x> after=<y>``. The settings are :data:`QUICKSTART_CONFIG` (``trainer/configs/quickstart.yaml``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import TrainConfig

#: The quickstart's settings, the one copy: package data, so an installed (non-editable) package finds it
#: too; ``configs/quickstart.yaml`` in a checkout is a link to this file.
QUICKSTART_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"


def quickstart_config(out_dir: str, overrides: list[str] = ()) -> TrainConfig:
    """The quickstart's :class:`~trainer.config.TrainConfig`: :data:`QUICKSTART_CONFIG`, run in ``out_dir``,
    then the user's ``key=value`` overrides."""
    from ..config import load_config

    return load_config(QUICKSTART_CONFIG, [f"out_dir={out_dir}", *overrides])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="changes to the quickstart settings")
    parser.add_argument("--out-dir", default=None, help="run directory (default: a fresh temporary one)")


def run(args: argparse.Namespace) -> int:
    from ..loop import Trainer, fit
    from . import quiet_transformers

    quiet_transformers()
    start = time.perf_counter()
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="agentgym-quickstart-")
    config = quickstart_config(out_dir, list(args.overrides))
    print(f"[{_clock(start)}] building the tiny policy (tokenizer + model, cached after the first run)", flush=True)
    trainer = Trainer(config)
    try:
        print(f"[{_clock(start)}] behaviour cloning on {config.bc.episodes} scripted-expert episodes", flush=True)
        warm = trainer.warm_up()
        trainer.save()  # step 0: the warmed-up policy (``agentgym train`` on this out_dir resumes from here)
        print(f"[{_clock(start)}] warm-up done: {warm}", flush=True)
        before = trainer.evaluate()
        print(f"[{_clock(start)}] held-out success after warm-up: {before['eval_success']:.3f} ± {before['eval_success_ci95']:.3f}", flush=True)
        print(f"[{_clock(start)}] RL ({config.algorithm.estimator}) for {config.steps} updates of "
              f"{config.rollout.tasks_per_step}×{config.rollout.group_size} episodes; log in {out_dir}/metrics.jsonl", flush=True)
        fit(trainer, echo=lambda line: print(f"[{_clock(start)}] {line}", flush=True))
        after = trainer.evaluate()
    finally:
        trainer.close()
    print(f"[{_clock(start)}] held-out success after RL: {after['eval_success']:.3f} ± {after['eval_success_ci95']:.3f}", flush=True)
    print(f"held-out success: before={before['eval_success']:.3f} after={after['eval_success']:.3f}")
    return 0


def _clock(start: float) -> str:
    seconds = int(time.perf_counter() - start)
    return f"{seconds // 60:02d}:{seconds % 60:02d}"
