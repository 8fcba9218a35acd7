"""Asynchronous collection: the staleness bound under random timings, version tags, S = 0 equivalence, resume."""

import threading

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_envs.policies import SamplingConfig
from trainer.collect.asynchronous import VersionedPolicy, WeightBoard
from trainer.run.checkpoint import latest_checkpoint, load_checkpoint
from trainer.config import load_config
from trainer.errors import ConfigError
from trainer.run.log import read_jsonl
from trainer import Trainer, fit
from trainer.seeding import TaskSampler
from trainer.collect.staleness import StalenessController, Unit, correction_of, unit_version
from trainer.collect.trajectory import TrajectoryBuilder
from trainer.learn.update import accumulate_gradients, old_logprobs, pack_minibatch

RUN = ["rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=6", "env.max_turns=3",
       "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01", "optim.lr=0.001", "checkpoint_every=1"]
ASYNC = ["asynchronous.enabled=true"]


# ------------------------------------------------------------------ the admission rule, driven directly
events = st.lists(st.tuples(st.sampled_from(["start", "finish", "update"]), st.integers(0, 10**6), st.integers(0, 10**6)),
                  max_size=120)


@settings(max_examples=300, deadline=None)
@given(batch=st.integers(1, 4), staleness=st.integers(0, 3), unit_of=st.integers(1, 4), resumed=st.integers(0, 5),
       script=events)
def test_no_trained_group_is_ever_more_than_s_versions_old(batch, staleness, unit_of, resumed, script):
    """Random interleavings of collection starts, out-of-order finishes (a unit's oldest token anywhere
    between its start version and now: episodes straddling versions) and updates, from a fresh run or one
    resumed at version ``resumed``."""
    size = min(unit_of, batch)
    c, version, in_flight, started, index = StalenessController(batch, staleness), resumed, [], 0, 0
    c.resume_at(resumed)
    trained = resumed * batch
    for kind, pick, delay in script:
        if kind == "start" and c.try_start(size, version):
            in_flight.append((index, version))
            index, started = index + 1, started + size
        elif kind == "finish" and in_flight:
            u, began = in_flight.pop(pick % len(in_flight))
            c.finish(Unit(u, began + delay % (version - began + 1), size), version)
        elif kind == "update":
            unit = c.take(version)
            if unit is not None:
                assert 0 <= version - unit.version <= staleness
                trained, version = trained + size, version + 1
        assert c.in_flight + c.accepted <= c.capacity(version)
        assert c.in_flight == size * len(in_flight)
        assert started + resumed * batch == c.in_flight + c.accepted + c.dropped  # nothing lost, or else counted
        assert c.accepted == trained + sum(u.size for u in c.buffer)


@settings(max_examples=200, deadline=None)
@given(batch=st.integers(1, 4), staleness=st.integers(0, 3), script=events)
def test_in_order_collection_never_drops(batch, staleness, script):
    """The capacity rule's point: collections that finish in start order, trained oldest first, are never
    too stale, however the trainer's updates interleave with them."""
    c, version, in_flight, index = StalenessController(batch, staleness), 0, [], 0
    for kind, _, _ in script:
        if kind == "start" and c.try_start(batch, version):
            in_flight.append((index, version))
            index += 1
        elif kind == "finish" and in_flight:
            u, began = in_flight.pop(0)
            c.finish(Unit(u, began, batch), version)
        elif kind == "update" and c.take(version) is not None:
            version += 1
    assert c.dropped == 0


def test_a_unit_is_as_old_as_its_oldest_sampled_token():
    class T:  # a trajectory's token fields
        def __init__(self, versions, mask):
            self.token_versions, self.loss_mask = versions, mask
            self.segments = [self]

    assert unit_version([T([-1, 3, 3, -1, 4], [0, 1, 1, 0, 1]), T([-1, 5], [0, 1])], default=9) == 3
    assert unit_version([T([], [0, 0])], default=9) == 9


# ------------------------------------------------------------------ version tags
def test_each_sampled_token_carries_the_version_that_sampled_it(tiny_model_and_tokenizer):
    import copy

    from trainer.models.backends.hf import HFPolicy
    from trainer.learn.logprobs import pack, token_logprobs

    model, tokenizer = copy.deepcopy(tiny_model_and_tokenizer[0]), tiny_model_and_tokenizer[1]
    board = WeightBoard(model, version=0)
    policy = VersionedPolicy(board, lambda m: HFPolicy(m, tokenizer), threading.Event())
    chat = [{"role": "user", "content": "go north"}]
    builder = TrajectoryBuilder(policy, chat)
    sampling = SamplingConfig(max_new_tokens=5, seed=0)
    first = policy.generate([builder.ids], sampling=sampling)[0]
    builder.add_reply(first, state_key="")
    builder.add_observation(chat + [{"role": "assistant", "content": first.text}, {"role": "user", "content": "a wall"}])
    with torch.no_grad():  # an update lands between the turns: the second reply is sampled by version 1
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    board.publish(model, version=1)
    second = policy.generate([builder.ids], sampling=sampling)[0]
    builder.add_reply(second, state_key="")
    t = builder.trajectory
    assert len(t.token_versions) == len(t.token_ids)
    assert [v for v, turn in zip(t.token_versions, t.token_turns) if turn == 0] == [0] * first.num_tokens
    assert [v for v, turn in zip(t.token_versions, t.token_turns) if turn == 1] == [1] * second.num_tokens
    assert all(v == -1 for v, m in zip(t.token_versions, t.loss_mask) if not m)
    assert unit_version([t], default=7) == 0  # the group rule: as old as its oldest token
    # the behaviour log-probs are version 1's own (π_behav), not the first weights'
    logp, _ = token_logprobs(model, pack([t], tokenizer.pad_token_id or tokenizer.eos_token_id))
    turn1 = [i for i, turn in enumerate(t.token_turns) if turn == 1]
    gap = max(abs(float(logp[0, i].detach()) - t.sampling_logprobs[i]) for i in turn1)
    assert gap < 1e-4


def test_async_batches_hold_tokens_at_most_s_versions_old(tmp_path, tiny_overrides):
    trainer = Trainer(load_config(None, tiny_overrides + RUN + ASYNC + [
        "asynchronous.max_staleness=1", "env.step_latency_s=0.05", "steps=4", f"out_dir={tmp_path}"]))
    seen = _capture_batches(trainer)
    records = fit(trainer, echo=None)
    trainer.close()
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    for step, batch in enumerate(seen):
        versions = [v for t in batch for s in t.segments for v, m in zip(s.token_versions, s.loss_mask) if m]
        assert versions and all(step - 1 <= v <= step for v in versions)
        assert all(len(s.token_versions) == len(s.token_ids) for t in batch for s in t.segments)
    assert all(r["async_staleness_max"] <= 1 for r in records)
    assert any(r["async_staleness_max"] == 1 for r in records)  # it did overlap: a batch sampled before an update
    assert all("rollout_is_weight_mean" in r for r in records)  # S > 0: the decoupled objective ran


# ------------------------------------------------------------------ S = 0: today's loss
def test_s0_is_the_synchronous_run_bit_for_bit(tmp_path, tiny_overrides):
    runs = {}
    for name, extra in {"sync": [], "async": ASYNC + ["asynchronous.max_staleness=0"]}.items():
        trainer = Trainer(load_config(None, tiny_overrides + RUN + extra + ["steps=2", f"out_dir={tmp_path / name}"]))
        records = fit(trainer, echo=None)
        runs[name] = records, {k: v.clone() for k, v in trainer.model.state_dict().items()}
        trainer.close()
    (sync, ws), (asyn, wa) = runs["sync"], runs["async"]
    assert [r["loss"] for r in sync] == [r["loss"] for r in asyn] and sync[0]["loss"] != 0.0
    assert [r["grad_norm"] for r in sync] == [r["grad_norm"] for r in asyn]
    assert all(torch.equal(ws[k], wa[k]) for k in ws)
    assert all(r["async_staleness_max"] == 0 and r["async_dropped_groups"] == 0 for r in asyn)


@pytest.fixture
def fresh_batch(tmp_path, tiny_overrides):
    trainer = Trainer(load_config(None, tiny_overrides + RUN + ["steps=1", f"out_dir={tmp_path}"]))
    kept, _, _ = trainer.advantages(trainer.collect()[0])
    advantages = [[(-1.0) ** k * (1.0 + 0.5 * turn) for turn in range(t.num_turns)] for k, t in enumerate(kept)]
    yield trainer, kept, advantages
    trainer.close()


def _loss_and_gradients(trainer, kept, advantages):
    mode = correction_of(trainer.config)[0]
    old = None if mode == "none" else old_logprobs(trainer, kept)[0]
    micro = pack_minibatch(trainer, kept, advantages, None, list(range(len(kept))), old=old)
    trainer.optimizer.zero_grad(set_to_none=True)
    metrics = accumulate_gradients(trainer, micro)
    return metrics["loss"], {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("weight", ["tis_token", "tis_sequence", "mis_token", "mis_sequence"])
def test_decoupled_objective_on_current_version_tokens_is_todays_loss(fresh_batch, weight):
    """π_prox = π_behav (tokens of the current version): the ratio is today's and the behaviour weight 1,
    up to the ~1e-7 per-token gap between the sampler's and the trainer's log-probs of the same weights
    (a sequence-level weight multiplies a row's gaps)."""
    trainer, kept, advantages = fresh_batch
    loss0, grads0 = _loss_and_gradients(trainer, kept, advantages)
    a = trainer.config.asynchronous
    a.enabled, a.max_staleness, a.behaviour_weight = True, 2, weight
    assert correction_of(trainer.config)[0] == weight
    loss1, grads1 = _loss_and_gradients(trainer, kept, advantages)
    assert loss0 != 0.0 and abs(loss1 - loss0) <= 1e-5
    assert max(float((grads0[n] - grads1[n]).abs().max()) for n in grads0) <= 1e-5
    a.max_staleness = 0  # S = 0: no recomputation at all, the loss is today's bit for bit
    assert correction_of(trainer.config)[0] == "none"
    loss2, grads2 = _loss_and_gradients(trainer, kept, advantages)
    assert loss2 == loss0 and all(torch.equal(grads0[n], grads2[n]) for n in grads0)


def test_stale_tokens_are_reweighted(fresh_batch):
    """Tokens sampled by older weights: the behaviour weight π_prox/π_behav is no longer 1."""
    trainer, kept, advantages = fresh_batch
    a = trainer.config.asynchronous
    a.enabled, a.max_staleness = True, 1
    with torch.no_grad():  # the trainer moved on since these were sampled
        for p in trainer.model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(2)))
    _, metrics = old_logprobs(trainer, kept)
    assert metrics["rollout_gap_old_mean"] > 1e-3 and metrics["rollout_is_weight_mean"] != pytest.approx(1.0, abs=1e-4)


# ------------------------------------------------------------------ kill + resume
def test_killed_async_run_resumes_from_its_oldest_untrained_unit(tmp_path, tiny_overrides):
    # one collector, so units finish in the order they were claimed: with several, a later unit that finishes
    # first is trained first (by design), and which batch comes first after the resume is a race
    config = tiny_overrides + RUN + ASYNC + ["asynchronous.max_staleness=1", "asynchronous.collectors=1", "steps=4",
                                             f"out_dir={tmp_path}"]
    first = Trainer(load_config(None, config))
    fit(first, stop_after=2, echo=None)  # "killed" after the step-2 checkpoint; its buffered units are lost
    first.close()
    unit = load_checkpoint(latest_checkpoint(tmp_path))["asynchronous"]["next_unit"]
    assert unit >= 2  # units 0 and 1 were trained; the checkpoint names the oldest untrained one
    resumed = Trainer(load_config(None, config))
    seen = _capture_batches(resumed)
    after = fit(resumed, echo=None)
    resumed.close()
    assert [r["step"] for r in after] == [3, 4] and all(0 <= r["async_staleness_max"] <= 1 for r in after)
    assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == [1, 2, 3, 4]
    # the first batch after the resume is that unit's: the tasks of its draw, none skipped or repeated
    draws = TaskSampler(resumed.sampler.num_tasks, resumed.config.seed)
    expected = [draws.next(2) for _ in range(unit + 1)][-1]
    assert sorted({t.task_index for t in seen[0]}) == sorted(set(expected))
    versions = {v for batch in seen for t in batch for s in t.segments for v, m in zip(s.token_versions, s.loss_mask) if m}
    assert min(versions) >= 2  # everything trained after the resume was sampled by the resumed weights


def test_sigkilled_async_run_resumes_from_its_last_checkpoint(tmp_path, tiny_overrides):
    """A real kill: ``agentgym train`` with async collection in a child process, SIGKILLed mid-run while its
    collectors are sampling; the resumed run goes on from the last checkpoint, every step logged once."""
    import os
    import signal
    import subprocess
    import sys
    import time

    run = tiny_overrides + RUN + ASYNC + ["asynchronous.max_staleness=1", "env.step_latency_s=0.05",
                                          f"out_dir={tmp_path}"]
    child = subprocess.Popen([sys.executable, "-m", "agentgym_envs.cli.main", "train", "-", *run, "steps=1000"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while latest_checkpoint(tmp_path) is None or load_checkpoint(latest_checkpoint(tmp_path))["step"] < 2:
            assert child.poll() is None and time.monotonic() < deadline, "the child ended before its step-2 checkpoint"
            time.sleep(0.2)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    killed_at = load_checkpoint(latest_checkpoint(tmp_path))["step"]
    resumed = Trainer(load_config(None, run + [f"steps={killed_at + 2}"]))
    seen = _capture_batches(resumed)
    after = fit(resumed, echo=None)
    resumed.close()
    assert [r["step"] for r in after] == [killed_at + 1, killed_at + 2]
    assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == list(range(1, killed_at + 3))
    assert min(v for batch in seen for t in batch for s in t.segments
               for v, m in zip(s.token_versions, s.loss_mask) if m) >= killed_at


def test_unsupported_settings_are_refused(tmp_path, tiny_overrides):
    with pytest.raises(ConfigError, match="tigpo"):
        Trainer(load_config(None, tiny_overrides + RUN + ASYNC + ["algorithm.estimator=tigpo", f"out_dir={tmp_path}"]))
    with pytest.raises(ConfigError, match="rollout.source=envs"):
        Trainer(load_config(None, tiny_overrides + RUN + ASYNC + ["rollout.source=gateway", f"out_dir={tmp_path}"]))
    with pytest.raises(ConfigError, match="max_staleness"):
        load_config(None, ["asynchronous.max_staleness=-1"])


def _capture_batches(trainer):
    """Record the trajectories of every batch the trainer computes advantages on."""
    seen, advantages = [], trainer.advantages

    def spy(trajectories):
        seen.append(trajectories)
        return advantages(trajectories)

    trainer.advantages = spy
    return seen


def test_step_latency_key_wraps_the_envs_and_rejects_bad_values(tmp_path, tiny_overrides):
    from agentgym_envs.core.errors import AgentGymError
    from agentgym_envs.core.latency import StepLatency

    trainer = Trainer(load_config(None, tiny_overrides + RUN + ["env.step_latency_s=0.25", f"out_dir={tmp_path}"]))
    env = trainer.train_spec.make()
    try:
        assert isinstance(env, StepLatency) and env.seconds == 0.25
    finally:
        env.close()
        trainer.close()
    for bad in (-1, float("nan"), "1", True):
        with pytest.raises(AgentGymError, match="step latency"):
            StepLatency(env, bad)
    with pytest.raises(ConfigError, match="step_latency_s"):
        load_config(None, ["env.step_latency_s=-0.5"])
