"""The HF backend: seeded determinism, stop handling, and sampling log-probs equal to the trainer's.

The central check of the trainer (docs/architecture.md): multi-turn episodes collected through the vector env, then scored by
the trainer's recomputation (decoder + chunked log-prob kernel), agree with the sampler's log-probs at
temperature 1, and the loss mask covers exactly the ids the sampler produced.
"""

import torch

from trainer.collect.episodes import PlaySpec
from trainer.learn.logprobs import pack, token_logprobs
from agentgym_envs.policies import SamplingConfig
from trainer.collect.rollout import RolloutWorker

MESSAGES = [[{"role": "user", "content": "You are in the middle of a room. Your task is to: put a pen in desk."}],
            [{"role": "user", "content": "hi"}]]


def test_same_seed_same_completions_and_different_seed_differs(tiny_policy):
    a = tiny_policy.act(MESSAGES, sampling=SamplingConfig(max_new_tokens=8, seed=5))
    b = tiny_policy.act(MESSAGES, sampling=SamplingConfig(max_new_tokens=8, seed=5))
    c = tiny_policy.act(MESSAGES, sampling=SamplingConfig(max_new_tokens=8, seed=6))
    assert [x.token_ids for x in a] == [x.token_ids for x in b] != [x.token_ids for x in c]
    assert all(len(x.token_ids) == len(x.logprobs) <= 8 for x in a)


def test_greedy_is_argmax_and_stop_strings_end_replies(tiny_policy):
    out = tiny_policy.act(MESSAGES, sampling=SamplingConfig(temperature=0.0, max_new_tokens=6, seed=None))
    again = tiny_policy.act(MESSAGES, sampling=SamplingConfig(temperature=0.0, max_new_tokens=6, seed=123))
    assert [x.token_ids for x in out] == [x.token_ids for x in again]
    first_char = out[0].text[:1]
    if first_char:
        stopped = tiny_policy.act(MESSAGES[:1], sampling=SamplingConfig(temperature=0.0, max_new_tokens=6, stop=(first_char,)))
        assert stopped[0].finish_reason == "stop" and len(stopped[0].token_ids) <= len(out[0].token_ids)


def test_multi_turn_sampling_logprobs_match_trainer_recompute_and_mask_is_exact(tiny_policy):
    worker = RolloutWorker(PlaySpec("agentgym/Household-PickPlace-v0", max_turns=3, system_prompt=""),
                           tasks_per_batch=2, group_size=2, max_context_tokens=2048)
    try:
        trajectories, stats = worker.collect(tiny_policy, [0, 5], sampling=SamplingConfig(max_new_tokens=10, seed=0), seed=0)
    finally:
        worker.close()
    assert all(t.num_turns == 3 for t in trajectories) and stats.env_steps == 12
    for t in trajectories:
        generated = [i for i, m in zip(t.token_ids, t.loss_mask) if m]
        assert len(t.replies) == 3 and sum(t.loss_mask) == len(generated)
        assert t.token_ids[:t.prompt_length] == tiny_policy.encode(tiny_policy.render_chat(
            [{"role": "user", "content": _first_user(tiny_policy, t)}]))
    # group members start from one state: identical first prompts
    assert trajectories[0].token_ids[:trajectories[0].prompt_length] == trajectories[1].token_ids[:trajectories[1].prompt_length]
    batch = pack(trajectories, tiny_policy.pad_id)
    with torch.no_grad():
        logp, _ = token_logprobs(tiny_policy.model, batch)
    gap = (logp - batch.sampling_logprobs).abs() * batch.loss_mask
    assert float(gap.max()) < 1e-4
    assert bool(((logp != 0) == batch.loss_mask.bool()).all())  # scored exactly where sampled


def _first_user(policy, trajectory):
    text = policy.decode(trajectory.token_ids[:trajectory.prompt_length])
    return text.split("<|user|>\n", 1)[1].rsplit("<|end|>", 1)[0]


def test_a_bf16_model_samples_from_float32_logits_as_the_trainer_scores(tiny_policy):
    """bf16 weights (issue 33): the sampler's head runs in float32, ``h.float() @ W.float().T`` as the trainer's
    scoring kernel does. Through the model's own bf16 head the logits were rounded to 8 significant bits first
    (on SmolLM2-135M that was a third of the bf16 trainer/sampler gap, 0.030 -> 0.020 nats mean)."""
    from trainer.models.backends.hf import HFPolicy

    model = tiny_policy.model.to(torch.bfloat16)
    policy = HFPolicy(model, tiny_policy.tokenizer, prefix_cache_mb=0)
    prompt = policy.encode_chat(MESSAGES[0])
    [reply] = policy.generate([prompt], sampling=SamplingConfig(temperature=1.0, max_new_tokens=1, seed=0))
    ids = torch.tensor([prompt])
    with torch.no_grad():  # the first token's prefill: the same forward the sampler ran (one row, no padding)
        hidden = model.get_decoder()(input_ids=ids, attention_mask=torch.ones_like(ids),
                                     position_ids=torch.arange(len(prompt))[None]).last_hidden_state[0, -1]
        weight = model.get_output_embeddings().weight
        exact = torch.log_softmax(hidden.float() @ weight.float().T, -1)[reply.token_ids[0]]
        rounded = torch.log_softmax((hidden @ weight.T).float(), -1)[reply.token_ids[0]]  # a bf16 head's logits
    assert abs(reply.logprobs[0] - float(exact)) < 1e-6
    assert abs(float(rounded) - float(exact)) > 1e-5  # the two are far enough apart for this test to tell
