"""One forward over a prefix that every row of a micro-batch shares (a GRPO group's first prompt).

The G episodes of a task start from the same prompt (system prompt and first observation; often the same
first replies too), and a full forward runs those ids through the decoder G times. Here the shared ids
run once, with batch 1; their keys and values are expanded (a view, no copy) to the batch as the KV cache
of a second forward over each row's own suffix, at positions that continue the prefix; the prefix's final
hidden states are expanded the same way and joined to the suffix's. Every row then attends to the same
keys at the same positions as in a full forward, so log-probs agree up to float rounding (~1e-6 in
float32; tested against the full forward, gradients included), and the backward sums the rows' gradients
through the expansion into the prefix's single forward.

Where it applies: a model whose ``DynamicCache`` is all full-attention layers (a sliding window or linear
attention falls back to a full forward, decided from the config before any forward), one process (under DDP/FSDP2 every rank must make the same forwards), no gradient
checkpointing (HF's checkpointed layers refuse a cache). :func:`trainer.learn.update.micro_batches` puts a
group's rows together so that a micro-batch has a prefix to share.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

MIN_SHARED = 16
"""The shortest common prefix worth a forward of its own."""


def common_prefix(input_ids: torch.Tensor, lengths: list[int]) -> int:
    """How many leading ids every row has in common, leaving each row at least one id of its own
    (the prefix's last position then predicts each row's next id); 0 under :data:`MIN_SHARED` or one row.

    >>> common_prefix(torch.tensor([[1, 2, 3, 4], [1, 2, 5, 0]]), [4, 3])
    0
    """
    if input_ids.shape[0] < 2:
        return 0
    span = min(lengths) - 1
    same = (input_ids[:, :span] == input_ids[:1, :span]).all(0)
    shared = int(span if bool(same.all()) else int((~same).nonzero()[0]))
    return shared if shared >= MIN_SHARED else 0


def decoder_hidden(decoder: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, shared: int) -> torch.Tensor:
    """(B, T, H) final hidden states of right-padded rows whose first ``shared`` ids are the same (0: a
    plain full forward), differentiable. See the module docstring."""
    if shared <= 0:
        return decoder(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    from transformers.cache_utils import DynamicCache, DynamicLayer

    cache = DynamicCache(config=decoder.config)  # the model's own layer kinds, still empty
    if any(type(layer) is not DynamicLayer for layer in cache.layers):  # sliding-window, linear attention, ...:
        return decoder(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    B, T = input_ids.shape
    # transformers >= 5.2x names the KV cache argument ``cache``, older releases ``past_key_values``
    name = "cache" if "cache" in inspect.signature(decoder.forward).parameters else "past_key_values"
    prefix = decoder(input_ids=input_ids[:1, :shared], use_cache=True, **{name: cache})
    expanded = DynamicCache(ddp_cache_data=[(layer.keys.expand(B, -1, -1, -1), layer.values.expand(B, -1, -1, -1))
                                         for layer in cache.layers])
    positions = torch.arange(shared, T, device=input_ids.device).expand(B, -1)
    suffix = decoder(input_ids=input_ids[:, shared:], attention_mask=attention_mask, position_ids=positions,
                     use_cache=True, **{name: expanded}).last_hidden_state
    return torch.cat([prefix.last_hidden_state.expand(B, -1, -1), suffix], dim=1)

