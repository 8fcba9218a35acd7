"""Prefix reuse in the HF sampler (trainer/models/backends/prefix_cache.py): within a scope each turn encodes only
its new ids, and the samples equal those of a full prefill; changed weights, the end of the scope, another
thread or a full memory budget all mean no reuse."""

from __future__ import annotations

import contextlib
import random
import threading

import pytest
import torch

from agentgym_envs.policies import SamplingConfig
from trainer.models.backends.hf import HFPolicy
from trainer.collect.episodes import PlaySpec
from trainer.collect.rollout import RolloutWorker

SAMPLING = SamplingConfig(temperature=1.0, max_new_tokens=6, seed=3)


@pytest.fixture()
def fed(tiny_policy, monkeypatch):
    """The width of the ids each ``generate`` call's first forward was given."""
    widths: list[int] = []
    forward = tiny_policy.model.forward

    def spy(*args, **kwargs):
        if kwargs.get("input_ids") is not None and kwargs["input_ids"].shape[1] > 1:
            widths.append(int(kwargs["input_ids"].shape[1]))
        return forward(*args, **kwargs)

    monkeypatch.setattr(tiny_policy.model, "forward", spy)
    return widths


def play(policy: HFPolicy, turns: int = 4, *, reuse: bool, rows: int = 10, between=None, seed: int = 0):
    """Multi-turn sampling on random prompts: each turn's prompts extend the last ones by the reply and a
    random observation; three episodes end after turn 1 and one new, unrelated prompt joins at turn 2."""
    rng = random.Random(seed)
    prompts = [[rng.randrange(5, 300) for _ in range(rng.randrange(20, 60))] for _ in range(rows)]
    out = []
    with policy.reusing_prefixes() if reuse else contextlib.nullcontext():
        for turn in range(turns):
            completions = policy.generate(prompts, sampling=SAMPLING, seeds=[100 * turn + i for i in range(len(prompts))])
            out.append(completions)
            prompts = [p + c.token_ids + [rng.randrange(5, 300) for _ in range(rng.randrange(3, 15))]
                       for p, c in zip(prompts, completions)]
            if turn == 1:
                prompts = prompts[:-3] + [[rng.randrange(5, 300) for _ in range(40)]]
            if between is not None:
                between(turn)
    return out


def assert_same_samples(a, b, tolerance=1e-5):
    for turn_a, turn_b in zip(a, b, strict=True):
        for x, y in zip(turn_a, turn_b, strict=True):
            assert x.token_ids == y.token_ids
            assert max(abs(p - q) for p, q in zip(x.logprobs, y.logprobs)) < tolerance


def test_reuse_feeds_only_the_new_ids_and_samples_what_a_full_prefill_samples(tiny_policy, fed):
    full = play(tiny_policy, reuse=False)
    full_widths = list(fed)
    fed.clear()
    reused = play(tiny_policy, reuse=True)
    assert_same_samples(full, reused)
    assert fed[0] == full_widths[0]  # turn 0: nothing to reuse
    # later turns: the widest new suffix (an unrelated 40-id prompt joins at turn 2) instead of whole histories
    assert fed[1] <= 20 and fed[2] == 40 and fed[3] <= 20
    assert all(r < f for r, f in zip(fed[1:], full_widths[1:]))


def test_reuse_across_sub_batches_and_a_reordered_batch(tiny_model_and_tokenizer):
    import copy

    model, tokenizer = tiny_model_and_tokenizer
    policy = HFPolicy(copy.deepcopy(model), tokenizer, max_batch=3)  # rows of one call land in different sub-batches
    rng = random.Random(1)
    prompts = [[rng.randrange(5, 300) for _ in range(30)] for _ in range(7)]
    with policy.reusing_prefixes():
        first = policy.generate(prompts, sampling=SAMPLING, seeds=list(range(7)))
        nxt = [p + c.token_ids + [7, 8, 9] for p, c in zip(prompts, first)][::-1]  # another order, other sub-batches
        reused = policy.generate(nxt, sampling=SAMPLING, seeds=list(range(7)))
    fresh = policy.generate(nxt, sampling=SAMPLING, seeds=list(range(7)))
    assert_same_samples([fresh], [reused])


def test_changed_weights_are_never_served_from_the_cache(tiny_policy, fed):
    optimizer = torch.optim.AdamW(tiny_policy.model.parameters(), lr=0.05)

    def update(turn):  # an optimiser step between turns 0 and 1, as an async update landing mid-episode
        if turn == 0:
            loss = sum(p.sum() for p in tiny_policy.model.parameters())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()

    reused = play(tiny_policy, turns=2, reuse=True, between=update)
    widths = list(fed)
    fed.clear()
    again = play(tiny_policy, turns=2, reuse=False)  # the updated weights from the start (turn 1 then compared)
    assert widths[1] == fed[1]  # turn 1 re-encoded the whole prompts: the cache was dropped
    assert [c.token_ids for c in reused[1]] != [] and all(
        max(abs(p - q) for p, q in zip(x.logprobs, y.logprobs)) < 1e-5
        for x, y in zip(reused[1], again[1]) if x.token_ids == y.token_ids)


def test_load_state_dict_also_invalidates(tiny_policy):
    state = {k: v.clone() for k, v in tiny_policy.model.state_dict().items()}
    with tiny_policy.reusing_prefixes():
        tiny_policy.generate([[5] * 40], sampling=SAMPLING)
        scope = tiny_policy.prefixes.active(tiny_policy.model)
        assert len(scope.entries) == 1
        tiny_policy.model.load_state_dict(state)
        assert tiny_policy.prefixes.active(tiny_policy.model).entries == []


def test_nothing_is_kept_outside_a_scope_or_past_the_budget(tiny_model_and_tokenizer, fed):
    model, tokenizer = tiny_model_and_tokenizer
    policy = HFPolicy(model, tokenizer)
    policy.generate([[5] * 40], sampling=SAMPLING)
    assert policy.prefixes.active(model) is None
    with policy.reusing_prefixes():
        with policy.reusing_prefixes():  # re-entrant: the inner block does not end the outer scope
            policy.generate([[5] * 40], sampling=SAMPLING)
        assert len(policy.prefixes.active(model).entries) == 1
    assert policy.prefixes.active(model) is None
    tight = HFPolicy(model, tokenizer, prefix_cache_mb=1e-4)  # ~100 bytes: no row fits
    with tight.reusing_prefixes():
        tight.generate([[5] * 40], sampling=SAMPLING)
        assert tight.prefixes.active(model).entries == []


def test_another_threads_calls_do_not_see_this_scope(tiny_policy):
    with tiny_policy.reusing_prefixes():
        tiny_policy.generate([[5] * 40], sampling=SAMPLING)
        seen = []
        worker = threading.Thread(target=lambda: seen.append(tiny_policy.prefixes.active(tiny_policy.model)))
        worker.start()
        worker.join()
        assert seen == [None] and len(tiny_policy.prefixes.active(tiny_policy.model).entries) == 1


def test_collected_episodes_are_identical_with_and_without_reuse(tiny_policy, monkeypatch):
    spec = PlaySpec("agentgym/Maze-Easy-v0", max_turns=5, system_prompt="", kwargs={"size": 3})

    def collect():
        worker = RolloutWorker(spec, tasks_per_batch=2, group_size=3, max_context_tokens=2048, sample_unit="episode")
        try:
            return worker.collect(tiny_policy, [0, 1], sampling=SAMPLING, seed=0)[0]
        finally:
            worker.close()

    reused = collect()
    monkeypatch.setattr(HFPolicy, "reusing_prefixes", lambda self: contextlib.nullcontext())
    full = collect()
    assert [t.token_ids for t in reused] == [t.token_ids for t in full]
    assert max(abs(a - b) for x, y in zip(reused, full) for a, b in zip(x.sampling_logprobs, y.sampling_logprobs)) < 1e-5


def test_an_async_collectors_scope_survives_new_weights_and_never_serves_the_old_ones(tiny_model_and_tokenizer, monkeypatch):
    """VersionedPolicy swaps in a newer snapshot mid-episode: the turn after the swap re-encodes its prompts
    (no keys or values of the old weights), the turn after that reuses again, and every turn samples what a
    collector without reuse samples under the same swap."""
    import copy

    from trainer.collect.asynchronous import VersionedPolicy, WeightBoard
    from trainer.models.backends import prefix_cache

    model, tokenizer = tiny_model_and_tokenizer
    newer = copy.deepcopy(model)
    with torch.no_grad():
        for p in newer.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    reused_turns: list[int] = []
    turn = [0]
    assemble = prefix_cache.assemble

    def counted(*args, **kwargs):
        reused_turns.append(turn[0])
        return assemble(*args, **kwargs)

    monkeypatch.setattr(prefix_cache, "assemble", counted)

    def collector(publish_at: int | None, reuse: bool):
        board = WeightBoard(model, version=0)
        versioned = VersionedPolicy(board, lambda m: HFPolicy(m, tokenizer), threading.Event())

        def between(t):  # the trainer publishes version 1 while the episodes are between turns 0 and 1
            turn[0] = t + 1
            if t == publish_at:
                board.publish(newer, version=1)

        turn[0] = 0
        return play(versioned, turns=3, reuse=reuse, between=between), versioned

    got, versioned = collector(0, reuse=True)
    assert reused_turns == [2] and versioned.version == 1  # turn 1 ran on new weights: nothing reused
    reference, _ = collector(0, reuse=False)
    assert reused_turns == [2]
    assert_same_samples(got, reference)
    stale, _ = collector(None, reuse=False)  # the old weights throughout: turn 1 would have sampled otherwise
    assert_same_samples(got[:1], stale[:1])
    assert max(abs(p - q) for x, y in zip(got[1], stale[1]) for p, q in zip(x.logprobs[:1], y.logprobs[:1])) > 1e-3
