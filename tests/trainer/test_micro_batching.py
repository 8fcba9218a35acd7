"""Micro-batching by a token budget and PPO epochs (issue 17 §4): the optimiser must see the gradient of
the whole minibatch in one forward, whatever the split, and the epochs' reshuffles must be seeded."""

import pytest
import torch

from tests.trainer.batching import budget_for
from trainer.config import load_config
from trainer import Trainer
from trainer.learn.loss import AGGREGATIONS
from trainer.learn.update import accumulate_gradients, micro_batches, minibatch_split, pack_minibatch, read_turn_values

RUN = ["env.max_turns=3", "rollout.tasks_per_step=3", "rollout.group_size=2", "rollout.max_new_tokens=6",
       "algorithm.filter_zero_variance=false", "loss.kl_coef=0.05", "loss.entropy_coef=0.01",
       "loss.clip_low=0.05", "loss.clip_high=0.05", "optim.shared_prefix=false"]  # one forward per budget 0
SHARE_METRICS = ("loss", "pg_loss", "clip_fraction", "approx_kl_old", "kl_ref", "entropy", "value_loss",
                 "logprob_gap_mean", "logprob_gap_max", "train_tokens")


@pytest.fixture(scope="module")
def ppo_batch(tiny_overrides, tmp_path_factory):
    """A PPO trainer (critic on) with one collected batch, its advantages, a reference model, and weights
    perturbed after sampling so ratios differ from 1 (clip, KL and entropy terms all live)."""
    trainer = Trainer(load_config(None, tiny_overrides + RUN + ["algorithm.estimator=ppo_gae",
                                                                f"out_dir={tmp_path_factory.mktemp('ppo')}"]))
    trajectories, _ = trainer.collect()
    kept, _, _ = trainer.advantages(trajectories)  # reads the critic: turn_values set
    for r, segment in enumerate(s for t in kept for s in t.segments):  # rows of different token counts, so the
        sampled = [i for i, m in enumerate(segment.loss_mask) if m]   # three aggregations differ (untrained
        for i in sampled[len(sampled) - (5 * r) % 11:]:               # replies all run to max_new_tokens)
            segment.loss_mask[i] = 0
    advantages = [[(-1.0) ** k * (1.0 + 0.5 * turn) for turn in range(t.num_turns)] for k, t in enumerate(kept)]
    trainer.ref_model = trainer.reference_copy()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in list(trainer.model.parameters()) + list(trainer.value_head.parameters()):
            p.add_(torch.randn(p.shape, generator=generator) * 0.02)
    returns = [[a + v for a, v in zip(adv, t.turn_values)] for t, adv in zip(kept, advantages)]
    yield trainer, kept, advantages, returns
    trainer.close()


def _gradients(trainer, kept, advantages, returns, budget):
    trainer.config.optim.micro_batch_tokens = budget
    micro = pack_minibatch(trainer, kept, advantages, returns, list(range(len(kept))))
    trainer.optimizer.zero_grad(set_to_none=True)
    metrics = accumulate_gradients(trainer, micro)
    params = list(trainer.model.named_parameters()) + list(trainer.value_head.named_parameters())
    return len(micro), metrics, {n: p.grad.detach().clone() for n, p in params if p.grad is not None}


@pytest.mark.parametrize("aggregation", list(AGGREGATIONS))
def test_four_micro_batches_give_the_one_forward_gradient_and_metrics(ppo_batch, aggregation):
    trainer, kept, advantages, returns = ppo_batch
    trainer.config.loss.aggregation = aggregation
    budget = budget_for(kept, 4)
    n1, m1, g1 = _gradients(trainer, kept, advantages, returns, 0)
    n4, m4, g4 = _gradients(trainer, kept, advantages, returns, budget)
    assert (n1, n4) == (1, 4)
    assert g1.keys() == g4.keys() and "linear.weight" in g1  # the critic's head got a gradient
    worst = max(float((g1[n] - g4[n]).abs().max()) for n in g1)
    assert worst <= 1e-5, worst
    assert max(float(g.abs().max()) for g in g1.values()) > 1e-3  # a real gradient, not two zeros
    for key in SHARE_METRICS:  # the whole minibatch's numbers, not the first micro-batch's
        assert m4[key] == pytest.approx(m1[key], rel=1e-5, abs=1e-6), key
    assert m1["clip_fraction"] > 0 and m1["kl_ref"] > 0 and m1["value_loss"] > 0


def test_the_batch_tells_the_aggregations_apart(ppo_batch):
    """Guards the test above: rows differ in token counts, so a wrong normaliser could not pass unseen."""
    trainer, kept, advantages, returns = ppo_batch
    losses = set()
    for aggregation in AGGREGATIONS:
        trainer.config.loss.aggregation = aggregation
        losses.add(round(_gradients(trainer, kept, advantages, returns, 0)[1]["pg_loss"], 6))
    assert len(losses) == len(AGGREGATIONS)
    assert len({sum(s.loss_mask) for t in kept for s in t.segments}) > 2


def test_normalising_each_micro_batch_by_itself_would_change_the_gradient(ppo_batch):
    """The test above can fail: averaging per-micro-batch means (the usual accumulation bug) is off."""
    trainer, kept, advantages, returns = ppo_batch
    trainer.config.loss.aggregation = "token_mean"
    budget = budget_for(kept, 4)
    _, _, whole = _gradients(trainer, kept, advantages, returns, 0)
    trainer.config.optim.micro_batch_tokens = budget
    micro = pack_minibatch(trainer, kept, advantages, returns, list(range(len(kept))))
    trainer.optimizer.zero_grad(set_to_none=True)
    for batch in micro:  # each micro-batch normalised by its own counts, then averaged
        accumulate_gradients(trainer, [batch])
    naive = {n: p.grad / len(micro) for n, p in trainer.model.named_parameters() if p.grad is not None}
    assert max(float((whole[n] - naive[n]).abs().max()) for n in naive) > 1e-4


def test_the_critic_reads_the_same_values_in_micro_batches(ppo_batch):
    trainer, kept, _, _ = ppo_batch
    budget = budget_for(kept, 4)
    per_budget = {}
    for tokens in (0, budget):
        trainer.config.optim.micro_batch_tokens = tokens
        read_turn_values(trainer, kept)
        per_budget[tokens] = [list(t.turn_values) for t in kept]
    flat = [(a, b) for x, y in zip(per_budget[0], per_budget[budget]) for a, b in zip(x, y)]
    assert flat and len(flat) == sum(t.num_turns for t in kept)
    assert max(abs(a - b) for a, b in flat) <= 1e-5 and max(abs(a) for a, _ in flat) > 1e-3


def test_micro_batches_respect_the_budget_and_keep_every_row_once():
    lengths = [7, 3, 12, 5, 5, 9, 2]
    for budget in (1, 10, 15, 24, 100):
        groups = micro_batches(lengths, budget)
        assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
        for g in groups:
            assert len(g) == 1 or len(g) * max(lengths[i] for i in g) <= budget
    assert micro_batches(lengths, 0) == [list(range(len(lengths)))]
    assert len(micro_batches(lengths, 1)) == len(lengths)  # over-long rows go alone, never dropped


def _run_update(tiny_overrides, out_dir, extra):
    trainer = Trainer(load_config(None, tiny_overrides + RUN + ["optim.name=sgd", "optim.lr=0.5",
                                                                f"out_dir={out_dir}"] + extra))
    try:
        trajectories, _ = trainer.collect()
        kept, _, _ = trainer.advantages(trajectories)
        advantages = [[(-1.0) ** k] * t.num_turns for k, t in enumerate(kept)]
        trainer.ref_model = trainer.reference_copy()  # KL live (fit takes it after the warm-up)
        steps: list[int] = []
        trainer.optimizer.register_step_post_hook(lambda *_: steps.append(1))
        metrics = trainer.update(kept, advantages)
        return metrics, len(steps), {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    finally:
        trainer.close()


def test_update_with_a_token_budget_gives_the_same_weights(tiny_overrides, tmp_path):
    plain, _, w_plain = _run_update(tiny_overrides, tmp_path / "a", [])
    micro, _, w_micro = _run_update(tiny_overrides, tmp_path / "b", ["optim.micro_batch_tokens=40"])
    assert plain["micro_batches"] == 1 and micro["micro_batches"] >= 3
    assert max(float((w_plain[n] - w_micro[n]).abs().max()) for n in w_plain) <= 1e-5
    for key in ("loss", "clip_fraction", "entropy", "kl_ref", "logprob_gap_mean", "train_tokens", "grad_norm"):
        assert micro[key] == pytest.approx(plain[key], rel=1e-5, abs=1e-6), key


def test_two_epochs_make_twice_the_steps_deterministically(tiny_overrides, tmp_path):
    one, steps_one, w_one = _run_update(tiny_overrides, tmp_path / "e1", ["optim.minibatches=2"])
    a, steps_a, w_a = _run_update(tiny_overrides, tmp_path / "a", ["optim.minibatches=2", "optim.epochs=2"])
    b, steps_b, w_b = _run_update(tiny_overrides, tmp_path / "b", ["optim.minibatches=2", "optim.epochs=2"])
    assert (steps_one, steps_a, steps_b) == (2, 4, 4)
    assert a["gradient_steps"] == 4 and "clip_fraction_last" in a
    assert all(torch.equal(w_a[n], w_b[n]) for n in w_a)
    assert any(not torch.equal(w_a[n], w_one[n]) for n in w_a)


def test_epoch_reshuffles_are_seeded_partitions():
    first = minibatch_split(10, 3, epoch=0, seed=7, step=4)
    assert first == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]  # epoch 0: the split used before epochs existed
    later = minibatch_split(10, 3, epoch=1, seed=7, step=4)
    assert sorted(i for c in later for i in c) == list(range(10)) and later != first
    assert later == minibatch_split(10, 3, epoch=1, seed=7, step=4)
    assert later != minibatch_split(10, 3, epoch=1, seed=7, step=5)
    assert later != minibatch_split(10, 3, epoch=2, seed=7, step=4)
