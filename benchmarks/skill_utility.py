"""Cost of one utility measurement (n probes × 2 arms) per skill-learning family (issue 20).

A SkillLibrary-v0 or Reflect-v0 step costs one measurement: the actor plays the ``n`` probe tasks with the
library before the operation and with the library after it (:func:`meta_envs.skills.utility.measure_utility`).
The baseline arm is cached per library version, so later operations on an unchanged library cost one arm.
Per family this measures, with the procedure-following actor:

* ``make``: building the base env (once per meta-env instance, reused across episodes);
* ``2 arms``: one uncached measurement, empty library → the family's curated library (the first operation of
  an episode), in seconds, and per episode;
* ``1 arm``: a second operation on the same library (baseline from the cache; the op adds a prose-only skill,
  a new library version, so its arm is played);
* ``steps``: base-env steps the two arms played.

Terminal has no curated library: its op is a two-step text skill (``ls``, then ``submit``), every step a real
command in the bubblewrap sandbox; the ``code gate`` row is one ``kind: code`` skill's own tests run in a fresh
sandbox (:func:`meta_envs.skills.code_skills.check_code_skill`), which precedes its measurement.

    .venv/bin/python benchmarks/skill_utility.py [--probes 16] [--families household,webshop,search,puzzles,terminal]
"""

from __future__ import annotations

import argparse
import json
import time

import agentgym_envs  # noqa: F401  (registers the ids)
from meta_envs.skills.actor import ProcedureActor
from meta_envs.skills.evaluate import curated_library
from meta_envs.skills.library import SkillLibrary
from meta_envs.skills.library_env import FAMILIES, SEEDED_TASKS
from meta_envs.skills.skill import Skill, skill_from_files
from meta_envs.skills.utility import ProbeRunner, measure_utility, split_tasks

TERMINAL_SKILL = Skill("look-then-submit", "Look around, then submit.", body="1. ls\n2. submit\n")
CODE_SKILL = {
    "SKILL.md": "---\nname: count-lines\ndescription: Count a file's lines.\nmetadata:\n  kind: code\n---\n"
                "1. run python3 /home/agent/skills/count-lines/scripts/skill.py {file}\n",
    "scripts/skill.py": "import sys\n\ndef count(text):\n    return len(text.splitlines())\n\nif __name__ == '__main__':\n"
                        "    print(count(open(sys.argv[1]).read()))\n",
    "tests/test_skill.py": "import skill\n\ndef test_two():\n    assert skill.count('a\\nb\\n') == 2\n\n"
                           "def test_none():\n    assert skill.count('') == 0\n",
}


def op_library(family: str) -> SkillLibrary:
    return SkillLibrary([TERMINAL_SKILL]) if family == "terminal" else curated_library(family)


def measure_family(family: str, probes: int) -> dict[str, float]:
    """Seconds of one measurement with both arms, and of one with the baseline cached."""
    spec = FAMILIES[family]
    runner = ProbeRunner(spec.env_id, dict(spec.env_kwargs))
    actor = ProcedureActor()
    start = time.perf_counter()
    num_tasks = getattr(runner.env.unwrapped, "num_tasks", SEEDED_TASKS)
    made = time.perf_counter() - start
    _, tasks = split_tasks(num_tasks, 0, probes, seed=0)
    empty, op = SkillLibrary(), op_library(family)
    start = time.perf_counter()
    first = measure_utility(runner, empty, op, tasks, actor)
    both = time.perf_counter() - start
    steps = sum(ep.steps for library in (empty, op) for ep in runner.arm(library, tasks, tasks, actor)[0])  # cached
    second_op = op.with_skill(Skill("bench-note", "A note without steps.", body="Prose only.\n"))  # a new version
    start = time.perf_counter()
    measure_utility(runner, empty, second_op, tasks, actor)
    one = time.perf_counter() - start
    runner.close()
    return {"make_s": made, "two_arms_s": both, "per_episode_ms": 1000 * both / (2 * probes), "one_arm_s": one,
            "steps": steps, "U": first.U}


def code_gate_seconds(repeats: int = 3) -> float:
    from meta_envs.skills.code_skills import check_code_skill

    skill = skill_from_files(CODE_SKILL, folder_name="count-lines")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        report = check_code_skill(skill)
        times.append(time.perf_counter() - start)
        assert report.passed, report.detail
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probes", type=int, default=16)
    parser.add_argument("--families", default="household,webshop,search,puzzles,terminal")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results = {}
    print(f"| family | base env | make (s) | 2 arms, n={args.probes} (s) | per episode (ms) | 1 arm, baseline cached (s) "
          "| steps played | U |")
    print("|---|---|---|---|---|---|---|---|")
    for family in args.families.split(","):
        r = results[family] = measure_family(family, args.probes)
        print(f"| {family} | `{FAMILIES[family].env_id}` | {r['make_s']:.2f} | {r['two_arms_s']:.2f} | "
              f"{r['per_episode_ms']:.1f} | {r['one_arm_s']:.2f} | {r['steps']} | {r['U']:+.3f} |")
    if "terminal" in args.families.split(","):
        results["code_gate_s"] = code_gate_seconds()
        print(f"\ncode gate (a kind: code skill's 2 tests in a fresh bwrap sandbox, median of 3): "
              f"{results['code_gate_s']:.2f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
