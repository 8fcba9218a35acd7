"""The clipped policy-gradient loss, aggregation modes and KL estimators on hand-computed numbers."""

import math

import pytest
import torch

from trainer.learn.loss import AGGREGATIONS, LossSettings, kl_k1, kl_k3, policy_loss


def test_clip_low_and_clip_high_are_asymmetric():
    old = torch.zeros(1, 4)
    logp = torch.log(torch.tensor([[1.5, 1.5, 0.5, 0.5]]))  # ratios
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0]])
    mask = torch.ones(1, 4)
    loss, m = policy_loss(logp, old, adv, mask, LossSettings(clip_low=0.2, clip_high=0.28))
    # surrogate = min(r A, clip(r, 0.8, 1.28) A): [1.28, -1.5, 0.5, -0.8]
    assert float(loss) == pytest.approx(-(1.28 - 1.5 + 0.5 - 0.8) / 4, rel=1e-5)
    # all four ratios lie outside the range, but the clipped term is the one used only where A pushes the
    # ratio further out (tokens 0 and 3); clip_fraction counts those (see policy_loss's docstring)
    assert m["clip_fraction"] == pytest.approx(0.5)


def test_aggregations_weigh_tokens_and_sequences_differently():
    values = torch.tensor([[1.0, 1.0, 1.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    assert float(AGGREGATIONS["token_mean"](values, mask, 10)) == pytest.approx(7 / 4)
    assert float(AGGREGATIONS["sequence_mean"](values, mask, 10)) == pytest.approx((1 + 4) / 2)
    assert float(AGGREGATIONS["token_sum_norm"](values, mask, 10)) == pytest.approx(7 / (2 * 10))


def test_kl_estimators():
    logp, ref = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
    assert float(kl_k1(logp, ref)) == pytest.approx(math.log(2))
    assert float(kl_k3(logp, ref)) == pytest.approx(0.5 - math.log(0.5) - 1)  # exp(x)-x-1, x = log(0.25/0.5)
    assert float(kl_k3(ref, ref)) == 0.0


def test_kl_and_entropy_terms_enter_the_loss_with_their_coefficients():
    logp = torch.tensor([[math.log(0.5)]], requires_grad=True)
    zeros, mask = torch.zeros(1, 1), torch.ones(1, 1)
    entropy = torch.tensor([[2.0]])
    settings = LossSettings(kl_coef=0.1, kl_estimator="k1", entropy_coef=0.01)
    loss, m = policy_loss(logp, logp.detach(), zeros, mask, settings, entropy=entropy, ref_logp=torch.tensor([[math.log(0.25)]]))
    assert float(loss.detach()) == pytest.approx(0.1 * math.log(2) - 0.01 * 2.0, rel=1e-5)
    assert m["kl_ref"] == pytest.approx(math.log(2)) and m["entropy"] == 2.0


def test_policy_gradient_sign_raises_logprob_of_positive_advantage_tokens():
    logp = torch.zeros(1, 2, requires_grad=True)
    loss, _ = policy_loss(logp, torch.zeros(1, 2), torch.tensor([[1.0, -1.0]]), torch.ones(1, 2), LossSettings())
    loss.backward()
    assert logp.grad[0, 0] < 0 < logp.grad[0, 1]  # gradient descent raises token 0, lowers token 1
