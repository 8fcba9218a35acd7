"""Headroom-Drift replay: headroom and drift by hand, the selection on a crafted buffer, the checkpoint round
trip (weights_only), and a short run that mixes a stored group into the fresh batch."""

from __future__ import annotations

import io

import pytest
import torch

from trainer.learn.algorithms.replay import HeadroomDriftReplay, current_logprobs, drift, headroom
from trainer.run.checkpoint import latest_checkpoint, load_checkpoint
from trainer.config import load_config
from trainer.errors import ConfigError
from trainer import Trainer, fit
from trainer.collect.trajectory import Trajectory


def member(ret: float, task: int) -> Trajectory:
    """One single-turn trajectory: a 1-id prompt, then 2 sampled ids at log-prob -1 each."""
    return Trajectory([1, 2, 3], [0, 1, 1], [0.0, -1.0, -1.0], [-1, 0, 0], 1, rewards=[ret], won=ret > 0,
                      finish="terminated", task_index=task, group=task)


def group(returns: list[float], task: int) -> list[Trajectory]:
    return [member(r, task) for r in returns]


DRIFT = {1: 0.5, 2: 0.1, 3: 0.2}  # the current policy's mean |log-ratio| on each crafted group


def scorer(segments):
    """Current log-probs that differ from the stored ones by ±DRIFT[task] on each sampled id."""
    out = []
    for s in segments:
        d = DRIFT[s.task_index]
        out.append([0.0, -1.0 + d, -1.0 - d])
    return out


def test_headroom_and_drift_by_hand():
    # Var([1,0,0,0]) = 1/4 - 1/16 = 0.1875; p = 1/4 -> 0.1875 * 0.75 = 0.140625; replayed once: / 2
    assert headroom([1, 0, 0, 0], [True, False, False, False]) == pytest.approx(0.140625)
    assert headroom([1, 0, 0, 0], [True, False, False, False], uses=1) == pytest.approx(0.0703125)
    assert headroom([1, 1, 1, 1], [True] * 4) == 0.0  # solved, no variance: nothing left to learn
    # |−1.2 − (−1)| + |−0.7 − (−1)| over 2 sampled ids (the prompt id is not counted) = (0.2 + 0.3) / 2
    assert drift([member(1.0, 1)], [[5.0, -1.2, -0.7]]) == pytest.approx(0.25)


def test_selection_on_a_crafted_buffer_matches_the_hand_ranking():
    buffer = HeadroomDriftReplay(capacity=3, groups_per_step=2, max_drift=0.3)
    g1, g2, g3 = group([1, 0, 0, 0], 1), group([1, 1, 0, 0], 2), group([1, 1, 1, 0], 3)
    buffer.add([g1, g2], step=0)
    buffer.add([g3], step=1)
    # headroom: g1 0.1875*0.75 = 0.140625 > g2 0.25*0.5 = 0.125 > g3 0.1875*0.25 = 0.046875
    assert [g.trajectories[0].task_index for g in buffer.ranked()] == [1, 2, 3]
    # g1 is scored first but drifts 0.5 > 0.3: evicted; g2 (0.1) and g3 (0.2) pass the gate
    chosen = buffer.select(scorer)
    assert [g[0].task_index for g in chosen] == [2, 3]
    assert buffer.last == pytest.approx({"replay_groups": 2.0, "replay_evicted": 1.0,
                                         "replay_drift_mean": (0.5 + 0.1 + 0.2) / 3, "replay_buffer": 2.0})
    # after one use: g2 0.125/2 = 0.0625, g3 0.046875/2 = 0.0234; a new group with headroom 0.125 goes first
    buffer.add([group([1, 1, 0, 0], 2)], step=2)
    assert [(g.trajectories[0].task_index, g.uses) for g in buffer.ranked()] == [(2, 0), (2, 1), (3, 1)]
    buffer.add([group([1, 0], 2)], step=3)  # capacity 3: the oldest stored group (g2) goes
    assert [g.step for g in buffer.groups] == [1, 2, 3]


def test_buffer_round_trips_through_weights_only_including_folded_segments():
    buffer = HeadroomDriftReplay(capacity=4, groups_per_step=1, max_drift=0.3)
    folded = member(1.0, 2)
    folded.earlier = [Trajectory([7, 8], [0, 1], [0.0, -0.5], [-1, 0], 1)]
    buffer.add([[folded, member(0.0, 2)]], step=5)
    raw = io.BytesIO()
    torch.save(buffer.state_dict(), raw)
    raw.seek(0)
    loaded = HeadroomDriftReplay(capacity=4, groups_per_step=1, max_drift=0.3)
    loaded.load_state_dict(torch.load(raw, weights_only=True))
    assert loaded.groups[0].trajectories == buffer.groups[0].trajectories and loaded.groups[0].step == 5
    assert loaded.groups[0].trajectories[0].segments[0].token_ids == [7, 8]


def test_replay_config_is_validated():
    with pytest.raises(ConfigError, match="replay_groups must be in"):
        load_config(None, ["algorithm.replay_groups=9", "algorithm.replay_buffer_groups=4"])
    with pytest.raises(ConfigError, match="replay_max_drift must be > 0"):
        load_config(None, ["algorithm.replay_max_drift=0"])


RUN = ["env.env_id=agentgym/Maze-Easy-v0", "rollout.tasks_per_step=2", "rollout.group_size=2", "env.max_turns=3",
       "rollout.max_new_tokens=8", "rollout.max_context_tokens=768", "algorithm.filter_zero_variance=false",
       "loss.entropy_coef=0.01", "algorithm.replay_groups=1", "algorithm.replay_max_drift=5.0", "steps=2"]


def test_a_short_run_mixes_a_stored_group_into_the_fresh_batch(tiny_overrides, tmp_path):
    trainer = Trainer(load_config(None, tiny_overrides + RUN + [f"out_dir={tmp_path}", "checkpoint_every=1"]))
    try:
        trajectories, _ = trainer.collect()
        segments = [s for t in trajectories for s in t.segments]
        assert drift(segments, current_logprobs(trainer, segments)) < 1e-4  # on-policy: sampler == trainer
        trainer.step = 0
        records = fit(trainer, echo=None)
        assert records[0]["replay_groups"] == 0.0 and records[1]["replay_groups"] == 1.0
        assert records[1]["groups_kept"] == 2  # the fresh stream is unchanged; the replayed group comes on top
        assert 0 < records[1]["replay_drift_mean"] <= 5.0
        state = load_checkpoint(latest_checkpoint(tmp_path))  # weights_only load of the stored groups
        assert len(state["algorithm"]["replay"]["groups"]) == 4  # steps 1 and 2: two fresh groups each
    finally:
        trainer.close()


def test_tigpo_with_replay_resumes_exactly(tiny_overrides, tmp_path):
    """The memory and the buffer travel in the checkpoint: a killed run resumed equals the straight run."""
    options = RUN[:-1] + ["steps=3", "checkpoint_every=1", "algorithm.estimator=tigpo",
                          "algorithm.tigpo_revisit_fraction=0.5", "optim.lr=0.001"]
    straight = Trainer(load_config(None, tiny_overrides + options + [f"out_dir={tmp_path / 'a'}"]))
    log_a = fit(straight, echo=None)
    straight.close()
    first = Trainer(load_config(None, tiny_overrides + options + [f"out_dir={tmp_path / 'b'}"]))
    fit(first, stop_after=2, echo=None)
    first.close()
    resumed = Trainer(load_config(None, tiny_overrides + options + [f"out_dir={tmp_path / 'b'}"]))
    log_b = fit(resumed, echo=None)
    resumed.close()
    assert log_a[-1]["replay_groups"] == log_b[-1]["replay_groups"] == 1.0
    assert log_a[-1]["loss"] == log_b[-1]["loss"]
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert straight.hooks.state_dict() == resumed.hooks.state_dict()
