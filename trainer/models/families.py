"""The model families :func:`trainer.models.build_random_model` can build: architecture, special tokens, stop ids.

Each :class:`Family` names the real ``transformers`` architecture, the tokens its tokenizer reserves (the
role markers its chat template writes), which of them end a reply, and the chat template written here
(``templates/<family>.jinja``). Only the shapes are small: the code paths that load, sample and score a
real checkpoint of the family are the same ones.

Why Gemma 3 and not Gemma 2: Gemma 2 caps its final logits (``30 * tanh(logits / 30)``), which the chunked
log-prob path (:func:`trainer.learn.logprobs.token_logprobs`, one projection straight into the fused
log-softmax) does not apply; Gemma 3's text model has no final soft-capping, keeps Gemma's scaled
embeddings, ``model`` role and merged system turn, and adds sliding-window layers (exercised here with a
window shorter than the test prompts). A model config with ``final_logit_softcapping`` set is refused by
:func:`trainer.learn.logprobs.output_layer` rather than scored wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Size:
    """Decoder shape of one size; ``vocab`` is the BPE target (the embedding pads it to a multiple of 64)."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int


#: ``tiny``: for tests (qwen2 533,632 parameters, qwen3 533,248, gemma 525,568, llama3 656,000 with its
#: untied head). ``bench``: for update benchmarks; qwen2 26,262,016 parameters (8 layers of width 512, GQA
#: 8/2 heads, SwiGLU 1536, tied embedding of 4160 rows for a 4098-token vocabulary).
SIZES: dict[str, Size] = {
    "tiny": Size(hidden=128, layers=2, heads=4, kv_heads=2, intermediate=384, vocab=1024),
    "bench": Size(hidden=512, layers=8, heads=8, kv_heads=2, intermediate=1536, vocab=4096),
}


@dataclass(frozen=True)
class Family:
    """What a family's checkpoint directory holds besides its weights."""

    name: str
    model_type: str
    """``config.json`` ``model_type`` (selects the architecture class through ``AutoConfig``)."""
    architecture: str
    special: tuple[str, ...]
    """Control tokens (added as special tokens: never split, kept by ``decode(skip_special_tokens=False)``)."""
    eos: str
    """The tokenizer's ``eos_token``."""
    stop: tuple[str, ...]
    """``generation_config.eos_token_id``: every token that ends a reply."""
    pad: str | None
    bos: str | None = None
    markup: tuple[str, ...] = ()
    """Added tokens that are not special (tool and reasoning tags): one id each, but plain text to the model."""
    tie: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    """Family-specific ``config.json`` fields."""

    @property
    def template_file(self) -> str:
        return f"{self.name}.jinja"


_QWEN_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
_QWEN_STOP = ("<|im_end|>", "<|endoftext|>")

FAMILY_SPECS: dict[str, Family] = {
    "qwen2": Family("qwen2", "qwen2", "Qwen2ForCausalLM", _QWEN_SPECIAL, eos="<|im_end|>", stop=_QWEN_STOP,
                    pad="<|endoftext|>", markup=("<tool_call>", "</tool_call>"),
                    extra={"rope_theta": 1_000_000.0, "rms_norm_eps": 1e-6, "use_sliding_window": False}),
    "qwen3": Family("qwen3", "qwen3", "Qwen3ForCausalLM", _QWEN_SPECIAL, eos="<|im_end|>", stop=_QWEN_STOP,
                    pad="<|endoftext|>",
                    markup=("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"),
                    extra={"rope_theta": 1_000_000.0, "rms_norm_eps": 1e-6, "attention_bias": False}),
    "llama3": Family("llama3", "llama", "LlamaForCausalLM",
                     ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                      "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"),
                     eos="<|eot_id|>", stop=("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"), pad=None,
                     bos="<|begin_of_text|>", tie=False,
                     extra={"rope_theta": 500_000.0, "rms_norm_eps": 1e-5, "rope_scaling": {
                         "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 2048}}),
    "gemma": Family("gemma", "gemma3_text", "Gemma3ForCausalLM",
                    ("<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"),
                    eos="<eos>", stop=("<eos>", "<end_of_turn>"), pad="<pad>", bos="<bos>",
                    extra={"rms_norm_eps": 1e-6, "final_logit_softcapping": None, "attn_logit_softcapping": None,
                           "sliding_window": 32, "hidden_activation": "gelu_pytorch_tanh"}),
}

#: Family names, in a stable order (tests parametrise over it).
FAMILIES: tuple[str, ...] = tuple(FAMILY_SPECS)


def family(name: str) -> Family:
    """The spec of ``name``; unknown names get the list of known ones."""
    if name not in FAMILY_SPECS:
        raise ValueError(f"unknown model family {name!r}; expected one of {', '.join(FAMILIES)}")
    return FAMILY_SPECS[name]


def model_config(spec: Family, size: Size, vocab_size: int, token_id: dict[str, int]) -> Any:
    """The ``transformers`` config of ``spec`` at ``size`` (ids of pad/bos/eos from ``token_id``)."""
    from transformers import AutoConfig

    head_dim = size.hidden // size.heads
    fields: dict[str, Any] = dict(
        vocab_size=vocab_size, hidden_size=size.hidden, intermediate_size=size.intermediate,
        num_hidden_layers=size.layers, num_attention_heads=size.heads, num_key_value_heads=size.kv_heads,
        head_dim=head_dim, max_position_embeddings=4096, tie_word_embeddings=spec.tie,
        eos_token_id=token_id[spec.eos], bos_token_id=token_id[spec.bos] if spec.bos else None,
        pad_token_id=token_id[spec.pad] if spec.pad else None, architectures=[spec.architecture])
    extra = dict(spec.extra)
    if spec.model_type == "gemma3_text":
        # alternate sliding and full attention (Gemma 3 uses 5:1; two layers keep one of each)
        fields.update(query_pre_attn_scalar=head_dim,
                      layer_types=["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(size.layers)])
    return AutoConfig.for_model(spec.model_type, **fields, **extra)
