"""Compare advantage estimators on small CPU settings under the same budget (issue 18, part 2).

Every estimator of ``trainer.learn.algorithms.ESTIMATORS`` (GRPO, Dr.GRPO, RLOO, REINFORCE++, PPO-GAE, GiGPO,
GiGPO-mean, GraphGPO, TIGPO) trains the tiny policy from the same behaviour-cloned start on each setting
(a seeded env with held-out tasks, see ``SETTINGS``), for several seeds, with the same number of updates and
episodes per update. Held-out success is measured on a fixed held-out set every ``Setting.eval_every``
updates and after the warm-up (update 0). The driver writes a markdown table (final held-out success, mean
over seeds ± a 95% t-interval over seeds; the BC start; wall time per run) and a PNG of held-out success vs
updates, one panel per setting. Every figure is read from the runs' JSON results, never typed.

Each (setting, seed) is its own subprocess (``--worker``: one BC warm-up, then the estimators in turn from
its weights), at most ``--jobs`` at a time, so a crash costs one unit, not the benchmark; with more jobs than
units the estimators are split across processes. Run it with the venv's Python (no activation needed)::

    .venv/bin/python benchmarks/compare_estimators.py --out docs/img --jobs 2        # ~75 min on 2 cores
    .venv/bin/python benchmarks/compare_estimators.py --quick --out /tmp/cmp      # smoke run, < 2 min
    .venv/bin/python benchmarks/compare_estimators.py --dry-run                   # print the plan only
    .venv/bin/python benchmarks/compare_estimators.py --from-results docs/img/compare_estimators.json --out /tmp/r

The measured results and what they show: docs/trainer.md, "Comparing estimators".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a plain script from any directory
    sys.path.insert(0, str(ROOT))

ESTIMATOR_OVERRIDES: dict[str, list[str]] = {
    "grpo": ["algorithm.estimator=grpo"],
    "dr_grpo": ["algorithm.estimator=dr_grpo", "loss.aggregation=token_sum_norm"],  # as docs/trainer.md pairs it
    "rloo": ["algorithm.estimator=rloo"],
    "reinforce_pp": ["algorithm.estimator=reinforce_pp"],
    "ppo_gae": ["algorithm.estimator=ppo_gae"],
    "gigpo": ["algorithm.estimator=gigpo"],
    "gigpo_mean": ["algorithm.estimator=gigpo_mean"],
    "graphgpo": ["algorithm.estimator=graphgpo"],
    "tigpo": ["algorithm.estimator=tigpo"],
}

# Shared by every run: the tiny policy, sampled RL at T = 1, zero-variance groups kept so every estimator sees
# the same batch (and the step-level estimators keep the signal of groups whose returns are all equal).
# one torch thread per run (as the quickstart; here --jobs runs share the cores), as the figures were made
COMMON = ["progress=false", "checkpoint_every=0", "rollout.temperature=1.0", "algorithm.filter_zero_variance=false",
          "policy.threads=1"]

QUICKSTART_YAML = ROOT / "trainer" / "configs" / "quickstart.yaml"


@dataclass(frozen=True)
class Setting:
    """One env and its budget: a base config file, the overrides on top, and the held-out evaluation."""

    name: str
    overrides: list[str]
    updates: int
    eval_every: int
    config: Path | None = None
    quick_updates: int = 2
    notes: str = ""


# Both settings are the quickstart's recipe (trainer/configs/quickstart.yaml: Maze-Easy 3×3, ≤ 10 turns, BC on
# 256 noisy-expert episodes × 30 epochs, 8 tasks × G 8 per update, 2 minibatches × 2 epochs, lr 5e-4), cut to
# 20 updates, with 128 held-out episodes (64 tasks × 2, odd reset seeds: never trained on) every 5 updates.
# `shaped` keeps its stall penalty (a turn that leaves the room unchanged costs 0.1 in training); `sparse`
# drops it, so the only reward is reaching the goal and credit for the turns has to come from the estimator.
_QUICKSTART = ["eval.num_tasks=64", "eval.repeats=2", "eval.temperature=1.0"]
SETTINGS: dict[str, Setting] = {
    "shaped": Setting("shaped", _QUICKSTART, updates=20, eval_every=5, config=QUICKSTART_YAML,
                      notes="the quickstart's recipe (Maze-Easy 3×3, BC 256 × 30 epochs, 8 tasks × G 8, "
                            "4 gradient steps per collection), stall penalty 0.1"),
    "sparse": Setting("sparse", _QUICKSTART + ["rollout.stall_penalty=0.0"], updates=20, eval_every=5,
                      config=QUICKSTART_YAML,
                      notes="the same without the stall penalty: reward 1 on reaching the goal, else 0"),
}


def run_overrides(setting: Setting, estimator: str, seed: int, updates: int, cache: str, out_dir: str) -> list[str]:
    """The full ``key=value`` list of one run."""
    return (COMMON + setting.overrides + ESTIMATOR_OVERRIDES[estimator]
            + [f"seed={seed}", f"steps={updates}", f"out_dir={out_dir}"] + ([f"policy.cache_dir={cache}"] if cache else []))


def _budget(setting: Setting, quick: bool) -> tuple[int, int, list[str]]:
    """Updates, evaluation interval and extra overrides of a full or ``--quick`` run."""
    if quick:
        return setting.quick_updates, 1, ["bc.episodes=4", "bc.epochs=1", "eval.num_tasks=4", "eval.repeats=1",
                                          "rollout.tasks_per_step=2", "rollout.group_size=2"]
    return setting.updates, setting.eval_every, []


def _train(trainer: Any, updates: int, every: int) -> tuple[list[dict], list[float]]:
    """RL updates from the trainer's current weights, a held-out evaluation every ``every`` and at the end."""
    curve, train_success = [], []
    while trainer.step < updates:
        record = trainer.train_step()
        train_success.append(float(record["success"]))
        if trainer.step % every == 0 or trainer.step == updates:
            curve.append({"update": trainer.step, **trainer.evaluate()})
    return curve, train_success


def worker(args: argparse.Namespace) -> int:
    """One (setting, seed): the BC warm-up and its held-out evaluation (update 0) once, then each estimator of
    ``args.estimator`` (comma-separated) from exactly those weights and RNG state; a JSON list of results."""
    from trainer.config import load_config
    from trainer import Trainer
    from trainer.seeding import capture_rng, restore_rng

    setting = SETTINGS[args.setting]
    updates, every, extra = _budget(setting, args.quick)
    estimators = args.estimator.split(",")
    start = time.perf_counter()
    base = Trainer(load_config(setting.config, run_overrides(setting, estimators[0], args.seed, updates, args.cache,
                                                             f"{args.run_dir}/bc") + extra))
    try:
        bc = base.warm_up()
        start_eval = {"update": 0, **base.evaluate()}
        weights = {k: v.detach().clone() for k, v in base.model.state_dict().items()}
        rng = capture_rng()
    finally:
        base.close()
    bc_s = time.perf_counter() - start
    results = []
    for estimator in estimators:
        began = time.perf_counter()
        overrides = run_overrides(setting, estimator, args.seed, updates, args.cache, f"{args.run_dir}/{estimator}") + extra
        trainer = Trainer(load_config(setting.config, overrides))
        try:
            trainer.model.load_state_dict(weights)
            trainer.bc_done = True
            trainer.weights_changed()
            restore_rng(rng)
            curve, train_success = _train(trainer, updates, every)
        finally:
            trainer.close()
        results.append({"setting": args.setting, "estimator": estimator, "seed": args.seed, "updates": updates,
                        "curve": [start_eval] + curve, "bc": bc, "bc_s": bc_s, "train_success": train_success,
                        "wall_s": time.perf_counter() - began, "overrides": overrides})
        print(f"{args.setting} seed={args.seed} {estimator}: held-out {[p['eval_success'] for p in results[-1]['curve']]}"
              f" ({results[-1]['wall_s']:.0f} s)", flush=True)
    Path(args.result).write_text(json.dumps(results, indent=1))
    return 0


# --------------------------------------------------------------------------------------------- driver
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of a 95% Student-t interval over ``values`` (0 for a single value)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, T_975.get(n - 1, 1.96) * sd / math.sqrt(n)


def plan(args: argparse.Namespace) -> list[tuple[str, int, list[str]]]:
    """The subprocess units: (setting, seed, estimators). One BC warm-up per unit, so estimators share a
    start; the estimators are split into chunks only when that is needed to keep ``--jobs`` processes busy."""
    pairs = [(s, seed) for s in args.settings for seed in args.seeds]
    chunks = max(1, min(len(args.estimators), math.ceil(args.jobs / len(pairs))))
    size = math.ceil(len(args.estimators) / chunks)
    groups = [args.estimators[i:i + size] for i in range(0, len(args.estimators), size)]
    return [(s, seed, group) for s, seed in pairs for group in groups]


def launch(args: argparse.Namespace, units: list[tuple[str, int, list[str]]], work: Path) -> list[dict]:
    """Run each unit in its own subprocess, at most ``args.jobs`` at once; a failed unit is reported, not fatal."""
    pending, active, results = list(units), [], []
    base = [sys.executable, str(Path(__file__).resolve()), "--worker", "--cache", args.cache]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = 0
    while pending or active:
        while pending and len(active) < args.jobs:
            setting, seed, estimators = pending.pop(0)
            tag = f"{setting}-s{seed}-{'+'.join(estimators)}" if len(estimators) < len(args.estimators) else f"{setting}-s{seed}"
            result, log = work / f"{tag}.json", open(work / f"{tag}.log", "w")
            cmd = base + ["--setting", setting, "--estimator", ",".join(estimators), "--seed", str(seed),
                          "--result", str(result), "--run-dir", str(work / tag)] + (["--quick"] if args.quick else [])
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
            active.append((tag, result, log, proc, time.perf_counter()))
        time.sleep(0.5)
        for item in [a for a in active if a[3].poll() is not None]:
            tag, result, log, proc, started = item
            active.remove(item)
            log.close()
            done += 1
            ok = proc.returncode == 0 and result.exists()
            print(f"[{done}/{len(units)}] {tag}: {'ok' if ok else f'FAILED rc={proc.returncode}, see {log.name}'} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
            if ok:
                results.extend(json.loads(result.read_text()))
    return results


def final_success(result: dict) -> float:
    return float(result["curve"][-1]["eval_success"])


def late_success(result: dict) -> float:
    """Held-out success averaged over the evaluations of the second half of training (updates ≥ half the
    budget): several evaluations' episodes, so less noisy than the final one alone."""
    late = [p["eval_success"] for p in result["curve"] if p["update"] >= result["updates"] / 2] or [final_success(result)]
    return float(sum(late) / len(late))


def table(results: list[dict], args: argparse.Namespace) -> str:
    """Markdown: per setting, one row per estimator — BC start, final held-out success (mean over seeds ±
    95% t-interval over seeds), the gain, the held-out mean of the second half and its paired difference to
    GRPO (same seed, same BC start), the mean sampled train success of the last half, wall time."""
    lines = []
    for setting in args.settings:
        rows = [r for r in results if r["setting"] == setting]
        if not rows:
            continue
        episodes = int(rows[0]["curve"][-1]["eval_episodes"])
        lines += [f"**{setting}** — {SETTINGS[setting].notes if setting in SETTINGS else '(setting no longer defined)'}; {rows[0]['updates']} updates; held-out: "
                  f"{episodes} episodes per evaluation, sampled at T = 1", "",
                  "| estimator | seeds | BC start | final held-out success | gain | held-out, 2nd half | vs `grpo` (paired) "
                  "| train success (last half) | wall s per run |", "|---|---|---|---|---|---|---|---|---|"]
        ranked = sorted(args.estimators, key=lambda e: -mean_ci([final_success(r) for r in rows
                                                                  if r["estimator"] == e] or [-1])[0])
        for estimator in ranked:
            runs = [r for r in rows if r["estimator"] == estimator]
            if not runs:
                lines.append(f"| `{estimator}` | 0 | — | (failed) | — | — | — | — | — |")
                continue
            start, start_ci = mean_ci([float(r["curve"][0]["eval_success"]) for r in runs])
            final, final_ci = mean_ci([final_success(r) for r in runs])
            gain, gain_ci = mean_ci([final_success(r) - float(r["curve"][0]["eval_success"]) for r in runs])
            late = [sum(r["train_success"][len(r["train_success"]) // 2:]) / max(1, len(r["train_success"]) - len(r["train_success"]) // 2)
                    for r in runs]
            wall = sum(r["wall_s"] for r in runs) / len(runs)
            second, second_ci = mean_ci([late_success(r) for r in runs])
            grpo = {r["seed"]: late_success(r) for r in rows if r["estimator"] == "grpo"}
            paired = [late_success(r) - grpo[r["seed"]] for r in runs if r["seed"] in grpo]
            versus = ("—" if estimator == "grpo" or not paired else "{:+.3f} ± {:.3f}".format(*mean_ci(paired)))
            lines.append(f"| `{estimator}` | {len(runs)} | {start:.3f} ± {start_ci:.3f} | **{final:.3f} ± {final_ci:.3f}** | "
                         f"{gain:+.3f} ± {gain_ci:.3f} | {second:.3f} ± {second_ci:.3f} | {versus} | {mean_ci(late)[0]:.3f} | {wall:.0f} |")
        lines.append("")
    return "\n".join(lines)


def plot(results: list[dict], args: argparse.Namespace, path: Path) -> bool:
    """Held-out success vs updates (mean over seeds; the table gives the intervals), one panel per setting."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)", file=sys.stderr)
        return False
    settings = [s for s in args.settings if any(r["setting"] == s for r in results)]
    if not settings:
        return False
    fig, axes = plt.subplots(1, len(settings), figsize=(5.5 * len(settings), 4), squeeze=False)
    for ax, setting in zip(axes[0], settings):
        for k, estimator in enumerate(args.estimators):
            runs = [r for r in results if r["setting"] == setting and r["estimator"] == estimator]
            if not runs:
                continue
            shift = 0.04 * (k - (len(args.estimators) - 1) / 2)  # identical curves stay visible side by side
            xs = [p["update"] + shift for p in runs[0]["curve"]]
            ys = [[r["curve"][i]["eval_success"] for r in runs] for i in range(len(xs))]
            ax.plot(xs, [sum(y) / len(y) for y in ys], marker="os^vD<>ph"[k % 9], ms=4,
                            ls=["-", "--", ":", "-."][k % 4], label=estimator)
        ax.set_title(f"{setting} (mean of {len(args.seeds)} seeds)")
        ax.set_xlabel("RL updates (points shifted slightly per estimator)")
        ax.set_ylabel("held-out success (sampled, T = 1)")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="docs/img", help="directory for compare_estimators.{md,png,json}")
    p.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    p.add_argument("--estimators", nargs="+", default=list(ESTIMATOR_OVERRIDES), choices=list(ESTIMATOR_OVERRIDES))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (one subprocess each)")
    p.add_argument("--quick", action="store_true", help="smoke run: 2 updates, tiny batches and evals (< 2 min)")
    p.add_argument("--dry-run", action="store_true", help="print the runs and their overrides, run nothing")
    p.add_argument("--from-results", nargs="+", metavar="JSON", help="re-render the report from earlier results")
    p.add_argument("--work", default="", help="per-run logs and results (default: $TMPDIR/agentgym_compare_estimators)")
    p.add_argument("--cache", default="", help="policy.cache_dir for the tiny policy (default: the trainer's)")
    # one run (the driver's subprocesses)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--setting", help=argparse.SUPPRESS)
    p.add_argument("--estimator", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--run-dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs must be >= 1, got {args.jobs}")
    if args.quick and argv is None and "--seeds" not in sys.argv:
        args.seeds = [0]
    return args


def report(results: list[dict], args: argparse.Namespace, wall_s: float | None) -> None:
    """Write ``compare_estimators.{json,md,png}`` into ``args.out`` and print the table."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare_estimators.json").write_text(json.dumps(results, indent=1))
    planned = len(args.settings) * len(args.estimators) * len(args.seeds)
    per_run = sum(r["wall_s"] for r in results) / max(len(results), 1)
    header = (f"{len(args.settings)} settings × {len(args.estimators)} estimators × {len(args.seeds)} seeds = {planned} "
              f"runs ({len(results)} finished); {per_run:.0f} s per run on average (after the shared BC start)"
              + (f", {wall_s / 60:.1f} min wall with --jobs {args.jobs}" if wall_s is not None else "")
              + ". ± is the 95% t-interval over seeds.\n\n")
    text = header + table(results, args)
    (out / "compare_estimators.md").write_text(text)
    plotted = plot(results, args, out / "compare_estimators.png")
    print(text)
    print(f"wrote {out / 'compare_estimators.md'}" + (f", {out / 'compare_estimators.png'}" if plotted else ""))


def load_results(paths: list[str], args: argparse.Namespace) -> list[dict]:
    """Results from the JSON files of earlier runs (units' files or a ``compare_estimators.json``), narrowed to
    the settings, estimators and seeds present, so a report is re-rendered without re-training."""
    results = [r for path in paths for r in json.loads(Path(path).read_text())]
    args.settings = list(dict.fromkeys(r["setting"] for r in results))
    args.estimators = [e for e in args.estimators if any(r["estimator"] == e for r in results)]
    args.seeds = sorted({r["seed"] for r in results})
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.worker:
        return worker(args)
    if args.from_results:
        report(load_results(args.from_results, args), args, None)
        return 0
    runs = plan(args)
    if args.dry_run:
        for setting, seed, estimators in runs:
            s = SETTINGS[setting]
            updates, _, extra = _budget(s, args.quick)
            for estimator in estimators:
                print(f"{setting} seed={seed} {estimator}: " + (f"{s.config.relative_to(ROOT)} + " if s.config else "")
                      + " ".join(run_overrides(s, estimator, seed, updates, args.cache, "<run>") + extra))
        print(f"{len(runs)} subprocesses, --jobs {args.jobs}")
        return 0
    work = Path(args.work or Path(tempfile.gettempdir()) / "agentgym_compare_estimators")
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results = launch(args, runs, work)
    report(results, args, time.perf_counter() - started)
    return 0 if len(results) == sum(len(u[2]) for u in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
