"""The names and values a vLLM weight sync sends (no vLLM needed: runs in the main venv).

A LoRA model is synced as its base model's checkpoint names with each adapted weight merged, computed
without touching the model (merging in place and back would perturb the trained weights by rounding).
"""

from __future__ import annotations

import copy

import torch

from trainer.models.backends.vllm import hf_named_weights, request_seed


def test_plain_model_weights_are_its_parameters_under_checkpoint_names(tiny_model_and_tokenizer):
    model, _ = tiny_model_and_tokenizer
    named = dict(hf_named_weights(model))
    assert named.keys() == dict(model.named_parameters()).keys()
    assert "lm_head.weight" not in named  # tied to the embedding: sent once
    assert all(named[n] is p.detach() or torch.equal(named[n], p) for n, p in model.named_parameters())


def test_lora_weights_are_merged_without_modifying_the_model(tiny_model_and_tokenizer):
    from peft import LoraConfig, get_peft_model

    model, _ = tiny_model_and_tokenizer
    peft_model = get_peft_model(copy.deepcopy(model), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                                 lora_dropout=0.0))
    with torch.no_grad():
        generator = torch.Generator().manual_seed(0)
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.1)
    before = {n: p.detach().clone() for n, p in peft_model.named_parameters()}
    named = dict(hf_named_weights(peft_model))
    assert all(torch.equal(p, before[n]) for n, p in peft_model.named_parameters())
    merged = dict(copy.deepcopy(peft_model).merge_and_unload().named_parameters())
    assert named.keys() == merged.keys() == dict(model.named_parameters()).keys()
    for name, weight in merged.items():
        torch.testing.assert_close(named[name], weight.detach(), rtol=0, atol=1e-6)
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(named[q], dict(model.named_parameters())[q])  # the adapter's update is in it


def test_request_seeds_are_distinct_per_prompt_and_stable():
    seeds = [request_seed(7, i) for i in range(64)]
    assert len(set(seeds)) == 64 and seeds == [request_seed(7, i) for i in range(64)]
    assert all(0 <= s < 2**63 for s in seeds) and request_seed(8, 0) != seeds[0]
