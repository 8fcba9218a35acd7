"""Loss safety off-policy: dual-clip, the log-ratio clamp, clamped k3, and what ``clip_fraction`` counts.

Reference values come from the formulas (dual-clip PPO of Ye et al. 2020 as verl's ``compute_policy_loss``
writes it, and verl's clamped ``low_var_kl``), written out here on the same tensors.
"""

import math

import pytest
import torch

from trainer.config import LossConfig
from trainer.errors import ConfigError
from trainer.learn.loss import AGGREGATIONS, LossSettings, kl_k1, kl_k3, policy_loss


def reference_token_loss(log_ratio, adv, low=0.2, high=0.28, c=3.0):
    """The dual-clip formula: for A < 0, min(max(-A r, -A clip(r)), -A c); else max(-A r, -A clip(r))."""
    ratio = torch.exp(torch.clamp(log_ratio, -20.0, 20.0))
    first, second = -adv * ratio, -adv * torch.clamp(ratio, 1 - low, 1 + high)
    ppo = torch.maximum(first, second)
    dual = torch.min(-adv * c, ppo)
    return torch.where(adv < 0, dual, ppo), (second > first).float(), ((ppo > -adv * c) & (adv < 0)).float()


def reference_low_var_kl(logp, ref_logp):
    x = torch.clamp(ref_logp - logp, -20.0, 20.0)
    return torch.clamp(torch.exp(x) - x - 1, -10.0, 10.0)


def test_dual_clip_bounds_the_loss_of_negative_advantages_at_large_ratios():
    ratios = torch.tensor([[2.0, 5.0, 100.0, 1e6]])
    logp = torch.log(ratios).requires_grad_()
    adv = -torch.ones(1, 4)
    loss, m = policy_loss(logp, torch.zeros(1, 4), adv, torch.ones(1, 4), LossSettings(clip_ratio_c=3.0))
    # per token min(max(r, clip r), 3) = [2, 3, 3, 3]: the bound caps each token at -A·c
    assert float(loss.detach()) == pytest.approx((2 + 3 + 3 + 3) / 4)
    loss.backward()
    assert logp.grad[0, 1:].abs().max() == 0  # the bound is a constant: no push from a stale token
    assert float(logp.grad[0, 0]) == pytest.approx(2.0 / 4)  # below the bound the usual -A·r gradient
    assert m["clip_fraction_dual"] == pytest.approx(3 / 4)
    # positive advantages are untouched by dual-clip (the PPO clip already bounds them)
    pos, _ = policy_loss(torch.log(ratios), torch.zeros(1, 4), -adv, torch.ones(1, 4), LossSettings(clip_ratio_c=3.0))
    assert float(pos) == pytest.approx(-1.28)


def test_matches_the_dual_clip_formula_on_random_off_policy_tensors():
    gen = torch.Generator().manual_seed(0)
    log_ratio = torch.randn(4, 64, generator=gen) * 3  # ratios from e^-10 to e^10
    adv = torch.randn(4, 64, generator=gen)
    mask = (torch.rand(4, 64, generator=gen) > 0.2).float()
    expected, clipped, dual = reference_token_loss(log_ratio, adv, 0.2, 0.28, 3.0)
    for name, aggregate in AGGREGATIONS.items():
        settings = LossSettings(aggregation=name, max_tokens=64)
        loss, m = policy_loss(log_ratio, torch.zeros(4, 64), adv, mask, settings)
        assert float(loss) == pytest.approx(float(aggregate(expected, mask, 64)), rel=1e-6)
    assert m["clip_fraction"] == pytest.approx(float((clipped * mask).sum() / mask.sum()))
    assert m["clip_fraction_dual"] == pytest.approx(float((dual * mask).sum() / mask.sum()))
    assert 0 < m["clip_fraction_dual"] < m["clip_fraction"] < 1  # all three regimes occur in the batch


@pytest.mark.parametrize("delta", [50.0, -50.0, 100.0, -100.0])
def test_huge_log_ratio_gives_finite_bounded_loss_gradient_and_kl(delta):
    logp = torch.full((1, 3), -1.0, requires_grad=True)
    old = logp.detach() - delta  # ratio e^delta
    adv = torch.tensor([[1.0, -1.0, 0.5]])
    entropy = torch.ones(1, 3, requires_grad=True)
    settings = LossSettings(kl_coef=0.1, kl_estimator="k3", entropy_coef=0.01)
    loss, m = policy_loss(logp, old, adv, torch.ones(1, 3), settings, entropy=entropy, ref_logp=old)
    loss.backward()
    assert math.isfinite(float(loss)) and torch.isfinite(logp.grad).all()
    assert abs(m["pg_loss"]) <= 3.0  # |A| ≤ 1: the PPO clip bounds A > 0, the dual clip bounds A < 0
    assert 0 <= m["kl_ref"] <= 10.0 and 0 <= m["approx_kl_old"] <= 10.0
    assert float(kl_k3(logp, old).max()) == 10.0  # unclamped this is e^|delta|, 5e21 or inf in fp32
    assert torch.equal(kl_k3(logp.detach(), old), reference_low_var_kl(logp.detach(), old))
    assert torch.isfinite(kl_k1(logp, old)).all()


def test_clamped_k3_equals_the_clamped_formula_and_the_plain_one_in_range():
    gen = torch.Generator().manual_seed(1)
    logp, ref = torch.randn(3, 50, generator=gen) * 15, torch.randn(3, 50, generator=gen) * 15
    assert torch.equal(kl_k3(logp, ref), reference_low_var_kl(logp, ref))
    small, small_ref = 0.5 * torch.randn(3, 50, generator=gen), 0.5 * torch.randn(3, 50, generator=gen)
    x = small_ref - small
    assert torch.equal(kl_k3(small, small_ref), torch.exp(x) - x - 1)  # nothing clamps: unchanged


def test_clip_fraction_counts_tokens_where_the_clipped_term_is_used():
    ratios = torch.tensor([[1.5, 1.5, 0.5, 0.5], [1.5, 2.0, 5.0, 1.1]])
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0], [0.0, 1.0, -1.0, 1.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 1.0, 1.0]])
    _, m = policy_loss(torch.log(ratios), torch.zeros(2, 4), adv, mask, LossSettings(clip_low=0.2, clip_high=0.28))
    # by hand, clipped term used: (0,0) r 1.5 A+ and (0,3) r 0.5 A-; not (0,1) r 1.5 A- (unclipped is larger),
    # (0,2) r 0.5 A+, (1,0) A = 0, (1,1) masked, (1,2) r 5 A- (dual bound instead), (1,3) r 1.1 in range.
    assert m["clip_fraction"] == pytest.approx(2 / 7)
    assert m["clip_fraction_dual"] == pytest.approx(1 / 7)  # (1,2): min(5, 3) = 3


def old_loss(logp, old_logp, adv, mask, settings, entropy, ref_logp):
    """The loss before dual-clip and clamps (kept here verbatim as the on-policy reference)."""
    aggregate = AGGREGATIONS[settings.aggregation]
    ratio = torch.exp(logp - old_logp)
    clipped = ratio.clamp(1 - settings.clip_low, 1 + settings.clip_high)
    loss = aggregate(-torch.minimum(ratio * adv, clipped * adv), mask, settings.max_tokens)
    x = ref_logp - logp
    loss = loss + settings.kl_coef * aggregate(x.exp() - x - 1, mask, settings.max_tokens)
    return loss - settings.entropy_coef * aggregate(entropy, mask, settings.max_tokens)


@pytest.mark.parametrize("aggregation", list(AGGREGATIONS))
@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_on_policy_loss_and_gradient_equal_the_old_loss_exactly(aggregation, noise):
    gen = torch.Generator().manual_seed(2)
    base = -torch.rand(3, 20, generator=gen) * 4
    old = base + noise * torch.randn(3, 20, generator=gen)  # noise 0: ratio 1; 0.3: some tokens clip, none reach c
    adv, mask = torch.randn(3, 20, generator=gen), (torch.rand(3, 20, generator=gen) > 0.3).float()
    ref, ent0 = base + 0.3 * torch.randn(3, 20, generator=gen), torch.rand(3, 20, generator=gen)
    settings = LossSettings(aggregation=aggregation, kl_coef=0.05, entropy_coef=0.01, max_tokens=20)
    grads = []
    for fn in (old_loss, None):
        logp, entropy = base.clone().requires_grad_(), ent0.clone().requires_grad_()
        if fn is None:
            loss, m = policy_loss(logp, old, adv, mask, settings, entropy=entropy, ref_logp=ref)
        else:
            loss = fn(logp, old, adv, mask, settings, entropy, ref)
        loss.backward()
        grads.append((loss.detach(), logp.grad, entropy.grad))
    assert all(torch.equal(a, b) for a, b in zip(*grads))
    assert m["clip_fraction_dual"] == 0 and (m["clip_fraction"] > 0) == (noise > 0)


def test_config_rejects_a_dual_clip_bound_at_or_below_one():
    assert LossConfig().clip_ratio_c == 3.0
    with pytest.raises(ConfigError, match="clip_ratio_c must be > 1"):
        LossConfig(clip_ratio_c=1.0)
