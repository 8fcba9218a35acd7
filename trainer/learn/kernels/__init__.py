"""Log-probs and entropies of sampled tokens straight from final hidden states, never holding [N, V] logits.

The trainer's log-prob recomputation goes through :func:`linear_logprob_entropy`. Two backends share the
numerics: the pure-torch chunked path (:mod:`trainer.learn.kernels.torch_chunked`, CPU and the tests' sibling
oracle) and a Triton kernel streaming over the vocabulary (:mod:`trainer.learn.kernels.triton_linear_logprob`).
``"auto"`` picks Triton for CUDA tensors when Triton imports, torch otherwise. The Triton module is imported
lazily: whether ``@triton.jit`` builds GPU or interpreter kernels is fixed by ``TRITON_INTERPRET`` at import.
``"naive"`` materialises the full logits (the reference the trainer's own loss is tested against; also a
debugging switch, ``loss.kernel_backend=naive``).

Naive equivalent (what the tests compare against, in float64)::

    logits = hidden @ weight.T / temperature            # (N, V)
    logp = logits.log_softmax(-1)
    logprobs = logp.gather(-1, targets[:, None]).squeeze(-1)
    entropies = -(logp.exp() * logp).sum(-1)

>>> import torch
>>> h, W, y = torch.randn(5, 8), torch.randn(11, 8), torch.tensor([0, 3, 10, 2, 2])
>>> lp, ent = linear_logprob_entropy(h, W, y)
>>> torch.allclose(lp, (h @ W.T).log_softmax(-1).gather(-1, y[:, None]).squeeze(-1), atol=1e-5)
True
"""

from __future__ import annotations

import importlib.util

import torch

from .torch_chunked import DEFAULT_CHUNK, linear_logprob_entropy_torch

__all__ = ["BACKENDS", "linear_logprob_entropy", "pick_backend", "resolve_backend"]

BACKENDS = ("auto", "torch", "triton", "naive")


def linear_logprob_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                           temperature: float = 1.0, backend: str = "auto",
                           chunk: int = DEFAULT_CHUNK) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token ``log softmax(hidden Wᵀ / T)[target]`` and entropy of that distribution; differentiable.

    Args:
        hidden: (N, H) final hidden states (after the last norm), one row per predicted token.
        weight: (V, H) output projection (``lm_head.weight``).
        targets: (N,) ids whose log-probs are wanted.
        temperature: the sampling temperature the log-probs must match.
        backend: ``"auto"`` (Triton on CUDA when available, else torch), ``"torch"``, ``"triton"``, or
            ``"naive"`` (full [N, V] logits in float32: the reference, not for large vocabularies).
        chunk: tokens per block of the torch path; peak extra memory is about ``chunk × V`` floats.
            The Triton path chooses its own tiles (:func:`trainer.learn.kernels.triton_linear_logprob.block_sizes`).

    Returns:
        ``(logprobs, entropies)``, both (N,) float32.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if hidden.dim() != 2 or weight.dim() != 2 or hidden.shape[1] != weight.shape[1]:
        raise ValueError(f"expected hidden (N, H) and weight (V, H), got {tuple(hidden.shape)} and {tuple(weight.shape)}")
    if targets.shape != hidden.shape[:1]:
        raise ValueError(f"expected targets of shape ({hidden.shape[0]},), got {tuple(targets.shape)}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    if resolve_backend(backend, hidden) == "triton":
        from .triton_linear_logprob import linear_logprob_entropy_triton

        return linear_logprob_entropy_triton(hidden, weight, targets.long(), temperature)
    if backend == "naive":
        logp = (hidden.float() @ weight.float().T / temperature).log_softmax(-1)  # (N, V)
        return logp.gather(-1, targets.long()[:, None]).squeeze(-1), -(logp.exp() * logp).sum(-1)
    return linear_logprob_entropy_torch(hidden, weight, targets.long(), temperature, chunk)


def triton_available() -> bool:
    """Whether the ``triton`` package is installed (it ships with CUDA builds of torch)."""
    return importlib.util.find_spec("triton") is not None


def resolve_backend(backend: str, hidden: torch.Tensor) -> str:
    """``"auto"`` → ``"triton"`` for CUDA tensors when Triton is installed, else ``"torch"``."""
    return pick_backend(backend, on_cuda=hidden.is_cuda, has_triton=triton_available())


def pick_backend(backend: str, *, on_cuda: bool, has_triton: bool) -> str:
    """The backend that runs, from the asked one and the facts (pure, so the CUDA decision is testable anywhere).

    >>> pick_backend("auto", on_cuda=True, has_triton=True), pick_backend("auto", on_cuda=False, has_triton=True)
    ('triton', 'torch')
    """
    if backend == "auto":
        return "triton" if on_cuda and has_triton else "torch"
    if backend == "triton" and not has_triton:
        raise ValueError("backend='triton' needs the triton package (pip install triton); use backend='torch'")
    return backend
