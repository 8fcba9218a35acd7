"""The chunked torch log-prob/entropy path against a naive float64 reference: values and gradients."""

import pytest
import torch

from trainer.learn.kernels import linear_logprob_entropy


def naive(hidden, weight, targets, temperature):
    logp = (hidden @ weight.T / temperature).log_softmax(-1)
    return logp.gather(-1, targets[:, None]).squeeze(-1), -(logp.exp() * logp).sum(-1)


@pytest.mark.parametrize("N,H,V,chunk", [(1, 8, 5, 4), (7, 16, 33, 3), (64, 32, 257, 16), (5, 64, 1000, 256)])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_values_and_gradients_match_float64_reference(N, H, V, chunk, temperature):
    g = torch.Generator().manual_seed(N * V)
    hidden = torch.randn(N, H, generator=g, requires_grad=True)
    weight = torch.randn(V, H, generator=g, requires_grad=True)
    targets = torch.randint(V, (N,), generator=g)
    w_lp, w_ent = torch.randn(N, generator=g), torch.randn(N, generator=g)

    lp, ent = linear_logprob_entropy(hidden, weight, targets, temperature, chunk=chunk)
    ((lp * w_lp).sum() + (ent * w_ent).sum()).backward()

    h64, W64 = hidden.detach().double().requires_grad_(), weight.detach().double().requires_grad_()
    ref_lp, ref_ent = naive(h64, W64, targets, temperature)
    ((ref_lp * w_lp.double()).sum() + (ref_ent * w_ent.double()).sum()).backward()

    torch.testing.assert_close(lp.double(), ref_lp.detach(), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(ent.double(), ref_ent.detach(), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(hidden.grad.double(), h64.grad, rtol=1e-4, atol=1e-3)  # grads ~10: fp32 sums over V
    torch.testing.assert_close(weight.grad.double(), W64.grad, rtol=1e-4, atol=1e-3)


def test_bfloat16_inputs_give_float32_outputs_and_input_dtype_grads():
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(9, 16, generator=g).bfloat16().requires_grad_()
    weight = torch.randn(50, 16, generator=g).bfloat16().requires_grad_()
    targets = torch.randint(50, (9,), generator=g)
    lp, ent = linear_logprob_entropy(hidden, weight, targets)
    (lp.sum() + ent.sum()).backward()
    ref_lp, ref_ent = naive(hidden.detach().double(), weight.detach().double(), targets, 1.0)
    assert lp.dtype == torch.float32 and hidden.grad.dtype == torch.bfloat16
    torch.testing.assert_close(lp.double(), ref_lp, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(ent.double(), ref_ent, rtol=1e-3, atol=1e-3)


def test_bad_arguments_are_explained():
    h, W, y = torch.randn(3, 4), torch.randn(5, 4), torch.zeros(3, dtype=torch.long)
    with pytest.raises(ValueError, match="backend must be one of"):
        linear_logprob_entropy(h, W, y, backend="cuda")
    with pytest.raises(ValueError, match="expected targets of shape"):
        linear_logprob_entropy(h, W, y[:2])
    with pytest.raises(ValueError, match="temperature must be > 0"):
        linear_logprob_entropy(h, W, y, temperature=0.0)


def test_trainer_update_with_the_chunked_kernel_equals_the_naive_logits_path(tiny_overrides, tmp_path):
    from tests.trainer.step_parity import assert_same_update, update_through

    naive = update_through("naive", tiny_overrides, tmp_path / "naive")
    chunked = update_through("torch", tiny_overrides, tmp_path / "torch")
    assert_same_update(chunked, naive, value_tol=1e-5, grad_tol=1e-4)
