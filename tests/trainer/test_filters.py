"""TAO filtering, the EAPO tool-abuse penalty and DAPO dynamic sampling: crafted batches worked out by hand,
the tool-env signal TAO reads, the seeds and task stream of re-collections, and short runs with each on."""

from __future__ import annotations

import math

import pytest

import agentgym_envs
from trainer.learn.algorithms.dynamic_sampling import collect_until_varied
from trainer.learn.algorithms.hooks import AlgorithmHooks
from trainer.learn.algorithms.tool_use import all_tool_calls_failed, drop_failed_tool_use, redundant_calls, tool_abuse_penalty
from trainer.config import load_config
from trainer.errors import ConfigError
from trainer import Trainer, fit
from trainer.collect.rollout import RolloutStats
from trainer.seeding import TaskSampler
from trainer.collect.trajectory import Trajectory


def traj(rewards: list[float], *, valid: list[bool] | None = None, replies: list[str] | None = None, won: bool = False,
         group: int = 0, task: int = 0) -> Trajectory:
    n = len(rewards)
    return Trajectory([1] * (n + 1), [0] + [1] * n, [0.0] * (n + 1), [-1, *range(n)], 1, rewards=list(rewards),
                      state_keys=[f"s{k}" for k in range(n)], turn_valid=valid or [], replies=replies or ["x"] * n,
                      won=won, finish="terminated", group=group, task_index=task)


def test_a_tool_env_reports_a_failed_call_as_an_invalid_action():
    env = agentgym_envs.make("agentgym/GuessNumber-v0")
    env.reset(seed=0)
    assert env.step("frobnicate(1)")[4]["action_valid"] is False  # unknown tool
    assert env.step('guess(number="x")')[4]["action_valid"] is False  # bad argument
    assert env.step("guess(number=50)")[4]["action_valid"] is True


def test_tao_drops_trajectories_whose_every_call_failed_and_groups_left_too_small():
    failed, mixed, unrecorded = traj([0.0, 0.0], valid=[False, False]), traj([0.0, 1.0], valid=[False, True]), traj([0.0])
    assert all_tool_calls_failed(failed) and not all_tool_calls_failed(mixed) and not all_tool_calls_failed(unrecorded)
    groups = [[failed, mixed, unrecorded], [failed, traj([1.0], valid=[True])]]
    # group 0 keeps 2 of 3; group 1 keeps 1 (nothing to compare it with) and is dropped
    assert drop_failed_tool_use(groups) == [[mixed, unrecorded]]


def test_estimators_run_per_group_size_after_tao():
    hooks = AlgorithmHooks(load_config(None, ["algorithm.tao_filter=true"]))
    big, small = [traj([1.0]), traj([0.0]), traj([0.0])], [traj([1.0]), traj([0.0])]
    got = hooks.estimate("grpo", [big, small], hooks.settings())
    # [1, 0, 0]: mean 1/3, std 1/√3 -> [2/√3, -1/√3, -1/√3];  [1, 0]: mean 1/2, std 1/√2 -> [1/√2, -1/√2]
    assert [a[0] for a in got[0]] == pytest.approx([2 / math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3)], abs=1e-4)
    assert [a[0] for a in got[1]] == pytest.approx([1 / math.sqrt(2), -1 / math.sqrt(2)], abs=1e-4)
    shaped = hooks.shape([[traj([0.0], valid=[False]), *small]])
    assert shaped == [small] and hooks.metrics["tao_dropped"] == 1.0


def test_eapo_penalises_repeated_calls_by_the_groups_success_rate():
    assert redundant_calls(['search("a")', ' search("a")', 'answer("x")', 'search("b")']) == [False, True, False, False]
    won = traj([0.0, 0.0, 1.0], replies=['search("a")', 'search("a")', 'answer("x")'], won=True)
    lost = traj([0.0, 0.0], replies=['search("a")', 'search("a")'])
    shaped = tool_abuse_penalty([won, lost], 0.2)
    # success rate p = 1/2: each repeated call loses λ·p = 0.2 · 0.5 = 0.1
    assert [t.rewards for t in shaped] == [pytest.approx([0.0, -0.1, 1.0]), pytest.approx([0.0, -0.1])]
    assert won.rewards == [0.0, 0.0, 1.0]  # the collected trajectories are not modified
    hard = tool_abuse_penalty([lost, traj([0.0, 0.0], replies=["a", "a"])], 0.2)  # p = 0: the tools may be needed
    assert [t.rewards for t in hard] == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(ConfigError, match="tool_abuse_penalty must be >= 0"):
        load_config(None, ["algorithm.tool_abuse_penalty=-1"])


def batch(returns: list[list[float]]) -> list[Trajectory]:
    return [traj([r], group=g) for g, group_returns in enumerate(returns) for r in group_returns]


def test_dynamic_sampling_keeps_collecting_until_enough_groups_vary_within_the_bound():
    made: list[int] = []
    batches = [[[1, 1], [0, 0]], [[0, 0], [1, 0]], [[0, 1], [1, 0]]]

    def once(k: int) -> list[Trajectory]:
        made.append(k)
        return batch(batches[k])

    # attempt 0: no group varies; attempt 1: its group 1 does (-> group 2); attempt 2: its group 0 (-> group 3)
    out, count = collect_until_varied(once, target=2, tries=5)
    assert count == 3 and made == [0, 1, 2]
    assert [(t.group, t.ret) for t in out] == [(0, 1.0), (0, 1.0), (1, 0.0), (1, 0.0), (2, 1.0), (2, 0.0), (3, 0.0), (3, 1.0)]
    made.clear()
    out, count = collect_until_varied(once, target=2, tries=2)  # the bound: 2 collections, one varied group found
    assert count == 2 and len(out) == 6
    assert collect_until_varied(once, target=2, tries=1)[1] == 1  # tries 1: the plain collection


def test_dynamic_sampling_collections_draw_new_tasks_with_new_seeds():
    hooks = AlgorithmHooks(load_config(None, ["rollout.tasks_per_step=2", "algorithm.dynamic_sampling_tries=3"]))
    calls = []

    def play(tasks, sampling, seed):
        calls.append((tasks, sampling.seed, seed))
        return batch([[0, 0], [0, 0]]), RolloutStats(env_steps=4, generated_tokens=10, seconds=1.0)

    from agentgym_envs.policies import SamplingConfig

    trajectories, stats = hooks.collect(play, TaskSampler(10, seed=0), sampling=SamplingConfig(seed=11), seed=22, step=0)
    assert len(calls) == 3 and hooks.metrics == {"collections": 3.0}
    assert calls[0][1:] == (11, 22)  # collection 0 is the plain one
    assert len({c[1] for c in calls}) == 3 and len({c[2] for c in calls}) == 3
    assert [t for c in calls for t in c[0]] == TaskSampler(10, seed=0).next(6)  # the task stream, in order
    assert (stats.env_steps, stats.generated_tokens) == (12, 30) and len(trajectories) == 4


RUN = ["env.env_id=agentgym/Maze-Easy-v0", "rollout.tasks_per_step=2", "rollout.group_size=2", "env.max_turns=3",
       "rollout.max_new_tokens=8", "rollout.max_context_tokens=768", "checkpoint_every=0", "loss.entropy_coef=0.01",
       "steps=1"]


@pytest.mark.parametrize("options", [["algorithm.tao_filter=true", "algorithm.tool_abuse_penalty=0.1",
                                      "algorithm.filter_zero_variance=false"],
                                     ["algorithm.dynamic_sampling_tries=3", "rollout.invalid_penalty=0.1"]])
def test_a_short_run_trains_with_the_filters_on(tiny_overrides, tmp_path, options):
    trainer = Trainer(load_config(None, tiny_overrides + RUN + [*options, f"out_dir={tmp_path}"]))
    try:
        record = fit(trainer, echo=None)[-1]
        if trainer.config.algorithm.dynamic_sampling_tries > 1:
            assert 1 <= record["collections"] <= 3
            assert record["groups_kept"] == 2 or record["collections"] == 3  # short only when the bound is hit
        else:
            assert record["tao_dropped"] == 0.0 and record["updated"] == 1.0  # Maze reports no tool calls
    finally:
        trainer.close()


def test_tigpo_and_dynamic_sampling_refuse_to_run_on_several_ranks(monkeypatch):
    monkeypatch.setattr("trainer.learn.algorithms.hooks._ranks", lambda: 2)  # as under torchrun --nproc_per_node 2
    from agentgym_envs.policies import SamplingConfig

    play = lambda tasks, sampling, seed: (batch([[0, 1], [1, 0]]), RolloutStats())  # noqa: E731
    for options in (["algorithm.estimator=tigpo"], ["algorithm.dynamic_sampling_tries=2"]):
        hooks = AlgorithmHooks(load_config(None, ["rollout.tasks_per_step=2", *options]))
        with pytest.raises(ConfigError, match="the ranks' task lists would differ"):
            hooks.collect(play, TaskSampler(4, seed=0), sampling=SamplingConfig(), seed=0, step=0)
    plain = AlgorithmHooks(load_config(None, ["rollout.tasks_per_step=2"]))  # the plain collection runs on any rank
    assert len(plain.collect(play, TaskSampler(4, seed=0), sampling=SamplingConfig(), seed=0, step=0)[0]) == 4


def test_the_rollout_records_each_turns_validity_for_tao():
    """A tiny random model's replies rarely parse as GuessNumber tool calls: the rollout must record, per
    turn, what the env said (before, ``turn_valid`` stayed empty and TAO dropped nothing on real runs)."""
    from agentgym_envs.policies import SamplingConfig
    from trainer.models.backends.hf import HFPolicy
    from trainer.collect.episodes import PlaySpec
    from trainer.collect.rollout import RolloutWorker
    from trainer.models.tiny import TinyConfig, build_tiny

    model, tokenizer = build_tiny(TinyConfig())
    worker = RolloutWorker(PlaySpec("agentgym/GuessNumber-v0", protocol="tool_calls", max_turns=3, system_prompt=""),
                           tasks_per_batch=1, group_size=2, max_context_tokens=4096)
    try:
        trajectories, _ = worker.collect(HFPolicy(model, tokenizer), [0], sampling=SamplingConfig(max_new_tokens=8, seed=0),
                                         seed=0)
    finally:
        worker.close()
    for t in trajectories:
        assert len(t.turn_valid) == t.num_turns > 0
    assert not any(v for t in trajectories for v in t.turn_valid)  # random 8-token replies are no tool calls
    assert all(all_tool_calls_failed(t) for t in trajectories)
