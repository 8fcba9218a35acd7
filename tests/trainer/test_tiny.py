"""The tiny policy is built locally and deterministically, and its template renders turns verbatim."""

import torch

from trainer.config import load_config
from trainer.models.tiny import build_tiny


def test_same_config_builds_identical_artifacts_in_fresh_caches(tmp_path, tiny_overrides, tiny_model_and_tokenizer):
    config = load_config(None, tiny_overrides).policy.tiny
    model, tokenizer = build_tiny(config, tmp_path)
    cached_model, cached_tokenizer = tiny_model_and_tokenizer
    assert tokenizer.get_vocab() == cached_tokenizer.get_vocab()
    a, b = model.state_dict(), cached_model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert model.config.vocab_size % 64 == 0 and model.config.vocab_size >= len(tokenizer)


def test_household_text_round_trips_and_special_tokens_are_single_ids(tiny_model_and_tokenizer):
    _, tokenizer = tiny_model_and_tokenizer
    text = "<|user|>\nYou arrive at fridge 1. The fridge 1 is closed.<|end|>\n<|assistant|>\nopen fridge 1<|end|>"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids, skip_special_tokens=False) == text
    assert ids.count(tokenizer.eos_token_id) == 2 and ids[0] == tokenizer.convert_tokens_to_ids("<|user|>")
