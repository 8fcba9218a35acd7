"""Time one GRPO update of the tiny policy: ours, and TRL's GRPOTrainer when ``trl`` is installed.

One update = sample G completions for each of B prompts (``max_new_tokens`` each), score them, compute
group advantages, recompute log-probs and take one optimiser step. Single-turn prompts (household first
observations) so that TRL, which has no multi-turn rollouts, does the same work.

    python benchmarks/trainer_step.py [--prompts 8] [--group 4] [--new-tokens 16] [--repeats 3]

Prints seconds per update for each trainer and the ratio (TRL / ours). A measurement, not a test. TRL and
``datasets`` come with the ``bench`` extra (``pip install -e ".[bench]"``; see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def household_prompts(n: int) -> list[list[dict]]:
    import gymnasium

    import agentgym_envs  # noqa: F401

    env = gymnasium.make("agentgym/Household-PickPlace-v0")
    prompts = []
    for i in range(n):
        obs, _ = env.reset(seed=i, options={"task_index": i})
        prompts.append([{"role": "user", "content": obs}])
    return prompts


def ours(model, tokenizer, prompts, group: int, new_tokens: int) -> float:
    from trainer.learn.algorithms import grpo_advantages
    from trainer.models.backends.hf import HFPolicy
    from trainer.learn.logprobs import pack, token_logprobs
    from trainer.learn.loss import LossSettings, policy_loss
    from agentgym_envs.policies import SamplingConfig
    from trainer.collect.trajectory import TrajectoryBuilder

    policy = HFPolicy(model, tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    start = time.perf_counter()
    builders = [TrajectoryBuilder(policy, p, group=g) for g, p in enumerate(prompts) for _ in range(group)]
    completions = policy.generate([b.ids for b in builders], sampling=SamplingConfig(max_new_tokens=new_tokens, seed=0))
    for b, c in zip(builders, completions):
        b.add_reply(c, state_key="")
        b.record_step(float(len(c.text) % 3 == 0))  # a cheap stand-in reward
    trajectories = [b.finish("terminated") for b in builders]
    returns = torch.tensor([t.ret for t in trajectories]).view(len(prompts), group)
    advantages = grpo_advantages(returns).flatten().tolist()
    batch = pack(trajectories, policy.pad_id, [[a * m for m in t.loss_mask] for a, t in zip(advantages, trajectories)])
    logp, entropy = token_logprobs(model, batch)
    loss, _ = policy_loss(logp, batch.sampling_logprobs, batch.advantages, batch.loss_mask, LossSettings(), entropy=entropy)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return time.perf_counter() - start


def trl_step(model, tokenizer, prompts, group: int, new_tokens: int) -> float | None:
    try:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer
    except ImportError:
        return None
    import tempfile

    data = Dataset.from_list([{"prompt": p} for p in prompts])
    args = GRPOConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=len(prompts) * group,
                      num_generations=group, max_completion_length=new_tokens, max_steps=1, report_to=[],
                      logging_steps=1, save_strategy="no", use_cpu=True, learning_rate=1e-5, seed=0)
    reward = lambda completions, **kw: [float(len(str(c)) % 3 == 0) for c in completions]  # noqa: E731
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=data, processing_class=tokenizer)
    start = time.perf_counter()
    trainer.train()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from trainer.models.tiny import TinyConfig, build_tiny

    prompts = household_prompts(args.prompts)
    ours_s, trl_s = [], []
    for _ in range(args.repeats):
        model, tokenizer = build_tiny(TinyConfig())
        ours_s.append(ours(model, tokenizer, prompts, args.group, args.new_tokens))
        model, tokenizer = build_tiny(TinyConfig())
        t = trl_step(model, tokenizer, prompts, args.group, args.new_tokens)
        if t is not None:
            trl_s.append(t)
    print(f"one GRPO update, {args.prompts} prompts x {args.group} completions x {args.new_tokens} new tokens, "
          f"{args.threads} CPU thread(s)")
    print(f"  ours: {statistics.median(ours_s):.3f} s (median of {len(ours_s)})")
    if trl_s:
        ratio = statistics.median(trl_s) / statistics.median(ours_s)
        print(f"  TRL GRPOTrainer: {statistics.median(trl_s):.3f} s (median of {len(trl_s)}); TRL/ours = {ratio:.2f}x")
    else:
        print('  TRL GRPOTrainer: not measured (needs trl and datasets: pip install -e ".[bench]")')


if __name__ == "__main__":
    main()
