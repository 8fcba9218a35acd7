"""The quickstart's BC-only control for a recipe run, as a separate process beside its RL (issue 33).

``agentgym quickstart --model smollm2-135m-instruct`` runs the control after RL, for RL's wall time, so a seed
takes twice RL's time. This runs the same control in a second process while RL trains: the recipe's warm-up
(deterministic on one thread: its losses equal the RL run's), then ``quickstart.bc_control``'s procedure (the
warm-up's weights, the same expert episodes, a fresh AdamW at ``bc.lr``), cloned until it has cloned for as
long as the RL run's phase took (read from that run's log, ``held-out after RL (<s> s)``, once it appears),
then held-out success sampled and greedy as the quickstart reports it. Used for seed 2 in docs/trainer.md
("Real model recipe").

    PYTHONPATH=. .venv/bin/python benchmarks/recipe_control_beside.py --rl-log runs/seed2.log \\
        --out-dir runs/seed2-control seed=2
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from trainer.cli.quickstart import held_out, quickstart_config
from trainer.run.loop import Trainer


def rl_seconds(log: Path) -> int | None:
    found = re.search(r"held-out after RL \((\d+) s\)", log.read_text()) if log.exists() else None
    return int(found.group(1)) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("overrides", nargs="*", metavar="key=value")
    parser.add_argument("--rl-log", type=Path, required=True, help="the RL run's quickstart output")
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    args = parser.parse_args()
    start = time.perf_counter()

    def say(line: str) -> None:
        seconds = int(time.perf_counter() - start)
        print(f"[{seconds // 60:02d}:{seconds % 60:02d}] {line}", flush=True)

    args.out_dir.mkdir(parents=True, exist_ok=True)
    trainer = Trainer(quickstart_config(str(args.out_dir), args.overrides, args.model))
    try:
        say(f"warm-up done: {trainer.warm_up()}")
        losses: list[float] = []

        def until_rl_time(loss: float) -> bool:
            losses.append(loss)
            budget = rl_seconds(args.rl_log)
            return budget is not None and time.perf_counter() - t0 >= budget

        say("BC-only control: cloning until the RL run's wall time is known and reached")
        t0 = time.perf_counter()  # includes re-playing the expert episodes (seconds) before the first batch
        trainer.warm_up(epochs=10**6, on_batch=until_rl_time)
        cloned = time.perf_counter() - t0
        if not losses:
            raise SystemExit("no expert episode was won, so there was nothing to clone (raise bc.episodes or env.max_turns)")
        say(f"control done: {cloned:.0f} s cloned (RL {rl_seconds(args.rl_log)} s), {len(losses)} batches, "
            f"loss {losses[0]:.4g} -> {losses[-1]:.4g}")
        control = held_out(trainer)
        say("held-out after the BC control: " + ", ".join(
            f"{name} {r['eval_success']:.3f}±{r['eval_success_ci95']:.3f} ({r['eval_episodes']} episodes)"
            for name, r in control.items()))
        (args.out_dir / "control.json").write_text(json.dumps(
            {"cloned_s": cloned, "rl_s": rl_seconds(args.rl_log), "batches": len(losses), "first_loss": losses[0],
             "last_loss": losses[-1], **control}, indent=1))
    finally:
        trainer.close()


if __name__ == "__main__":
    main()
