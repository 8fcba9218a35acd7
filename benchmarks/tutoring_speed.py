"""Speed of the tutoring family: episodes/s (and steps/s) for each scripted tutor and scheduler.

Episodes run through ``gymnasium.make`` (wrappers included, as users run them), with seeds 0, 1, …; the
time includes the tutor's own decision, since the scripted tutors are what trains and evaluates against
these envs most. Rates are given per wall-clock second and per second of this process's CPU time (the
latter is what to compare on a shared, loaded machine). Also prints the mean return with its 95% interval
and the share of episodes won, so one run gives the baseline table.

    python benchmarks/tutoring_speed.py [--episodes 300]
"""

from __future__ import annotations

import argparse

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.tutoring.evaluation import evaluate

RUNS = (
    ("agentgym/Tutoring-v1", ("expert", "silent", "random", "answer_giver")),
    ("agentgym/Tutoring-HardLeak-v1", ("expert", "answer_giver")),
    ("agentgym/PracticeScheduling-v0", ("expert", "round_robin", "random")),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=300, help="episodes per policy")
    args = parser.parse_args()
    print(f"| {'env':32} | {'policy':12} | {'episodes/s':>10} | {'per CPU-s':>9} | {'steps/CPU-s':>11} "
          f"| {'return (95% CI)':>16} | {'won':>5} |")
    print(f"|{'-' * 34}|{'-' * 14}|{'-' * 12}|{'-' * 11}|{'-' * 13}|{'-' * 18}|{'-' * 7}|")
    for env_id, policies in RUNS:
        for policy in policies:
            s = evaluate(env_id, policy, episodes=args.episodes)
            steps = s.metrics.get("turns", s.metrics.get("activities", 0.0)) or 1.0
            print(f"| {env_id:32} | {policy:12} | {s.episodes_per_s:10,.0f} | {s.episodes_per_cpu_s:9,.0f} | "
                  f"{s.episodes_per_cpu_s * steps:11,.0f} | {s.mean:+7.3f} ± {s.ci95:.3f} | {s.won:5.3f} |")


if __name__ == "__main__":
    main()
