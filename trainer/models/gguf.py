"""A GGUF file as a Hugging Face model directory: dequantised once, cached as safetensors, loaded from there after.

transformers reads GGUF (``from_pretrained(dir, gguf_file=name)``, with the ``gguf`` package) and dequantises
it to float32, but a model loaded that way refuses ``save_pretrained`` ("quantized with gguf and is not
serializable") and every later load would dequantise again (~20 s for a 135 M model on 2 cores). So the
weights are moved once into a model rebuilt with ``from_config`` (the same config without its
``quantization_config``; ``load_state_dict(strict=True)``, so no tensor is dropped or invented) and saved with
its tokenizer under ``cache_dir/<sha256 of the file>/``: a plain directory that ``hf:DIR``, ``policy.path``,
``checkpoint:`` and vLLM load unchanged. The key is the file's content, so a renamed copy hits the cache and
a changed file misses it. Nothing here unpickles: GGUF is read as typed arrays, the cache is safetensors.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from .build import default_cache_dir

#: The file whose presence marks a finished cache entry (written last, then the directory renamed into place).
_DONE = "model.safetensors"


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of the file's bytes (read in 1 MiB blocks: a 93 MB GGUF hashes in well under a second)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_dir(gguf_path: str | Path, cache_dir: str | Path | None = None) -> Path:
    """Where :func:`gguf_to_hf_dir` keeps (or would keep) the dequantised copy of ``gguf_path``."""
    return Path(cache_dir or default_cache_dir()) / file_sha256(gguf_path)


def gguf_to_hf_dir(gguf_path: str | Path, cache_dir: str | Path | None = None) -> Path:
    """The Hugging Face directory (float32 safetensors, tokenizer, generation config) of a ``.gguf`` file.

    The first call dequantises and writes ``cache_dir/<sha256>/`` (default ``$AGENTGYM_CACHE/models``, else
    ``~/.cache/agentgym/models``); later calls return it without reading the weights. Treat it as read-only.
    """
    source = Path(gguf_path).expanduser().resolve()
    target = cached_dir(source, cache_dir)
    if not (target / _DONE).exists():
        _require_gguf(source, target)
        _dequantise_into(source, target)
    return target


def _require_gguf(source: Path, target: Path) -> None:
    """Only dequantising needs ``gguf``: a virtualenv without it (vLLM's own, say) loads a cache another one
    built, and otherwise gets one line saying how to build it rather than transformers' ImportError."""
    try:
        import gguf  # noqa: F401
    except ImportError:
        from .registry import ModelNotFoundError

        raise ModelNotFoundError(
            f"{source.name} has no dequantised copy at {target} yet and this Python lacks the gguf package: "
            f"pip install 'gguf>=0.10' here, or build the copy once where gguf is installed: .venv/bin/python -c "
            f"\"from trainer.models.registry import resolve_model; resolve_model('{source}')\"") from None


def _dequantise_into(source: Path, target: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, name = str(source.parent), source.name
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.generation_config = loaded.generation_config
    del loaded
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tokenizer.save_pretrained(str(tmp))
    model.save_pretrained(str(tmp))
    try:
        tmp.rename(target)  # atomic publish; the same file gives the same entry, so a racing writer is harmless
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
