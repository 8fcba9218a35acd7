"""Training runs for tests/trainer/test_distributed.py, launched by it under ``torchrun`` (not a test module).

``python -m torch.distributed.run --standalone --nproc_per_node N tests/trainer/distributed_runs.py PLAN ROOT CACHE``
runs the runs of ``PLAN`` one after another in one process group (a launch costs seconds; a run, one).
Each run writes its checkpoints under ``ROOT/<run>``; rank 0 writes ``ROOT/<PLAN>.json`` with any other result.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
from pathlib import Path

TINY = ["policy.tiny.corpus_episodes=40", "policy.tiny.model.hidden_size=64", "policy.tiny.model.num_heads=1",
        "policy.tiny.model.num_layers=1", "policy.tiny.model.intermediate_size=128", "env.system_prompt=''",
        "progress=false"]
#: Maze without a task list (seeded tasks), 2 groups of 2, short replies; the entropy bonus and the KL term give
#: every parameter a gradient even when all returns tie (filter off), so the weights move every step.
BASE = TINY + ["env.env_id=agentgym/Maze-Easy-v0", "env.max_turns=3", "rollout.max_new_tokens=6", "rollout.group_size=2",
               "rollout.tasks_per_step=2", "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01",
               "loss.kl_coef=0.01", "bc.episodes=0", "eval.num_tasks=1", "steps=2", "checkpoint_every=1"]
#: SGD: the update is proportional to the gradient, so a gradient off by the world size shows (Adam would hide it).
SGD = ["optim.name=sgd", "optim.lr=20"]
ADAM = ["optim.lr=0.01"]
RUNS = {
    "ddp_sgd": BASE + SGD + ["distributed.strategy=ddp"],
    "fsdp_sgd": BASE + SGD + ["distributed.strategy=fsdp"],
    "fsdp_adam": BASE + ADAM + ["distributed.strategy=fsdp"],
}
PLANS = {
    "two": ["ddp_sgd", "fsdp_sgd", "fsdp_adam", "uneven", "lopsided"],  # 2 ranks
    "killed": ["fsdp_adam"],  # 2 ranks, each SIGKILLs itself right after the step-1 checkpoint
    "one": ["ddp_sgd", "fsdp_adam", "to_one"],  # 1 rank; to_one resumes the killed 2-rank run's step-1 checkpoint
    "resume": ["resumed", "to_two", "indivisible"],  # 2 ranks
}
#: Runs that continue another run's checkpoint (copied there by the test), with that run's config.
CONTINUES = {"to_one": "fsdp_adam", "resumed": "fsdp_adam", "to_two": "fsdp_adam"}


def main(plan: str, root: Path, cache: str) -> None:
    import torch.distributed as dist

    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("gloo")  # the trainer joins this group (trainer.run.distributed.init_world)

    from trainer.config import load_config
    from trainer import Trainer, fit

    results: dict = {}
    main_rank = not dist.is_initialized() or dist.get_rank() == 0  # (the last run of "resume" ends the group)
    for run in PLANS[plan]:
        if run == "uneven":
            results["uneven"] = uneven_generation(load_config(None, RUNS["fsdp_sgd"] + [f"policy.cache_dir={cache}",
                                                                                   f"out_dir={root / 'uneven'}"]))
            continue
        if run == "lopsided":
            results["lopsided"] = {s: lopsided_update(load_config(None, RUNS[f"{s}_sgd"] + [
                f"policy.cache_dir={cache}", f"out_dir={root / 'lopsided'}", "optim.micro_batch_tokens=24"]))
                for s in ("ddp", "fsdp")}
            continue
        if run == "indivisible":
            results["indivisible"] = indivisible(cache, root)
            continue
        out = root / ("killed_fsdp_adam" if run == "resumed" else f"{plan}_{run}" if run in RUNS else run)
        trainer = Trainer(load_config(None, RUNS[CONTINUES.get(run, run)] + [f"policy.cache_dir={cache}", f"out_dir={out}"]))
        if plan == "killed":  # a hard kill at a fixed point: no cleanup, no close, the group left hanging
            fit(trainer, echo=None, stop_after=1)
            dist.barrier()  # (rank 0 has written the checkpoint)
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            fit(trainer, echo=None)
        finally:
            trainer.close()
    if main_rank:
        (root / f"{plan}.json").write_text(json.dumps(results))


def uneven_generation(config) -> dict:
    """Under FSDP2, ranks sample different numbers of forwards (rank 0 one call, rank 1 three, different
    lengths) inside :meth:`World.unsharded`; per-forward all-gathers would deadlock. The samples must equal
    the unsharded module's, and training goes on afterwards (one more collective step)."""
    from agentgym_envs.policies import SamplingConfig
    from trainer import Trainer

    trainer = Trainer(config)
    try:
        rank = trainer.world.rank
        prompts = [trainer.policy.encode("you are in a maze"), trainer.policy.encode("go")][: 2 - rank]
        calls = 1 if rank == 0 else 3
        sampling = SamplingConfig(temperature=1.0, max_new_tokens=4 + 4 * rank, seed=7)
        with trainer.world.unsharded(trainer.model):
            sharded = [c.token_ids for _ in range(calls) for c in trainer.policy.generate(prompts, sampling=sampling)]
        from trainer.models.backends.hf import HFPolicy
        from trainer.models.policy import load_model

        plain = HFPolicy(trainer.world.plain_copy(trainer.model, load_model(config.policy, config.seed)[0]), trainer.policy.tokenizer)
        reference = [c.token_ids for _ in range(calls) for c in plain.generate(prompts, sampling=sampling)]
        record = trainer.train_step()  # the ranks are still in step
        return {"equal": sharded == reference, "tokens": sum(map(len, sharded)), "updated": record["updated"]}
    finally:
        trainer.close()


def lopsided_update(config) -> dict:
    """Rank 1 keeps no trajectory, rank 0 several micro-batches' worth: rank 1 must still join every collective
    (zero-weight padding forwards) and both ranks step; without padding this deadlocks or raises."""
    import torch

    from trainer import Trainer

    trainer = Trainer(config)
    try:
        kept, advantages, _ = trainer.advantages(trainer.collect()[0])
        if trainer.world.rank == 1:
            kept, advantages = [], []
        before = {k: v.detach().clone() for k, v in trainer.world.model_state(trainer.model).items()}
        local = trainer.update(kept, advantages)
        record = trainer.world.update_metrics(local)  # what train_step logs: every rank's shares added
        after = trainer.world.model_state(trainer.model)
        moved = sum(float((after[k] - before[k]).abs().sum()) for k in before) if before else 0.0
        return {"updated": record["updated"], "micro_batches": local.get("micro_batches", 0.0), "moved": moved,
                "train_tokens": record.get("train_tokens"), "local_train_tokens": local.get("train_tokens", 0.0),
                "finite": all(bool(torch.isfinite(v).all()) for v in after.values())}
    finally:
        trainer.close()


def indivisible(cache: str, root: Path) -> dict:
    """``agentgym train`` on 2 ranks with 3 tasks per step: exit code and what it printed (run last: it ends
    the process group)."""
    from trainer.cli.train import main as train

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = train(["-", *BASE, *SGD, "rollout.tasks_per_step=3", f"policy.cache_dir={cache}", f"out_dir={root / 'bad'}"])
    return {"code": code, "printed": printed.getvalue()}


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3])
