"""History folding: an episode that outgrows its context budget goes on in a folded token segment.

Each segment must be exactly the ids its replies were sampled on (so the trainer's recomputed log-probs
match the sampler's), turns are counted across segments, and the trainer's update (GRPO and PPO's critic)
consumes folded episodes.
"""

import torch

from trainer.config import load_config
from trainer.collect.episodes import PlaySpec
from trainer.learn.logprobs import pack, token_logprobs
from trainer import Trainer
from agentgym_envs.policies import SamplingConfig
from trainer.collect.rollout import RolloutWorker
from trainer.learn.value import turn_starts

SPEC = PlaySpec("agentgym/Household-PickPlace-v0", max_turns=6, system_prompt="")
SAMPLING = SamplingConfig(max_new_tokens=10, seed=0)


def _collect(policy, *, budget: int, keep: int):
    worker = RolloutWorker(SPEC, tasks_per_batch=2, group_size=2, max_context_tokens=budget, fold_keep_turns=keep)
    try:
        return worker.collect(policy, [0, 5], sampling=SAMPLING, seed=0)[0]
    finally:
        worker.close()


def test_folded_segments_are_exactly_what_was_sampled_on(tiny_policy):
    unfolded = _collect(tiny_policy, budget=4096, keep=0)
    budget = max(len(t.segments[0].token_ids) for t in unfolded) // 2 + 10  # forces folds mid-episode
    folded = _collect(tiny_policy, budget=budget, keep=1)
    assert all(not t.earlier for t in unfolded)
    assert any(t.earlier for t in folded), "the budget was meant to force at least one fold"
    for t in folded:
        assert t.finish != "context" or len(t.token_ids) > budget - SAMPLING.max_new_tokens
        turns = [k for s in t.segments for k in turn_starts(s)]
        assert turns == list(range(t.num_turns))  # every turn sampled in exactly one segment, in order
        assert t.num_generated == sum(s.loss_mask.count(1) for s in t.segments)
        for s in t.earlier:
            assert len(s.token_ids) == len(s.loss_mask) == len(s.sampling_logprobs) == len(s.token_turns)
    later = [s for t in folded for s in t.segments[1:]]
    assert all("earlier turn" in tiny_policy.decode(s.token_ids[:s.prompt_length]) for s in later)
    segments = [s for t in folded for s in t.segments]
    batch = pack(segments, tiny_policy.pad_id)
    with torch.no_grad():
        logp, _ = token_logprobs(tiny_policy.model, batch)
    gap = (logp - batch.sampling_logprobs).abs() * batch.loss_mask
    assert float(gap.max()) < 1e-4  # each segment is scored on exactly the ids its replies saw
    assert bool(((logp != 0) == batch.loss_mask.bool()).all())


def test_trainer_updates_on_folded_episodes_with_grpo_and_ppo(tiny_overrides, tmp_path):
    for estimator in ("grpo", "ppo_gae"):
        config = load_config(None, tiny_overrides + [
            f"out_dir={tmp_path / estimator}", "env.max_turns=6", "rollout.tasks_per_step=2", "rollout.group_size=2",
            "rollout.max_new_tokens=10", "rollout.max_context_tokens=260", "rollout.fold_keep_turns=1",
            f"algorithm.estimator={estimator}", "algorithm.filter_zero_variance=false", "rollout.invalid_penalty=0.1"])
        trainer = Trainer(config)
        try:
            trajectories, _ = trainer.collect()
            assert any(t.earlier for t in trajectories)
            before = [p.detach().clone() for p in trainer.model.parameters()]
            kept, advantages, _ = trainer.advantages(trajectories)
            if estimator == "grpo":  # an untrained policy's group members tie: give the update something to do
                advantages = [[(-1.0) ** k] * t.num_turns for k, t in enumerate(kept)]
            metrics = trainer.update(kept, advantages)
        finally:
            trainer.close()
        assert metrics["updated"] == 1.0 and torch.isfinite(torch.tensor(metrics["loss"]))
        assert metrics["logprob_gap_max"] < 1e-4
        assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))
        if estimator == "ppo_gae":
            assert all(len(t.turn_values) == t.num_turns for t in kept)


def test_a_first_prompt_over_the_budget_ends_the_episode_unplayed(tiny_policy):
    """Before, only later prompts were checked: a first prompt longer than the budget (Tutoring's tool list
    is ~3.9 k tiny tokens) was sampled past the context, beyond the model's positions."""
    first = min(t.segments[0].prompt_length for t in _collect(tiny_policy, budget=4096, keep=0))
    calls: list[int] = []
    generate = tiny_policy.generate

    def counting(prompts, **kwargs):
        calls.append(len(prompts))
        return generate(prompts, **kwargs)

    tiny_policy.generate = counting
    try:
        trajectories = _collect(tiny_policy, budget=SAMPLING.max_new_tokens + first - 1, keep=1)
    finally:
        tiny_policy.generate = generate
    assert calls == []  # nothing sampled: every first prompt is over the budget by at least one token
    assert {t.finish for t in trajectories} == {"context"} and not any(t.trainable for t in trajectories)
