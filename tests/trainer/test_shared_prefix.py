"""A group's shared prompt runs through the decoder once in the update (trainer/learn/shared_prefix.py):
the same log-probs and gradients as every row's full forward, fewer tokens through the decoder."""

import pytest
import torch

from tests.trainer.batching import alternating_advantages, take_reference_and_move
from trainer import Trainer
from trainer.config import load_config
from trainer.learn.logprobs import pack, token_logprobs
from trainer.learn.shared_prefix import MIN_SHARED, common_prefix
from trainer.learn.update import accumulate_gradients, micro_batches, pack_minibatch, row_prefixes, shares_prefixes

RUN = ["env.max_turns=3", "rollout.tasks_per_step=3", "rollout.group_size=3", "rollout.max_new_tokens=6",
       "algorithm.filter_zero_variance=false", "loss.kl_coef=0.05", "loss.entropy_coef=0.01"]


@pytest.fixture(scope="module")
def batch(tiny_overrides, tmp_path_factory):
    """A trainer with a reference model, one collected batch of 3 groups × 3, and weights moved after
    sampling (ratios off 1, KL live)."""
    trainer = Trainer(load_config(None, tiny_overrides + RUN + [f"out_dir={tmp_path_factory.mktemp('share')}"]))
    trajectories, _ = trainer.collect()
    kept, _, _ = trainer.advantages(trajectories)
    advantages = alternating_advantages(kept)
    take_reference_and_move(trainer)
    yield trainer, kept, advantages
    trainer.close()


def _decoder_tokens(trainer):
    """A list that a forward pre-hook fills with the number of ids each decoder forward takes."""
    seen: list[int] = []
    handle = trainer.model.get_decoder().register_forward_pre_hook(
        lambda _m, args, kwargs: seen.append(int(kwargs["input_ids"].numel())), with_kwargs=True)
    return seen, handle


def test_a_shared_prefix_gives_the_full_forwards_log_probs_and_gradients(batch):
    trainer, kept, _ = batch
    group = [t for t in kept if t.group == kept[0].group]
    assert len(group) == 3
    results = []
    for share in (False, True):
        packed = pack(group, trainer.policy.pad_id, share_prefix=share)
        trainer.model.zero_grad(set_to_none=True)
        seen, handle = _decoder_tokens(trainer)
        logp, entropy = token_logprobs(trainer.model, packed)
        handle.remove()
        (logp * packed.loss_mask).sum().backward()
        results.append((packed.shared_prefix, seen, logp.detach(), entropy.detach(),
                        {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}))
    (s0, seen0, lp0, ent0, g0), (s1, seen1, lp1, ent1, g1) = results
    prompt = group[0].prompt_length
    assert s0 == 0 and s1 >= max(prompt, MIN_SHARED)  # the whole first prompt at least
    B, T = lp0.shape
    assert seen0 == [B * T] and seen1 == [s1, B * (T - s1)]  # the prefix ran once, then only the suffixes
    assert float((lp0 - lp1).abs().max()) < 1e-5 and float((ent0 - ent1).abs().max()) < 1e-5
    assert float((lp0 * packed.loss_mask).abs().sum()) > 1.0  # real log-probs, not zeros on both sides
    assert g0.keys() == g1.keys() and len(g0) > 3
    assert max(float((g0[n] - g1[n]).abs().max()) for n in g0) < 1e-5
    assert max(float(g.abs().max()) for g in g0.values()) > 1e-3


def test_an_update_with_shared_prefixes_has_the_full_forwards_gradient_and_metrics(batch):
    trainer, kept, advantages = batch
    trainer.config.optim.micro_batch_tokens = 0
    out = {}
    for share in (False, True):
        trainer.config.optim.shared_prefix = share
        micro = pack_minibatch(trainer, kept, advantages, None, list(range(len(kept))))
        trainer.optimizer.zero_grad(set_to_none=True)
        metrics = accumulate_gradients(trainer, micro)
        out[share] = (micro, metrics, {n: p.grad.clone() for n, p in trainer.model.named_parameters()
                                       if p.grad is not None})
    (m0, metrics0, g0), (m1, metrics1, g1) = out[False], out[True]
    assert len(m0) == 1 and len(m1) == 3  # budget 0: one forward, or one per group when sharing
    assert all(b.shared_prefix > 0 for b in m1)
    assert max(float((g0[n] - g1[n]).abs().max()) for n in g0) < 1e-5
    for key in ("loss", "pg_loss", "kl_ref", "entropy", "logprob_gap_mean", "train_tokens"):
        assert metrics1[key] == pytest.approx(metrics0[key], rel=1e-5, abs=1e-6), key
    assert metrics0["kl_ref"] > 0


def test_micro_batches_keep_a_groups_rows_together_and_count_its_prefix_once():
    lengths = [10, 9, 10, 8, 9, 10]
    prefixes = [("a", 6), ("b", 6), ("a", 6), ("b", 6), ("a", 6), ("c", 2)]
    groups = micro_batches(lengths, 18, prefixes)
    assert sorted(i for g in groups for i in g) == list(range(6))
    assert all(len({prefixes[i][0] for i in g}) == 1 for g in groups)
    # "a": 6 + 3 × 4 = 18 fits in one forward (30 padded ids without sharing); "c" alone
    assert groups == [[0, 2, 4], [1, 3], [5]]
    assert len(micro_batches(lengths, 18)) == 5  # without prefixes: 2 rows × 10 > 18, only the two 9s pair up
    assert micro_batches(lengths, 0, prefixes) == [[0, 2, 4], [1, 3], [5]]
    assert micro_batches(lengths, 1, prefixes) == [[0], [2], [4], [1], [3], [5]]  # over budget: alone
    assert micro_batches([], 18, []) == [] and micro_batches([], 18) == [] and micro_batches([], 0) == [[]]


def test_rows_of_a_group_are_keyed_by_their_first_prompt(batch):
    _, kept, _ = batch
    prefixes = row_prefixes(kept)
    by_group = {}
    for t, (key, length) in zip(kept, prefixes):
        assert length == t.prompt_length and key == tuple(t.token_ids[:length])
        by_group.setdefault(t.group, set()).add(key)
    assert len(by_group) == 3 and all(len(keys) == 1 for keys in by_group.values())
    assert len({next(iter(keys)) for keys in by_group.values()}) == 3  # different tasks, different prompts


def test_common_prefix_leaves_every_row_a_token_and_ignores_short_prefixes():
    ids = torch.arange(40).repeat(3, 1)
    assert common_prefix(ids, [40, 40, 40]) == 39  # identical rows: all but the last id
    assert common_prefix(ids, [40, 20, 40]) == 19  # bounded by the shortest row
    ids[1, 25] = -1
    assert common_prefix(ids, [40, 40, 40]) == 25
    assert common_prefix(ids[:1], [40]) == 0  # one row: nothing to share
    ids[2, 5] = -1
    assert common_prefix(ids, [40, 40, 40]) == 0  # 5 < MIN_SHARED


def test_sharing_is_off_where_ranks_or_checkpointing_need_full_forwards(batch):
    trainer = batch[0]
    trainer.config.optim.shared_prefix = True
    assert shares_prefixes(trainer)
    trainer.config.policy.gradient_checkpointing = True
    assert not shares_prefixes(trainer)
    trainer.config.policy.gradient_checkpointing = False
    trainer.config.optim.shared_prefix = False
    assert not shares_prefixes(trainer)
    trainer.config.optim.shared_prefix = True
