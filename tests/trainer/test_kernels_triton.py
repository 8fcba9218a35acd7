"""The Triton log-prob/entropy kernels against a naive float64 reference: values and gradients.

On a machine without a GPU the kernels run under Triton's interpreter (numpy). ``TRITON_INTERPRET`` is read
when ``@triton.jit`` decorates (including ``triton.language``'s own helpers, at triton's first import) and
again when jitted helpers are called, so it is set around the first import of triton and, by a
module-scoped fixture, while this module's tests run; the rest of the test session never sees it. If
something imported triton earlier in the process without it, the module skips and says so. Shapes and the interpreter's block sizes are picked so
this file runs in well under two minutes on two CPU cores.

Tolerances (absolute, on float64 references):
    fp32: log-probs/entropies 1e-4, gradients 1e-4 relative to the largest reference gradient.
    bf16: log-probs/entropies 2e-3 (inputs are rounded to bf16 before both paths; the math is fp32), and
          gradients 2e-2 relative to the largest reference gradient (the kernel, like the torch path,
          rounds ∂z to bf16 for the dot products and returns bf16 gradients).
"""

import contextlib
import importlib.util
import os
import sys

import pytest
import torch

if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)

@contextlib.contextmanager
def _interpreter_if_no_gpu():
    saved = os.environ.get("TRITON_INTERPRET")
    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = saved


with _interpreter_if_no_gpu():
    from trainer.learn.kernels import triton_linear_logprob as tk

from trainer.learn.kernels import linear_logprob_entropy, resolve_backend

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu" and not tk.INTERPRETED:
    pytest.skip("trainer.learn.kernels.triton_linear_logprob was imported without TRITON_INTERPRET=1 and there is "
                "no GPU; run this file in its own process", allow_module_level=True)



@pytest.fixture(scope="module", autouse=True)
def _interpreter():
    with _interpreter_if_no_gpu():
        yield


TOL = {torch.float32: {"value": 1e-4, "grad": 1e-4}, torch.bfloat16: {"value": 2e-3, "grad": 2e-2}}


def naive(hidden, weight, targets, temperature):
    logp = (hidden @ weight.T / temperature).log_softmax(-1)
    return logp.gather(-1, targets[:, None]).squeeze(-1), -(logp.exp() * logp).sum(-1)


def _inputs(N, H, V, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(N, H, generator=g)
    weight = torch.randn(V, H, generator=g) * 4 / H ** 0.5  # logits of std ~4: peaked, like a trained head
    targets = torch.randint(V, (N,), generator=g)
    w_lp, w_ent = torch.randn(N, generator=g), torch.randn(N, generator=g)
    return (hidden.to(dtype).to(DEVICE), weight.to(dtype).to(DEVICE), targets.to(DEVICE), w_lp.to(DEVICE),
            w_ent.to(DEVICE))


def _check(N, H, V, dtype, temperature, blocks=None):
    hidden, weight, targets, w_lp, w_ent = _inputs(N, H, V, dtype, seed=N + H + V)
    hidden.requires_grad_(), weight.requires_grad_()
    lp, ent = tk.linear_logprob_entropy_triton(hidden, weight, targets, temperature, blocks)
    ((lp * w_lp).sum() + (ent * w_ent).sum()).backward()

    h64, W64 = hidden.detach().double().requires_grad_(), weight.detach().double().requires_grad_()
    ref_lp, ref_ent = naive(h64, W64, targets, temperature)
    ((ref_lp * w_lp.double()).sum() + (ref_ent * w_ent.double()).sum()).backward()

    tol = TOL[dtype]
    assert lp.dtype == ent.dtype == torch.float32 and lp.shape == ent.shape == (N,)
    assert hidden.grad.dtype == weight.grad.dtype == dtype
    torch.testing.assert_close(lp.double(), ref_lp.detach(), rtol=0, atol=tol["value"])
    torch.testing.assert_close(ent.double(), ref_ent.detach(), rtol=0, atol=tol["value"])
    for got, ref in ((hidden.grad, h64.grad), (weight.grad, W64.grad)):
        torch.testing.assert_close(got.double(), ref, rtol=0, atol=tol["grad"] * ref.abs().max().item())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("N,H,V", [(1, 64, 1000), (37, 64, 2500), (3, 100, 1030)],
                         ids=["N1", "N37-V-not-multiple", "H-not-pow2"])
def test_values_and_gradients_match_float64_reference(N, H, V, dtype, temperature):
    _check(N, H, V, dtype, temperature)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_large_hidden(dtype):
    _check(3, 4096, 1100, dtype, 0.7)


@pytest.mark.slow  # ~10-25 s per case under the interpreter on two cores; fine for CI
@pytest.mark.parametrize("dtype,temperature", [(torch.float32, 1.0), (torch.bfloat16, 0.7)], ids=["fp32", "bf16"])
def test_qwen_vocabulary_with_two_tokens(dtype, temperature):
    _check(2, 64, 151_936, dtype, temperature)


def test_many_vocabulary_splits_and_small_tiles_agree():
    """Split merging (forward) and many atomically-summed tiles (backward) with GPU-sized tiles."""
    _check(20, 32, 700, torch.float32, 1.0, blocks=tk.Blocks(n=16, v=64, h=16, splits=5))


def test_equals_the_torch_chunked_path():
    hidden, weight, targets, w_lp, w_ent = _inputs(9, 64, 3000, torch.float32)
    outs = []
    for backend in ("torch", "triton"):
        h, W = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
        lp, ent = linear_logprob_entropy(h, W, targets, 0.7, backend=backend)
        ((lp * w_lp).sum() + (ent * w_ent).sum()).backward()
        outs.append((lp, ent, h.grad, W.grad))
    for a, b in zip(*outs):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_logprobs_only_and_frozen_head():
    """No entropy gradient (None upstream) and a frozen output projection (no grad_weight)."""
    hidden, weight, targets, _, _ = _inputs(5, 64, 1500, torch.float32)
    hidden.requires_grad_()
    lp, _ = linear_logprob_entropy(hidden, weight, targets, backend="triton")
    lp.sum().backward()
    h64 = hidden.detach().double().requires_grad_()
    naive(h64, weight.double(), targets, 1.0)[0].sum().backward()
    assert weight.grad is None
    torch.testing.assert_close(hidden.grad.double(), h64.grad, rtol=0, atol=1e-5)


def test_auto_backend_picks_triton_only_for_cuda_tensors():
    assert resolve_backend("auto", torch.zeros(1)) == "torch"
    assert resolve_backend("torch", torch.zeros(1)) == "torch"
    if torch.cuda.is_available():
        assert resolve_backend("auto", torch.zeros(1, device="cuda")) == "triton"


def test_block_sizes_cover_the_vocabulary():
    for N, H, V in [(1, 64, 151_936), (4096, 4096, 151_936), (17, 100, 5)]:
        for interpreted in (False, True):
            b = tk.block_sizes(N, H, V, interpreted=interpreted)
            assert b.n >= 16 and b.v >= 16 and b.h >= 16 and 1 <= b.splits <= -(-V // b.v)


def test_trainer_update_with_the_triton_kernel_equals_the_naive_logits_path(tiny_overrides, tmp_path):
    """A real training step (multi-turn batch, clip, KL, entropy) through the Triton kernel vs full logits."""
    from tests.trainer.step_parity import assert_same_update, update_through

    naive_step = update_through("naive", tiny_overrides, tmp_path / "naive")
    triton_step = update_through("triton", tiny_overrides, tmp_path / "triton")
    assert_same_update(triton_step, naive_step, value_tol=1e-5, grad_tol=1e-4)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
