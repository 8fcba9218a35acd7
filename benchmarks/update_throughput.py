"""Update throughput and peak memory of one GRPO update: ours vs TRL 1.16 ``GRPOTrainer``, same batch, same run.

    .venv/bin/python benchmarks/update_throughput.py [--prompts 2] [--group 8] [--prompt-tokens 64]
        [--completion-tokens 64] [--micro 4] [--repeats 1] [--threads 2] [--only ours-full,trl-full]

The model is a random-weight Qwen2-shaped checkpoint built locally (``trainer.models.build_random_model``,
``size="bench"``: ~26 M parameters, 8 layers of width 512, GQA 8/2 heads, tied 4,096-token embedding);
nothing is downloaded. The batch is synthetic but identical for both trainers: ``prompts × group`` rows,
each a prompt of ``--prompt-tokens`` random ids and a completion of 50–100 % of ``--completion-tokens``
random ids (seeded), with GRPO advantages of seeded 0/1 rewards per group. Train tokens = completion
tokens; tokens/s = train tokens / seconds of one update (median of ``--repeats`` after one warm-up update), by wall clock and per second of process CPU time
(the second is less sensitive to other jobs on a shared CPU).

**What one update is, on each side.** Ours: :meth:`trainer.run.loop.Trainer.update` (``trainer/learn/update.py``:
pack, log-probs through the chunked fused head, clipped loss, backward, clip, AdamW step) on
trajectories whose sampling log-probs were computed with the same weights (on-policy). TRL: its own
training loop (``GRPOTrainer.train``) with generation replaced: ``_generate_and_score_completions`` is
patched to return the same prompts (left-padded), completions (right-padded), masks and advantages, with no
``old_per_token_logps`` (on-policy: TRL then uses the detached current log-probs, as it does itself when
``num_iterations == 1``). What is timed there is one optimiser step of the HF loop, from ``on_step_begin`` to
``on_step_end`` (TRL's ``_compute_loss`` through its fused LM head, backward, clip, AdamW step, zero-grad),
so neither side pays for generation, rewards or logging. Both: fp32 on CPU, ``lr`` 1e-6, no KL term
(``beta`` 0 is TRL's default), token-level normalisation over the whole batch (ours ``token_mean``, TRL's
default ``loss_type="dapo"``), grad-norm clip 1.0, the same torch thread count.

**Configurations.** ``full``: one forward over the batch; ``ckpt``: activation checkpointing (ours
``policy.gradient_checkpointing``, TRL ``gradient_checkpointing`` -- on by default in TRL's ``GRPOConfig``);
``micro``: the batch in ``--micro`` micro-batches with gradient accumulation (ours
``optim.micro_batch_tokens`` = rows per micro-batch × the longest row; TRL ``gradient_accumulation_steps``);
``ckpt+micro``: both.

**Peak memory.** Each configuration runs in its own subprocess. Peak = ``ru_maxrss`` at the end minus the
resident set size once the model, optimiser wrapper and batch exist, before the first (warm-up) update
(ours: also before the no-grad pass that computes the on-policy sampling log-probs, so memory that pass
frees and the update reuses is counted): what the update adds (activations, gradients, AdamW state,
temporaries). A
measurement, not a test; numbers on a shared CPU are noisy (report the load with them).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ("full", "ckpt", "micro", "ckpt+micro")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=int, default=2)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--completion-tokens", type=int, default=64)
    p.add_argument("--micro", type=int, default=4, help="micro-batches in the 'micro' configurations")
    p.add_argument("--repeats", type=int, default=1, help="timed updates after one warm-up update")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", default="", help="comma-separated runs, e.g. ours-full,trl-full (default: all 8)")
    p.add_argument("--model-dir", default="", help="reuse a built model directory")
    p.add_argument("--worker", default="", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ----------------------------------------------------------------------------- the shared batch
def synthetic_batch(args: argparse.Namespace, vocab: list[int]) -> dict[str, Any]:
    """Rows of (prompt ids, completion ids) and one GRPO advantage per row; seeded, the same for both sides.

    Ids are drawn from ``vocab`` (the plain tokens) so no end-of-turn or padding id appears inside a row.
    """
    rng = random.Random(0)
    rows, rewards = [], []
    for _ in range(args.prompts):
        prompt = [rng.choice(vocab) for _ in range(args.prompt_tokens)]
        for _ in range(args.group):
            n = rng.randint(max(1, args.completion_tokens // 2), args.completion_tokens)
            rows.append((prompt, [rng.choice(vocab) for _ in range(n)]))
            rewards.append(float(rng.random() < 0.5))
    advantages = []
    for g in range(args.prompts):
        r = torch.tensor(rewards[g * args.group:(g + 1) * args.group])
        advantages += ((r - r.mean()) / (r.std() + 1e-6)).tolist()
    return {"rows": rows, "advantages": advantages}


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


# ----------------------------------------------------------------------------- ours
def run_ours(args: argparse.Namespace, config_name: str) -> dict[str, Any]:
    from trainer.config import load_config
    from trainer.learn.logprobs import pack, token_logprobs
    from trainer import Trainer
    from trainer.collect.trajectory import Trajectory

    ckpt, micro = "ckpt" in config_name, "micro" in config_name
    batch = synthetic_batch(args, _plain_vocab(args.model_dir))
    rows = batch["rows"]
    longest = max(len(p) + len(c) for p, c in rows)
    per_micro = -(-len(rows) // args.micro)
    overrides = [f"policy.kind=hf", f"policy.path={args.model_dir}", "policy.device=cpu", "policy.dtype=float32",
                 f"policy.threads={args.threads}", f"policy.gradient_checkpointing={str(ckpt).lower()}",
                 f"optim.micro_batch_tokens={per_micro * longest if micro else 0}", "optim.lr=1e-6",
                 "loss.aggregation=token_mean", "loss.kl_coef=0", f"rollout.max_new_tokens={args.completion_tokens}",
                 f"rollout.max_context_tokens={longest + args.completion_tokens + 1}", "env.max_turns=1",
                 f"out_dir={tempfile.mkdtemp()}", "progress=false", "checkpoint_every=0"]
    trainer = Trainer(load_config(None, overrides))
    trajectories = [Trajectory(p + c, [0] * len(p) + [1] * len(c), [0.0] * (len(p) + len(c)),
                               [-1] * len(p) + [0] * len(c), len(p), rewards=[0.0], finish="terminated", group=i)
                    for i, (p, c) in enumerate(rows)]
    baseline = rss_bytes()  # before the scoring pass too: memory it frees and the update reuses still counts
    with torch.no_grad():  # on-policy: the sampler's log-probs are the current weights'
        logp, _ = token_logprobs(trainer.model, pack(trajectories, trainer.policy.pad_id))
    for b, t in enumerate(trajectories):
        t.sampling_logprobs = [float(x) if m else 0.0 for x, m in zip(logp[b, :len(t.token_ids)], t.loss_mask)]
    advantages = [[a] for a in batch["advantages"]]
    times, cpu = [], []
    for _ in range(1 + args.repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        record = trainer.update(trajectories, advantages)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert record["updated"] == 1.0, record
    return {"times": times[1:], "cpu": cpu[1:], "peak_delta": peak_bytes() - baseline,
            "train_tokens": sum(len(c) for _, c in rows), "forwards": record.get("micro_batches", 1.0)}


# ----------------------------------------------------------------------------- TRL
def run_trl(args: argparse.Namespace, config_name: str) -> dict[str, Any]:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(args.threads)
    ckpt, micro = "ckpt" in config_name, "micro" in config_name
    batch = synthetic_batch(args, _plain_vocab(args.model_dir))
    rows = batch["rows"]
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32)
    steps = args.micro if micro else 1
    n = len(rows)
    if n % steps:
        raise SystemExit(f"expected the {n} rows to split into --micro={steps} equal micro-batches")
    grpo = GRPOConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=n // steps,
                      gradient_accumulation_steps=steps, num_generations=args.group,
                      max_completion_length=args.completion_tokens, max_steps=1 + args.repeats, learning_rate=1e-6,
                      beta=0.0, loss_type="dapo", gradient_checkpointing=ckpt, use_cpu=True, report_to="none",
                      save_strategy="no", logging_steps=10_000, seed=0, dataloader_num_workers=0, bf16=False)
    fixed = _trl_inputs(rows, batch["advantages"], tokenizer.pad_token_id, args.completion_tokens)
    reward = lambda completions, **kw: [0.0] * len(completions)  # noqa: E731  (never called: generation is replaced)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=grpo, processing_class=tokenizer,
                          train_dataset=Dataset.from_list([{"prompt": f"p{i}"} for i in range(64)]))
    trainer._generate_and_score_completions = lambda generation_batch: {k: v.clone() for k, v in fixed.items()}

    class Clock(TrainerCallback):
        times: list[float] = []
        cpu: list[float] = []

        def on_step_begin(self, *a: Any, **kw: Any) -> None:
            self.start, self.start_cpu = time.perf_counter(), time.process_time()

        def on_step_end(self, *a: Any, **kw: Any) -> None:
            self.times.append(time.perf_counter() - self.start)
            self.cpu.append(time.process_time() - self.start_cpu)

    clock = Clock()
    trainer.add_callback(clock)
    torch.set_num_threads(args.threads)
    baseline = rss_bytes()
    trainer.train()
    if len(clock.times) != 1 + args.repeats:
        raise SystemExit(f"expected {1 + args.repeats} TRL optimiser steps, timed {len(clock.times)}")
    return {"times": clock.times[1:], "cpu": clock.cpu[1:], "peak_delta": peak_bytes() - baseline,
            "train_tokens": sum(len(c) for _, c in rows), "forwards": float(steps)}


def _trl_inputs(rows, advantages, pad_id: int, max_completion: int) -> dict[str, torch.Tensor]:
    """The dict ``_generate_and_score_completions`` returns: left-padded prompts, right-padded completions."""
    P = max(len(p) for p, _ in rows)
    C = max(len(c) for _, c in rows)
    prompt_ids = torch.full((len(rows), P), pad_id)
    prompt_mask = torch.zeros(len(rows), P, dtype=torch.long)
    completion_ids = torch.full((len(rows), C), pad_id)
    completion_mask = torch.zeros(len(rows), C, dtype=torch.long)
    for b, (p, c) in enumerate(rows):
        prompt_ids[b, P - len(p):], prompt_mask[b, P - len(p):] = torch.tensor(p), 1
        completion_ids[b, :len(c)], completion_mask[b, :len(c)] = torch.tensor(c), 1
    return {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "completion_ids": completion_ids,
            "completion_mask": completion_mask, "advantages": torch.tensor(advantages),
            "num_items_in_batch": completion_mask.sum()}


def _plain_vocab(model_dir: str) -> list[int]:
    """The ids of the built model's tokenizer that are not special or added tokens."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    added = set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values())
    return [i for i in range(len(tokenizer)) if i not in added]


# ----------------------------------------------------------------------------- driver
def worker(args: argparse.Namespace) -> None:
    side, config_name = args.worker.split("-", 1)
    result = (run_ours if side == "ours" else run_trl)(args, config_name)
    print("RESULT " + json.dumps(result))


def spawn(args: argparse.Namespace, run: str) -> dict[str, Any]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", run, "--model-dir", args.model_dir,
            "--prompts", str(args.prompts), "--group", str(args.group), "--prompt-tokens", str(args.prompt_tokens),
            "--completion-tokens", str(args.completion_tokens), "--micro", str(args.micro),
            "--repeats", str(args.repeats), "--threads", str(args.threads)]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": str(args.threads)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
    lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
    if done.returncode or not lines:
        raise SystemExit(f"{run} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def table(results: dict[str, dict[str, Any]]) -> str:
    """Tokens/s by wall clock and by process CPU time (less sensitive to other jobs on a shared CPU), peak MiB."""
    out = ["| config | ours tok/s (per CPU-s) | TRL tok/s (per CPU-s) | ours ÷ TRL speed, wall (CPU) "
           "| ours peak MiB | TRL peak MiB | ours ÷ TRL peak |", "|---|---|---|---|---|---|---|"]
    for name in CONFIGS:
        pair = [results.get(f"ours-{name}"), results.get(f"trl-{name}")]
        if None in pair:
            continue
        wall = [r["train_tokens"] / statistics.median(r["times"]) for r in pair]
        cpu = [r["train_tokens"] / statistics.median(r["cpu"]) for r in pair]
        mib = [r["peak_delta"] / 2**20 for r in pair]
        out.append(f"| {name} | {wall[0]:,.0f} ({cpu[0]:,.0f}) | {wall[1]:,.0f} ({cpu[1]:,.0f}) | "
                   f"{wall[0] / wall[1]:.2f}× ({cpu[0] / cpu[1]:.2f}×) | {mib[0]:,.0f} | {mib[1]:,.0f} | {mib[0] / mib[1]:.2f}× |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.worker:
        worker(args)
        return
    sys.path.insert(0, str(ROOT))
    if not args.model_dir:
        from trainer.models import build_random_model

        args.model_dir = str(build_random_model("qwen2", Path(tempfile.mkdtemp()) / "qwen2-bench", size="bench"))
    runs = [r for r in args.only.split(",") if r] or [f"{s}-{c}" for c in CONFIGS for s in ("ours", "trl")]
    if importlib.util.find_spec("trl") is None and any(r.startswith("trl-") for r in runs):
        print("TRL is not installed: measuring ours only. For the comparison: "
              ".venv/bin/python -m pip install -e '.[bench]' (docs/benchmarks.md)")
        runs = [r for r in runs if not r.startswith("trl-")]
    rows = args.prompts * args.group
    print(f"model {args.model_dir}; {rows} rows ({args.prompts} prompts × G {args.group}), prompt {args.prompt_tokens} "
          f"tokens, completion ≤ {args.completion_tokens}; micro = {args.micro} micro-batches; {args.threads} threads; "
          f"load {os.getloadavg()[0]:.1f}")
    results = {}
    for run in runs:
        results[run] = spawn(args, run)
        r = results[run]
        print(f"  {run}: {statistics.median(r['times']):.2f} s/update ({', '.join(f'{t:.2f}' for t in r['times'])}; "
              f"CPU {statistics.median(r['cpu']):.2f} s), {r['forwards']:.0f} forward(s), peak +{r['peak_delta'] / 2**20:.0f} "
              f"MiB, {r['train_tokens']} train tokens, load {os.getloadavg()[0]:.1f}", flush=True)
    print(table(results))
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
