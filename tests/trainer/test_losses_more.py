"""More losses (issue 18 §3): GSPO, CISPO, rollout correction (TIS / MIS) and ECHO.

Each pure function is checked on a crafted batch whose answer is worked out by hand in the comments; the
trainer-level tests check that 1 and 4 micro-batches give the same gradient with each option on, that a
one-step run trains with each, and that with every new key at its default the loss and the gradients are the
same bits as the code before these options (``_old_policy_loss``: that code, copied here).
"""

import math

import pytest
import torch

from tests.trainer.batching import alternating_advantages, budget_for, take_reference_and_move
from trainer.config import LossConfig, load_config
from trainer.errors import ConfigError
from trainer.learn.logprobs import token_logprobs
from trainer import Trainer
from trainer.learn.loss import (AGGREGATIONS, KL_ESTIMATORS, BatchCounts, LossSettings, _counted, batch_counts,
                          clipped_token_loss, echo_loss, kl_k3, observation_mask, policy_loss, rollout_correction,
                          token_mean)
from trainer.learn.update import accumulate_gradients, old_logprobs, pack_minibatch

L = math.log


def _old_policy_loss(logp, old_logp, advantages, loss_mask, settings, *, entropy=None, ref_logp=None, counts=None):
    """``trainer.learn.loss.policy_loss`` as it was before GSPO/CISPO/TIS/MIS/ECHO (commit 12c2f9a), verbatim."""
    mask = loss_mask.float()
    counts = _counted(mask, counts)

    def aggregate(values):
        return AGGREGATIONS[settings.aggregation](values, mask, settings.max_tokens, counts)

    per_token, clipped, dual = clipped_token_loss(logp - old_logp, advantages, settings)
    loss = aggregate(per_token)
    metrics = {"pg_loss": float(loss.detach()),
               "clip_fraction": float(token_mean(clipped.float(), mask, 0, counts)),
               "clip_fraction_dual": float(token_mean(dual.float(), mask, 0, counts)),
               "approx_kl_old": float(token_mean(kl_k3(logp.detach(), old_logp), mask, 0, counts))}
    if ref_logp is not None:
        kl = KL_ESTIMATORS[settings.kl_estimator](logp, ref_logp)
        kl_value = aggregate(kl)
        metrics["kl_ref"] = float(kl_value.detach())
        if settings.kl_coef:
            loss = loss + settings.kl_coef * kl_value
    if entropy is not None:
        entropy_value = aggregate(entropy)
        metrics["entropy"] = float(token_mean(entropy.detach(), mask, 0, counts))
        if settings.entropy_coef:
            loss = loss - settings.entropy_coef * entropy_value
    return loss, metrics


# --- pure functions, by hand ---------------------------------------------------------------------------------

def test_gspo_uses_the_length_normalised_sequence_ratio_and_its_own_clip():
    old = torch.zeros(2, 3)
    logp = torch.tensor([[0.2, 0.4, 9.0], [0.6, -0.4, 9.0]], requires_grad=True)  # column 2 is not sampled
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    adv = torch.tensor([[1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]])
    settings = LossSettings(policy_loss="gspo", gspo_clip_low=0.2, gspo_clip_high=0.25)
    loss, m = policy_loss(logp, old, adv, mask, settings)
    # row 0: log s = (0.2 + 0.4) / 2 = 0.3, s = e^0.3 = 1.349859 > 1.25 with A = +1: the clipped -1.25 is used
    #        (no gradient); row 1: log s = (0.6 - 0.4) / 2 = 0.1, s = e^0.1 = 1.105171, A = -1: 1.105171.
    # token_mean over 4 tokens: (2 · -1.25 + 2 · 1.105171) / 4 = -0.0724145
    assert float(loss.detach()) == pytest.approx((-2.5 + 2 * math.exp(0.1)) / 4, rel=1e-6)
    loss.backward()
    # d/dlogp_t of -A · s_it = -A · s (GSPO-token: value s_i, gradient s_i ∇log π_t), / 4 tokens
    expected = torch.tensor([[0.0, 0.0, 0.0], [math.exp(0.1) / 4, math.exp(0.1) / 4, 0.0]])
    assert torch.allclose(logp.grad, expected, atol=1e-7)
    assert m["clip_fraction"] == pytest.approx(0.5)  # row 0's two tokens
    # token-level PPO would differ: token (1, 0) has ratio e^0.6 = 1.822 and its own loss 1.822
    ppo, _ = policy_loss(logp, old, adv, mask, LossSettings(clip_low=0.2, clip_high=0.25))
    assert float(ppo.detach()) != pytest.approx(float(loss.detach()), rel=1e-3)


def test_gspo_gradient_is_the_sequence_objectives_on_random_rows():
    """One advantage per row and ``sequence_mean``: GSPO-token's gradient is that of the sequence objective
    ``mean_i max(-A_i s_i, -A_i clip(s_i))``, ``s_i = exp(mean_t log r_it)`` (the paper's Eq. 5 negated)."""
    gen = torch.Generator().manual_seed(3)
    log_ratio = torch.randn(5, 7, generator=gen) * 0.3
    mask = (torch.rand(5, 7, generator=gen) > 0.3).float()
    adv = torch.randn(5, 1, generator=gen).expand(5, 7)
    settings = LossSettings(policy_loss="gspo", aggregation="sequence_mean", gspo_clip_low=0.05, gspo_clip_high=0.06)
    a = log_ratio.clone().requires_grad_()
    policy_loss(a, torch.zeros(5, 7), adv, mask, settings)[0].backward()
    b = log_ratio.clone().requires_grad_()
    s = torch.exp((b * mask).sum(-1) / mask.sum(-1))
    A = adv[:, 0]
    torch.maximum(-A * s, -A * s.clamp(0.95, 1.06)).mean().backward()
    assert torch.allclose(a.grad, b.grad, atol=1e-6) and b.grad.abs().max() > 1e-3
    assert ((s < 0.95) | (s > 1.06)).any()  # the clip is live in this batch


def test_cispo_keeps_a_clipped_constant_weight_on_every_token():
    old = torch.tensor([[L(0.25), L(0.25), L(0.4)]])
    logp = torch.tensor([[L(0.5), L(0.25), L(0.8)]], requires_grad=True)  # r = [2, 1, 2]
    adv = torch.tensor([[1.0, -2.0, -1.0]])
    loss, m = policy_loss(logp, old, adv, torch.ones(1, 3), LossSettings(policy_loss="cispo"))
    # weights sg(clip(r, 0.8, 1.28)) = [1.28, 1, 1.28]; per token -w · A · log π:
    #   -1.28 · 1 · ln 0.5 = 0.887228;  -1 · -2 · ln 0.25 = -2.772589;  -1.28 · -1 · ln 0.8 = -0.285624
    # token_mean: (0.887228 - 2.772589 - 0.285624) / 3 = -0.723662
    expected = (-1.28 * L(0.5) + 2 * L(0.25) + 1.28 * L(0.8)) / 3
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-6)
    loss.backward()
    # gradient -w · A / 3 per token: token 0 keeps -1.28/3 where PPO's clip (r = 2 > 1.28, A > 0) gives 0
    assert torch.allclose(logp.grad, torch.tensor([[-1.28 / 3, 2 / 3, 1.28 / 3]]), atol=1e-6)
    assert m["clip_fraction"] == pytest.approx(2 / 3)  # tokens 0 and 2 had their weight clipped
    ppo_logp = logp.detach().clone().requires_grad_()
    policy_loss(ppo_logp, old, adv, torch.ones(1, 3), LossSettings())[0].backward()
    assert float(ppo_logp.grad[0, 0]) == 0.0


def test_cispo_dual_cap_lowers_the_weight_of_negative_advantages():
    settings = LossSettings(policy_loss="cispo", clip_high=4.0, clip_ratio_c=3.0)
    logp = torch.tensor([[L(0.5), L(0.5)]], requires_grad=True)
    old = torch.tensor([[L(0.1), L(0.1)]])  # r = 5: weight clip(5, 0.8, 5) = 5, dual cap 3 for A < 0
    loss, m = policy_loss(logp, old, torch.tensor([[1.0, -1.0]]), torch.ones(1, 2), settings)
    # (-5 · 1 · ln 0.5 - 3 · -1 · ln 0.5) / 2 = (3.465736 - 2.079442) / 2 = 0.693147
    assert float(loss.detach()) == pytest.approx((-5 * L(0.5) + 3 * L(0.5)) / 2, rel=1e-6)
    assert m["clip_fraction_dual"] == pytest.approx(0.5)


def test_rollout_correction_tis_and_mis_by_hand():
    old = torch.full((2, 4), L(0.5))
    sampling = torch.tensor([[L(0.25), L(0.5), L(2.0), 0.0], [L(0.25), L(0.25), L(0.01), 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])  # row 1's third token is not sampled
    # ρ = π_old / π_sampler: row 0 [2, 1, 0.25], row 1 [2, 2]; products: row 0 0.5, row 1 4. C = 1.5
    w, keep = rollout_correction(old, sampling, mask, "tis_token", 1.5)
    assert torch.allclose((w * mask), torch.tensor([[1.5, 1.0, 0.25, 0], [1.5, 1.5, 0, 0]])) and keep is mask
    w, _ = rollout_correction(old, sampling, mask, "tis_sequence", 1.5)
    assert torch.allclose(w, torch.tensor([[0.5] * 4, [1.5] * 4]))  # min(0.5, 1.5), min(4, 1.5)
    _, keep = rollout_correction(old, sampling, mask, "mis_token", 1.5)  # keep ρ in [2/3, 1.5]: only ρ = 1
    assert torch.equal(keep, torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    _, keep = rollout_correction(old, sampling, mask, "mis_sequence", 2.5)  # [0.4, 2.5]: row 0 (0.5) stays
    assert torch.equal(keep, torch.tensor([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    assert rollout_correction(old, sampling, mask, "none", 1.5) == (None, mask)


def test_tis_weights_multiply_the_policy_term_and_mis_leaves_the_normaliser():
    logp = torch.zeros(1, 3, requires_grad=True)
    adv = torch.ones(1, 3)
    w = torch.tensor([[1.5, 1.0, 0.25]])
    loss, _ = policy_loss(logp, torch.zeros(1, 3), adv, torch.ones(1, 3), LossSettings(), is_weights=w)
    # ratio 1, A = 1: per token -1 · w; token_mean -(1.5 + 1 + 0.25) / 3 = -0.916667
    assert float(loss.detach()) == pytest.approx(-2.75 / 3)
    loss.backward()
    assert torch.allclose(logp.grad, -w / 3)
    masked, _ = policy_loss(torch.zeros(1, 3), torch.zeros(1, 3), adv, torch.tensor([[0.0, 1.0, 0.0]]), LossSettings())
    assert float(masked) == -1.0  # one kept token, divided by one (not three)


def test_observation_mask_and_echo_loss_by_hand():
    loss_mask = torch.tensor([[0, 0, 1, 1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0, 0]])
    attention = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1, 1, 1]])
    observed = observation_mask(loss_mask, attention)
    # row 0: the prompt (0, 1) and padding (8) are out; after the first reply, 4, 5 (observation) and 7
    # (after the last reply: end-of-turn marker / last observation) are in; row 1: everything after id 1
    assert observed[0].nonzero().flatten().tolist() == [4, 5, 7]
    assert observed[1].nonzero().flatten().tolist() == [2, 3, 4, 5, 6, 7, 8]
    obs_logp = torch.zeros(2, 9)
    obs_logp[0, [4, 5, 7]] = torch.tensor([-1.0, -2.0, -3.0])
    obs_logp[1, 2:] = -0.5
    counts = batch_counts([loss_mask], observation_masks=[observed], reduce=lambda t: t)
    assert counts.observations == 10
    # (1 + 2 + 3 + 7 · 0.5) / 10 = 0.95; as micro-batch shares (one row each) they add up to the same
    assert float(echo_loss(obs_logp, observed.float(), counts)) == pytest.approx(0.95)
    shares = [float(echo_loss(obs_logp[i:i + 1], observed[i:i + 1].float(), counts)) for i in range(2)]
    assert shares == pytest.approx([0.6, 0.35]) and sum(shares) == pytest.approx(0.95)
    # two ranks holding this same batch (global_sum doubles every count): each rank's loss is half the mean
    two = batch_counts([loss_mask], observation_masks=[observed], reduce=lambda t: 2 * t)
    assert two.observations == 20 and float(echo_loss(obs_logp, observed.float(), two)) == pytest.approx(0.475)
    logp = torch.zeros(2, 9, requires_grad=True)
    loss, m = policy_loss(logp, torch.zeros(2, 9), torch.zeros(2, 9), loss_mask, LossSettings(echo_coef=0.5),
                          observation_logp=obs_logp, observed=observed)
    assert m["echo_loss"] == pytest.approx(0.95) and float(loss.detach()) == pytest.approx(0.5 * 0.95)


def test_defaults_give_the_old_loss_and_gradient_bit_for_bit():
    gen = torch.Generator().manual_seed(11)
    log_ratio = torch.randn(4, 16, generator=gen) * 2
    old = torch.randn(4, 16, generator=gen) - 2
    ref = old + torch.randn(4, 16, generator=gen) * 0.1
    ent = torch.rand(4, 16, generator=gen)
    adv = torch.randn(4, 16, generator=gen)
    mask = (torch.rand(4, 16, generator=gen) > 0.25).float()
    counts = BatchCounts(tokens=float(mask.sum()) + 5, rows=6.0)  # a micro-batch's share of a larger batch
    for aggregation in AGGREGATIONS:
        settings = LossSettings(aggregation=aggregation, kl_coef=0.05, entropy_coef=0.01, max_tokens=16)
        for share in (None, counts):
            outs = []
            for fn in (policy_loss, _old_policy_loss):
                logp, e = (old + log_ratio).requires_grad_(), ent.clone().requires_grad_()
                loss, m = fn(logp, old, adv, mask, settings, entropy=e, ref_logp=ref, counts=share)
                loss.backward()
                outs.append((loss.detach(), logp.grad, e.grad, m))
            (l1, g1, e1, m1), (l0, g0, e0, m0) = outs
            assert torch.equal(l1, l0) and torch.equal(g1, g0) and torch.equal(e1, e0) and m1 == m0


def test_config_checks_the_new_keys():
    assert LossConfig().policy_loss == "ppo" and LossConfig().rollout_correction == "none"
    for bad in ({"policy_loss": "grpo"}, {"rollout_correction": "tis"}, {"rollout_correction_cap": 1.0},
                {"echo_coef": -0.1}, {"gspo_clip_low": 1.0}):
        with pytest.raises(ConfigError):
            LossConfig(**bad)


# --- the trainer ---------------------------------------------------------------------------------------------

RUN = ["env.max_turns=3", "rollout.tasks_per_step=3", "rollout.group_size=2", "rollout.max_new_tokens=6",
       "algorithm.filter_zero_variance=false", "loss.kl_coef=0.05", "loss.entropy_coef=0.01",
       "optim.shared_prefix=false"]  # budget 0 is one forward; the test below turns sharing on where it compares
OPTIONS = {
    "gspo": {"policy_loss": "gspo", "gspo_clip_low": 0.01, "gspo_clip_high": 0.01},
    "cispo": {"policy_loss": "cispo", "clip_low": 0.05, "clip_high": 0.05},
    "tis_token": {"rollout_correction": "tis_token", "rollout_correction_cap": 1.02},
    "tis_sequence": {"rollout_correction": "tis_sequence", "rollout_correction_cap": 1.2},
    "mis_token": {"rollout_correction": "mis_token", "rollout_correction_cap": 1.02},
    "mis_sequence": {"rollout_correction": "mis_sequence", "rollout_correction_cap": 1.2},
    "echo": {"echo_coef": 0.5},
}


@pytest.fixture(scope="module")
def batch(tiny_overrides, tmp_path_factory):
    """A trainer with one collected batch, its advantages, a reference model, and weights perturbed after
    sampling so ratios (and the trainer-vs-sampler ρ) differ from 1."""
    trainer = Trainer(load_config(None, tiny_overrides + RUN + [f"out_dir={tmp_path_factory.mktemp('more')}"]))
    trajectories, _ = trainer.collect()
    kept, _, _ = trainer.advantages(trajectories)
    for r, segment in enumerate(s for t in kept for s in t.segments):  # rows of different token counts
        sampled = [i for i, m in enumerate(segment.loss_mask) if m]
        for i in sampled[len(sampled) - (5 * r) % 11:]:
            segment.loss_mask[i] = 0
    advantages = alternating_advantages(kept)
    take_reference_and_move(trainer)
    yield trainer, kept, advantages
    trainer.close()


def _set(trainer, option):
    defaults = LossConfig()
    for key in ("policy_loss", "gspo_clip_low", "gspo_clip_high", "rollout_correction", "rollout_correction_cap",
                "echo_coef", "clip_low", "clip_high"):
        setattr(trainer.config.loss, key, OPTIONS.get(option, {}).get(key, getattr(defaults, key)))


def _gradients(trainer, kept, advantages, budget):
    trainer.config.optim.micro_batch_tokens = budget
    old = None if trainer.config.loss.rollout_correction == "none" else old_logprobs(trainer, kept)[0]
    micro = pack_minibatch(trainer, kept, advantages, None, list(range(len(kept))), old=old)
    trainer.optimizer.zero_grad(set_to_none=True)
    metrics = accumulate_gradients(trainer, micro)
    return len(micro), metrics, {n: p.grad.detach().clone() for n, p in trainer.model.named_parameters()
                                 if p.grad is not None}


@pytest.mark.parametrize("option", list(OPTIONS))
def test_four_micro_batches_and_shared_prefixes_give_the_one_forward_gradient(batch, option):
    trainer, kept, advantages = batch
    _set(trainer, option)
    try:
        n1, m1, g1 = _gradients(trainer, kept, advantages, 0)
        n4, m4, g4 = _gradients(trainer, kept, advantages, budget_for(kept, 4))
        trainer.config.optim.shared_prefix = True  # one forward per group, its first prompt run once
        ns, ms, gs = _gradients(trainer, kept, advantages, 0)
        trainer.config.optim.shared_prefix = False
        _set(trainer, "default")
        _, m0, g0 = _gradients(trainer, kept, advantages, 0)
    finally:
        _set(trainer, "default")
        trainer.config.optim.shared_prefix = False
    assert (n1, n4, ns) == (1, 4, 3)
    assert max(float((g1[n] - g4[n]).abs().max()) for n in g1) <= 1e-5
    assert max(float((g1[n] - gs[n]).abs().max()) for n in g1) <= 1e-5
    assert max(float((g1[n] - g0[n]).abs().max()) for n in g1) > 1e-4  # the option changed the gradient
    for key in ("loss", "pg_loss", "clip_fraction", "kl_ref", "entropy", "train_tokens", "echo_loss"):
        if key in m1:
            assert m4[key] == pytest.approx(m1[key], rel=1e-5, abs=1e-6), key
            assert ms[key] == pytest.approx(m1[key], rel=1e-5, abs=1e-6), key
    if option == "echo":
        assert m1["echo_loss"] > 0 and m1["loss"] == pytest.approx(m0["loss"] + 0.5 * m1["echo_loss"], rel=1e-5)
    if option.startswith("mis"):
        assert 0 < m1["train_tokens"] < m0["train_tokens"]  # some, not all, tokens were rejected
    if option in ("gspo", "cispo"):
        assert m1["clip_fraction"] > 0


def test_echo_scores_observation_tokens_like_the_full_logits(batch):
    trainer, kept, _ = batch
    micro = pack_minibatch(trainer, kept[:2], [[0.0] * t.num_turns for t in kept[:2]], None, [0, 1])
    observed = observation_mask(micro[0].loss_mask, micro[0].attention_mask)
    with torch.no_grad():
        *_, obs_logp = token_logprobs(trainer.model, micro[0], temperature=0.7, observed=observed)
        logits = trainer.model(input_ids=micro[0].input_ids, attention_mask=micro[0].attention_mask).logits
    full = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, micro[0].input_ids[:, 1:, None])[..., 0]
    b, t = observed.nonzero(as_tuple=True)
    assert len(b) > 10 and torch.allclose(obs_logp[b, t], full[b, t - 1], atol=1e-5)  # temperature 1, not 0.7
    assert float((obs_logp * ~observed).abs().max()) == 0.0


def test_defaults_give_the_old_trainer_gradient_bit_for_bit(batch):
    trainer, kept, advantages = batch
    _set(trainer, "default")
    _, _, new = _gradients(trainer, kept, advantages, budget_for(kept, 2))
    micro = pack_minibatch(trainer, kept, advantages, None, list(range(len(kept))))
    counts = batch_counts([b.loss_mask for b in micro])
    trainer.optimizer.zero_grad(set_to_none=True)
    from trainer.learn.update import loss_settings
    for b in micro:  # the old micro_batch_loss: sampler log-probs as π_old, no extra terms
        logp, entropy = token_logprobs(trainer.model, b, temperature=trainer.config.rollout.temperature or 1.0)
        with torch.no_grad():
            ref, _ = token_logprobs(trainer.ref_model, b, temperature=trainer.config.rollout.temperature or 1.0)
        _old_policy_loss(logp, b.sampling_logprobs, b.advantages, b.loss_mask, loss_settings(trainer.config),
                         entropy=entropy, ref_logp=ref, counts=counts)[0].backward()
    old = {n: p.grad for n, p in trainer.model.named_parameters() if p.grad is not None}
    assert old.keys() == new.keys() and all(torch.equal(old[n], new[n]) for n in old)


STEP = ["env.env_id=agentgym/Maze-Easy-v0", "env.max_turns=3", "rollout.tasks_per_step=2", "rollout.group_size=2",
        "rollout.max_new_tokens=6", "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01",
        "bc.episodes=0", "eval.num_tasks=1", "steps=1"]


@pytest.mark.parametrize("option", list(OPTIONS))
def test_one_trainer_step_with_each_option(tiny_overrides, tmp_path, option):
    """A full ``train_step`` with the option on, then an update of 2 minibatches × 2 epochs with crafted
    advantages (the tiny model's Maze episodes all fail alike, so their own advantages are 0)."""
    overrides = [f"loss.{k}={v}" for k, v in OPTIONS[option].items()]
    if option.startswith(("tis", "mis")):
        overrides = [f"loss.rollout_correction={OPTIONS[option]['rollout_correction']}"]  # the default cap, 2
    if option == "gspo":
        overrides = ["loss.policy_loss=gspo"]  # the paper's 3e-4 / 4e-4
    trainer = Trainer(load_config(None, tiny_overrides + STEP + overrides + [f"out_dir={tmp_path}"]))
    try:
        before = [p.detach().clone() for p in trainer.model.parameters()]
        metrics = trainer.train_step()
        assert metrics["updated"] == 1.0 and math.isfinite(metrics["loss"])
        assert any(not torch.equal(a, p) for a, p in zip(before, trainer.model.parameters()))
        trainer.config.optim.minibatches, trainer.config.optim.epochs = 2, 2
        kept, _, _ = trainer.advantages(trainer.collect()[0])
        advantages = [[(-1.0) ** k] * t.num_turns for k, t in enumerate(kept)]
        crafted = trainer.update(kept, advantages)
    finally:
        trainer.close()
    assert crafted["gradient_steps"] == 4 and math.isfinite(crafted["loss"])
    if option == "echo":
        assert metrics["echo_loss"] > 0 and crafted["echo_loss"] > 0
    if option == "gspo":  # after one Adam step the sequence ratios leave GSPO's [1 - 3e-4, 1 + 4e-4]
        assert crafted["clip_fraction"] == 0 and crafted["clip_fraction_last"] > 0
    if option == "cispo":  # first step, ratio 1: pg_loss = token_mean(-A · log π) over minibatch 0 (kept[0::2])
        rows = [(s, advantages[k][0]) for k in range(0, len(kept), 2) for s in kept[k].segments]
        tokens = sum(sum(s.loss_mask) for s, _ in rows)
        expected = sum(-a * lp for s, a in rows for lp, m in zip(s.sampling_logprobs, s.loss_mask) if m) / tokens
        assert crafted["pg_loss"] == pytest.approx(expected, rel=1e-4) and abs(expected) > 0.1
    if option.startswith(("tis", "mis")):  # HF backend, same weights: the trainer's π_old is the sampler's
        for m in (metrics, crafted):
            assert m["rollout_gap_old_mean"] < 1e-4 and m["rollout_kept_fraction"] == 1.0
            assert m["rollout_is_weight_mean"] == pytest.approx(1.0, abs=1e-3)
            assert m["approx_kl_old"] < 1e-8  # the ratio to the recomputed π_old is 1 at the first step
