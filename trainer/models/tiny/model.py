"""The tiny causal LM: a Qwen2-style decoder built from a config, initialised from a seed.

Qwen2 (RMSNorm, rotary positions, SwiGLU, grouped-query attention) so that the same weights load in
transformers and in vLLM; head_dim 64 because vLLM's CPU attention rejects smaller heads.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TinyModelConfig:
    """Shape of the tiny model (defaults: ~0.5M parameters, a few ms per decoded token on one CPU core)."""

    hidden_size: int = 128
    """Width of the residual stream."""
    num_layers: int = 2
    """Decoder blocks."""
    num_heads: int = 2
    """Attention heads; ``hidden_size / num_heads`` is the head dim (64 by default)."""
    intermediate_size: int = 384
    """SwiGLU hidden width."""
    max_positions: int = 2048
    """Longest sequence (prompt plus whole episode), in tokens."""

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be a multiple of num_heads ({self.num_heads})")
        if min(self.hidden_size, self.num_layers, self.num_heads, self.intermediate_size, self.max_positions) < 1:
            raise ValueError("every size of the tiny model must be >= 1")


def build_tiny_model(config: TinyModelConfig, vocab_size: int, *, seed: int, pad_token_id: int, eos_token_id: int):
    """A freshly initialised ``Qwen2ForCausalLM``; the same seed gives the same weights.

    The global torch RNG is forked, so building a model does not disturb anyone else's random stream.
    """
    from transformers import AutoModelForCausalLM, Qwen2Config

    hf_config = Qwen2Config(
        vocab_size=vocab_size, hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers, num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_heads, max_position_embeddings=config.max_positions,
        tie_word_embeddings=True, pad_token_id=pad_token_id, eos_token_id=eos_token_id, bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(hf_config, attn_implementation="sdpa", dtype=torch.float32)
    return model
