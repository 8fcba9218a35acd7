"""Ours (``agentgym train``'s :class:`trainer.run.loop.Trainer`) vs TRL 1.16 ``GRPOTrainer`` on SmolLM2-135M-Instruct,
multi-turn Maze through our TRL adapter: seconds per update, peak RSS, tokens/s, held-out success (issue 33 §3).

    .venv/bin/python benchmarks/real_model_vs_trl.py [--updates 3] [--group 4] [--prompts 4] [--max-new-tokens 32]
        [--max-turns 6] [--lr 1e-5] [--kl 0] [--bc-episodes 16] [--bc-epochs 2] [--bc-batch 4]
        [--eval-tasks 16] [--threads 1] [--filter-zero-variance]

**The task.** The recipe's env (``agentgym/Maze-Easy-v0``, 3×3 mazes, ``configs/smollm2_maze.yaml``), but under
the ``tool_calls`` protocol on both sides: TRL's multi-turn path (``environment_factory``) only talks to an env
through tool calls, so the model acts by ``<tool_call>{"name": "act", "arguments": {"action": "north"}}</tool_call>``
(~20 tokens a move, hence ``--max-new-tokens 32`` rather than the recipe's 8 under ``plain``). SmolLM2's own chat
template renders no tools (TRL refuses it), so both sides use TRL's Qwen2.5 ChatML template (the same
``<|im_start|>`` tokens SmolLM2 was tuned on, plus the ``<tools>`` block and ``<tool_call>`` format; TRL parses
replies with its Qwen response schema). Train tasks are even reset seeds, held-out tasks odd (never trained on);
TRL gets our sampler's task order as an unshuffled dataset, so both sides train on the same tasks per update.

**The start.** One shared checkpoint, made first in its own subprocess: the pretrained model after a short BC
warm-up by our trainer on ``--bc-episodes`` expert episodes rendered as tool calls (``--bc-episodes 0``: the
pretrained model itself). Both sides load it from disk.

**The same settings.** G, prompts per update, lr (constant, no warm-up, AdamW, no weight decay), KL coefficient
(TRL ``beta``), clip 0.2/0.28, grad-norm clip 1.0, T = 1, fp32, ``--threads`` torch threads, GRPO advantages
``(R - mean) / std`` per group, token-mean loss (TRL ``dapo``), one gradient step per batch, the env's return as
the reward (no stall/invalid shaping). Per-turn ``--max-new-tokens`` on ours; TRL bounds a whole multi-turn
completion instead (``max_completion_length`` = ``--max-turns`` × (max new tokens + 48 for the tool response)).
TRL: ``gradient_checkpointing`` off (ours is off), G rows per micro-batch, one micro-batch per prompt. Ours:
forwards of up to ``--micro-batch-tokens`` ids (4,096: a group of G = 4 rows per forward at these lengths, as
TRL's), each group's shared prompt run once (``optim.shared_prefix``, our default; ``--no-shared-prefix``
turns it off to measure what it buys). Ours by
default drops groups without reward spread before the update (TRL trains on them with zero advantage); here it
keeps them (``--filter-zero-variance`` restores the default), so both sides do the same work per update; the
report says how many groups had reward spread.

**What is measured.** Sequentially, each side in its own subprocess: TRL first for ``--updates`` updates (wall
``W``), then ours for ``--updates`` updates and on until its training time would pass ``W`` (at most
``--max-wall-updates``). Seconds per update: mean over the first ``--updates``; sampling (rollouts, tool calls,
rewards) and update (the rest of the step) apart. Peak RSS: the subprocess's ``ru_maxrss`` after those updates.
Tokens/s: sampled (generated) tokens / sampling seconds. Held-out success: one evaluator for both (our
``run_text_episodes`` under ``tool_calls``, the same template, T = 1, ``--eval-tasks`` odd-seed mazes, 95% Wilson
interval) at the start, after ``--updates`` updates, and for ours after TRL's wall time ``W``.
A measurement, not a test; on a shared CPU report the load with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENV_ID, MAZE = "agentgym/Maze-Easy-v0", {"size": 3}
TOOL_RESPONSE_TOKENS = 48  # a Maze observation in <tool_response> tags, for TRL's whole-completion budget


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--updates", type=int, default=3)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--prompts", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--max-turns", type=int, default=6)
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--kl", type=float, default=0.0)
    p.add_argument("--bc-episodes", type=int, default=16, help="shared BC warm-up (0: the pretrained model)")
    p.add_argument("--bc-epochs", type=int, default=2)
    p.add_argument("--bc-batch", type=int, default=4, help="BC batch size (8 was killed for memory beside other jobs)")
    p.add_argument("--eval-tasks", type=int, default=16)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-wall-updates", type=int, default=0, help="cap on ours' equal-wall-time run (0: 3 × --updates)")
    p.add_argument("--filter-zero-variance", action="store_true",
                   help="ours drops groups without reward spread (its default); off here so both sides do the same work")
    p.add_argument("--micro-batch-tokens", type=int, default=4096, help="ours: ids per forward (TRL: G rows)")
    p.add_argument("--no-shared-prefix", dest="shared_prefix", action="store_false",
                   help="ours: every row's full forward (optim.shared_prefix=false)")
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--worker", default="", help=argparse.SUPPRESS)
    p.add_argument("--start-dir", default="", help=argparse.SUPPRESS)
    p.add_argument("--trl-wall", type=float, default=0.0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def template_path() -> str:
    """TRL's Qwen2.5 tool-calling ChatML template (the file TRL matches to pick its tool-call parser)."""
    import trl

    return str(Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja")


def ours_config(args: argparse.Namespace, path: str, out_dir: str) -> Any:
    """The trainer's config: the recipe's env and model settings with the shared benchmark settings."""
    import yaml

    from trainer.config import load_config

    data = {"seed": args.seed, "steps": 10_000, "checkpoint_every": 0, "checkpoint_last": False, "progress": False,
            "out_dir": out_dir,
            "policy": {"path": path, "threads": args.threads, "dtype": "float32", "device": "cpu",
                       "chat_template": template_path()},
            "env": {"env_id": ENV_ID, "protocol": "tool_calls", "max_turns": args.max_turns,
                    "train_kwargs": MAZE, "eval_kwargs": MAZE},
            "bc": {"episodes": args.bc_episodes, "epochs": args.bc_epochs, "batch_size": args.bc_batch, "lr": 1e-4},
            "rollout": {"tasks_per_step": args.prompts, "group_size": args.group, "max_new_tokens": args.max_new_tokens,
                        "temperature": 1.0, "max_context_tokens": 2048},
            "algorithm": {"estimator": "grpo", "filter_zero_variance": args.filter_zero_variance},
            "loss": {"kl_coef": args.kl, "aggregation": "token_mean", "clip_low": 0.2, "clip_high": 0.28},
            "optim": {"lr": args.lr, "weight_decay": 0.0, "warmup_steps": 0, "grad_clip": 1.0,
                      "micro_batch_tokens": args.micro_batch_tokens, "shared_prefix": args.shared_prefix}}
    file = Path(out_dir) / "bench.yaml"
    file.write_text(yaml.safe_dump(data))
    return load_config(file)


def held_out(model: Any, tokenizer: Any, args: argparse.Namespace) -> dict[str, float]:
    """Held-out success of ``model`` at T = 1 on ``--eval-tasks`` odd-seed mazes: one evaluator for both sides."""
    import torch

    from agentgym_envs.policies import SamplingConfig
    from trainer.models.backends.hf import HFPolicy
    from trainer.config import EnvConfig
    from trainer.collect.episodes import run_text_episodes, success_rate
    from trainer.collect.episodes import play_specs
    from trainer.seeding import derive_seed

    env = EnvConfig(env_id=ENV_ID, protocol="tool_calls", max_turns=args.max_turns, train_kwargs=MAZE, eval_kwargs=MAZE)
    _, spec = play_specs(env)
    was_training = model.training
    model.eval()
    start = time.perf_counter()
    with torch.no_grad():
        episodes = run_text_episodes(HFPolicy(model, tokenizer), spec, list(range(args.eval_tasks)), seed=0,
                                     sampling=SamplingConfig(temperature=1.0, max_new_tokens=args.max_new_tokens,
                                                             seed=derive_seed(args.seed, 4)))
    model.train(was_training)
    success, ci95 = success_rate(episodes)
    return {"success": success, "ci95": ci95, "n": len(episodes), "eval_s": time.perf_counter() - start}


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# ----------------------------------------------------------------------------- the shared start
def run_start(args: argparse.Namespace) -> dict[str, Any]:
    """BC warm-up (or none) by our trainer, saved to ``--start-dir``; its held-out success."""
    from trainer import Trainer
    from trainer.models.registry import resolve_model

    trainer = Trainer(ours_config(args, str(resolve_model(args.model)), tempfile.mkdtemp()))
    start = time.perf_counter()
    bc = trainer.warm_up() if args.bc_episodes else {}
    bc_s = time.perf_counter() - start
    trainer.model.save_pretrained(args.start_dir)
    trainer.policy.tokenizer.save_pretrained(args.start_dir)
    return {"bc": bc, "bc_s": bc_s, "eval": held_out(trainer.model, trainer.policy.tokenizer, args)}


# ----------------------------------------------------------------------------- ours
def run_ours(args: argparse.Namespace) -> dict[str, Any]:
    from trainer import Trainer

    trainer = Trainer(ours_config(args, args.start_dir, tempfile.mkdtemp()))
    trainer.check_context()
    records, evals, train_s, peak = [], {}, 0.0, 0.0
    cap = args.max_wall_updates or 3 * args.updates
    while True:
        record = trainer.train_step()
        records.append(record)
        train_s += record["step_s"]
        if trainer.step == args.updates:
            peak = peak_rss_mib()
            evals["updates"] = {"updates": trainer.step, **held_out(trainer.model, trainer.policy.tokenizer, args)}
        if "wall" not in evals and (train_s + record["step_s"] > args.trl_wall or trainer.step >= cap):
            evals["wall"] = {"updates": trainer.step, "train_s": train_s,
                             **held_out(trainer.model, trainer.policy.tokenizer, args)}
        if trainer.step >= args.updates and "wall" in evals:
            break
    steps = [{"step_s": r["step_s"], "sample_s": r["rollout_s"], "update_s": r["step_s"] - r["rollout_s"],
              "tokens": r["tokens_per_s"] * r["rollout_s"], "groups_kept": r.get("groups_kept"),
              "groups_total": r.get("groups_total"), "reward": r["reward"], "updated": r.get("updated", 0.0)}
             for r in records]
    return {"steps": steps, "peak_rss_mib": peak, "evals": evals}


# ----------------------------------------------------------------------------- TRL
def trl_rows(args: argparse.Namespace, count: int) -> list[dict[str, Any]]:
    """Our sampler's train tasks in order (``count`` groups), as adapter rows: the same tasks per update as ours."""
    from agentgym_envs.interop.trl import dataset_rows
    from trainer.collect.episodes import SEEDED_TRAIN_TASKS, task_seed
    from trainer.seeding import TaskSampler

    sampler = TaskSampler(SEEDED_TRAIN_TASKS, args.seed)
    tasks = [t for _ in range(-(-count // args.prompts)) for t in sampler.next(args.prompts)][:count]
    return [dataset_rows(ENV_ID, 1, seed=task_seed(t, 0), **MAZE)[0] for t in tasks]


def run_trl(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from agentgym_envs.interop.trl import environment_factory

    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.start_dir)
    model = AutoModelForCausalLM.from_pretrained(args.start_dir, dtype=torch.float32)
    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(), per_device_train_batch_size=args.group, gradient_accumulation_steps=args.prompts,
        num_generations=args.group, max_completion_length=args.max_turns * (args.max_new_tokens + TOOL_RESPONSE_TOKENS),
        max_tool_calling_iterations=args.max_turns, max_steps=args.updates, learning_rate=args.lr,
        lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0, beta=args.kl,
        epsilon=0.2, epsilon_high=0.28, loss_type="dapo", scale_rewards="group", temperature=1.0, top_p=1.0,
        gradient_checkpointing=False, use_cpu=True, bf16=False, report_to="none", save_strategy="no", logging_steps=1,
        seed=args.seed, dataloader_num_workers=0, shuffle_dataset=False)
    factory = environment_factory(ENV_ID, **MAZE)  # turns are bounded by max_tool_calling_iterations
    trainer = GRPOTrainer(model=model, args=config, processing_class=tokenizer, environment_factory=factory,
                          train_dataset=Dataset.from_list(trl_rows(args, args.updates * args.prompts)))
    sampling: list[dict[str, float]] = []
    generate = trainer._generate_and_score_completions  # timed, not replaced

    def timed(batch: Any) -> Any:
        start = time.perf_counter()
        out = generate(batch)
        mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
        sampling.append({"sample_s": time.perf_counter() - start, "tokens": float(mask.sum())})
        return out

    trainer._generate_and_score_completions = timed
    clock = _Clock(TrainerCallback)
    trainer.add_callback(clock)
    trainer.train()
    if len(clock.times) != args.updates or len(sampling) != args.updates:
        raise SystemExit(f"expected {args.updates} TRL steps and generations, got {len(clock.times)}, {len(sampling)}")
    peak = peak_rss_mib()
    steps = [{"step_s": t, "sample_s": s["sample_s"], "update_s": t - s["sample_s"], "tokens": s["tokens"],
              "reward": log.get("reward"), "zero_std": log.get("frac_reward_zero_std")}
             for t, s, log in zip(clock.times, sampling, clock.logs + [{}] * args.updates)]
    evals = {"updates": {"updates": args.updates, **held_out(trainer.model, tokenizer, args)}}
    return {"steps": steps, "peak_rss_mib": peak, "evals": evals}


def _Clock(base: type) -> Any:
    """A TRL callback timing each optimiser step (``on_step_begin`` → ``on_step_end``) and keeping its logs."""

    class Clock(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            self.times: list[float] = []
            self.logs: list[dict[str, Any]] = []

        def on_step_begin(self, *a: Any, **kw: Any) -> None:
            self.start = time.perf_counter()

        def on_step_end(self, *a: Any, **kw: Any) -> None:
            self.times.append(time.perf_counter() - self.start)

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
            if logs and "reward" in logs:
                self.logs.append(dict(logs))

    return Clock()


# ----------------------------------------------------------------------------- driver
WORKERS = {"start": run_start, "ours": run_ours, "trl": run_trl}


def spawn(args: argparse.Namespace, side: str, argv: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": str(args.threads), "TRL_EXPERIMENTAL_SILENCE": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv, "--worker", side,
                           "--start-dir", args.start_dir, "--trl-wall", str(args.trl_wall)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
    if done.returncode or not lines:
        raise SystemExit(f"{side} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    result = json.loads(lines[-1][len("RESULT "):])
    print(f"  {side}: {time.perf_counter() - start:.0f} s in all, load {os.getloadavg()[0]:.1f}", flush=True)
    return result


def mean(values: list[float]) -> float:
    return sum(values) / max(len(values), 1)


def side_row(name: str, r: dict[str, Any], k: int) -> tuple[str, float]:
    steps = r["steps"][:k]
    step_s, sample_s, update_s = (mean([s[key] for s in steps]) for key in ("step_s", "sample_s", "update_s"))
    tok_s = sum(s["tokens"] for s in steps) / max(sum(s["sample_s"] for s in steps), 1e-9)
    e = r["evals"]["updates"]
    w = r["evals"].get("wall", e)
    return (f"| {name} | {step_s:.1f} | {sample_s:.1f} | {update_s:.1f} | {3600 / step_s:.0f} | {r['peak_rss_mib']:,.0f} "
            f"| {tok_s:.1f} | {e['success']:.3f} ± {e['ci95']:.3f} | {w['success']:.3f} ± {w['ci95']:.3f} "
            f"({w['updates']} upd.) |"), step_s


def report(args: argparse.Namespace, start: dict[str, Any], ours: dict[str, Any], trl: dict[str, Any]) -> None:
    k, e0 = args.updates, start["eval"]
    print(f"start: BC {args.bc_episodes} episodes × {args.bc_epochs} epochs ({start['bc_s']:.0f} s); held-out "
          f"{e0['success']:.3f} ± {e0['ci95']:.3f} (n = {e0['n']}, T = 1)")
    print("| side | s/update | sampling s | update s | updates/h | peak RSS MiB | sampled tok/s "
          f"| held-out after {k} updates | held-out after TRL's wall time |")
    print("|---|---|---|---|---|---|---|---|---|")
    row_ours, s_ours = side_row("ours (agentgym train)", ours, k)
    row_trl, s_trl = side_row("TRL 1.16 GRPOTrainer", trl, k)
    print(row_ours)
    print(row_trl)
    kept = [f"{s['groups_kept']:.0f}/{s['groups_total']:.0f}" for s in ours["steps"][:k]]
    zero = [f"{s['zero_std']:.2f}" if s["zero_std"] is not None else "?" for s in trl["steps"][:k]]
    rewards = [", ".join("?" if s["reward"] is None else f"{s['reward']:.2f}" for s in r["steps"][:k]) for r in (ours, trl)]
    print(f"groups trained (ours): {', '.join(kept)}; TRL frac_reward_zero_std per update: {', '.join(zero)}; "
          f"train reward per update: ours {rewards[0]}, TRL {rewards[1]}")
    print(f"ratio: ours/TRL updates per hour = {s_trl / s_ours:.2f}× (goal ≥ 2×)")


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    if args.worker:
        print("RESULT " + json.dumps(WORKERS[args.worker](args)), flush=True)
        return
    args.start_dir = tempfile.mkdtemp(prefix="real_vs_trl_start_")
    print(f"SmolLM2 ({args.model}) on {ENV_ID} {MAZE} under tool_calls: {args.updates} updates, {args.prompts} prompts × "
          f"G {args.group}, ≤ {args.max_new_tokens} new tokens/turn, ≤ {args.max_turns} turns, lr {args.lr}, KL {args.kl}, "
          f"{args.threads} thread(s); {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
    start = spawn(args, "start", argv)
    trl = spawn(args, "trl", argv)
    args.trl_wall = sum(s["step_s"] for s in trl["steps"])
    ours = spawn(args, "ours", argv)
    report(args, start, ours, trl)
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    Path(args.start_dir, "results.json").write_text(json.dumps({"start": start, "ours": ours, "trl": trl}))
    print(f"raw results: {args.start_dir}/results.json")


if __name__ == "__main__":
    main()
