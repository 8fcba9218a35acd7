"""`agentgym quickstart` with a validation set beside the held-out one (issue 33 §2, greedy gains).

Runs the quickstart unchanged (:func:`trainer.cli.quickstart.run`; the same arguments and ``key=value``
overrides) and, wherever it measures held-out success (after the warm-up, after RL, after the BC-only
control), also plays 64 *validation* mazes: tasks 100000–100063 of the train stream (even reset seeds,
never sampled in training, which draws tasks below 100000), once greedy and 4 times at the rollout
temperature. Settings are chosen on these validation figures, not on the held-out ones::

    PYTHONPATH=. .venv/bin/python benchmarks/quickstart_validation.py rollout.revisit_penalty=0.2 policy.threads=1

Each line it adds starts with ``validation:`` and ends with the seconds it took (subtract them for the
quickstart's own wall time); the quickstart's own output is unchanged.
"""

from __future__ import annotations

import argparse
import sys
import time

from agentgym_envs.policies import SamplingConfig
from trainer.cli import quickstart
from trainer.collect.episodes import pass_at_k, run_text_episodes, success_rate
from trainer.seeding import derive_seed

VALIDATION = list(range(100_000, 100_064))
_held_out = quickstart.held_out


def validation(trainer) -> str:
    """Greedy and sampled success (and pass@1/4) of the trainer's policy on :data:`VALIDATION`."""
    parts = []
    for name, temperature, repeats in (("greedy", 0.0, 1), ("sampled", trainer.config.rollout.temperature, 4)):
        sampling = SamplingConfig(temperature=temperature, max_new_tokens=trainer.config.rollout.max_new_tokens,
                                  seed=derive_seed(trainer.config.seed, 99))
        episodes = run_text_episodes(trainer.sampling_policy(), trainer.train_spec, VALIDATION * repeats, seed=0,
                                     sampling=sampling)
        success, ci95 = success_rate(episodes)
        passes = pass_at_k(episodes, (1, 4)) if repeats > 1 else {}
        parts.append(f"{name} {success:.3f}±{ci95:.3f} ({len(episodes)})"
                     + "".join(f" pass@{k} {p:.3f}" for k, p in passes.items()))
    return ", ".join(parts)


def held_out_and_validation(trainer):
    results = _held_out(trainer)
    start = time.perf_counter()
    line = validation(trainer)
    print(f"validation: {line} [{time.perf_counter() - start:.0f} s]", flush=True)
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quickstart.add_arguments(parser)
    quickstart.held_out = held_out_and_validation  # run() looks it up at each call
    return quickstart.run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
