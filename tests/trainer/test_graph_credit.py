"""GraphGPO graph credit and TIGPO (persistent task graph, revisit slots, cross-temporal reference): crafted
batches whose advantages are worked out by hand below, config selection and composition, and a short run."""

from __future__ import annotations

import io
import math

import pytest
import torch

from trainer.learn.algorithms import ESTIMATORS, AdvantageSettings, estimate
from trainer.learn.algorithms.graph import GOAL, goal_distances
from trainer.learn.algorithms.hooks import AlgorithmHooks
from trainer.learn.algorithms.tigpo import TaskGraphMemory
from trainer.config import load_config
from trainer.errors import ConfigError
from trainer import Trainer, fit
from trainer.collect.trajectory import Trajectory

S3 = 1 / math.sqrt(3)  # std of [1, 0, 0] (unbiased) and 1/std scales below
R2 = 1 / math.sqrt(2)


def traj(keys: list[str], *, won: bool, finish: str = "terminated", task: int = 0, group: int = 0) -> Trajectory:
    rewards = [0.0] * (len(keys) - 1) + [1.0 if won else 0.0]
    return Trajectory([1] * len(keys), [1] * len(keys), [0.0] * len(keys), list(range(len(keys))), 0, rewards=rewards,
                      state_keys=keys, won=won, finish=finish, task_index=task, group=group)


def crafted_group() -> list[Trajectory]:
    # τ0: A -> B -> success; τ1: A -> C -> B -> success; τ2: A -> C -> dead end (lost, terminated)
    return [traj(["A", "B"], won=True), traj(["A", "C", "B"], won=True), traj(["A", "C"], won=False)]


# Hand computation for crafted_group():
#   nodes A, B, C, success, dead end -> sentinel D = 5; d(success)=0, d(B)=1, d(A)=2 (A->B), d(C)=2 (C->B)
#   edge values d(s)-d(s'): τ0 [A->B 1, B->succ 1]; τ1 [A->C 0, C->B 1, B->succ 1]; τ2 [A->C 0, C->dead 2-5=-3]
#   source group A: [1, 0, 0], mean 1/3, std 1/√3 -> [2/√3, -1/√3, -1/√3]
#   source group B: [1, 1] -> [0, 0];   source group C: [1, -3], mean -1, std 2√2 -> [1/√2, -1/√2]
#   episode (GRPO): returns [1, 1, 0], mean 2/3, std 1/√3 -> [1/√3, 1/√3, -2/√3]
A_G = [[2 * S3, 0.0], [-S3, R2, 0.0], [-S3, -R2]]
A_E = [S3, S3, -2 * S3]


def test_goal_distances_put_unreachable_states_at_the_node_count():
    distance, sentinel = goal_distances([("A", "B"), ("B", GOAL), ("C", "B"), ("A", "C"), ("C", "X")])
    assert distance == {GOAL: 0, "B": 1, "A": 2, "C": 2} and sentinel == 5  # X has no path: D = |V| = 5


def test_graphgpo_on_a_crafted_batch_matches_the_hand_computation():
    got = estimate("graphgpo", [crafted_group()], AdvantageSettings(graph_omega=1.0))[0]
    want = [[A_E[i] + a for a in turns] for i, turns in enumerate(A_G)]
    # e.g. τ2's last turn: -2/√3 - 1/√2 = -1.8618 (moving into the dead end is the worst edge)
    assert [len(t) for t in got] == [2, 3, 2]
    for g, w in zip(got, want):
        assert g == pytest.approx(w, abs=1e-4)
    half = estimate("graphgpo", [crafted_group()], AdvantageSettings(graph_omega=0.5))[0]
    assert half[2][1] == pytest.approx(-2 * S3 - 0.5 * R2, abs=1e-4)


def test_graph_mix_composes_with_rloo():
    hooks = AlgorithmHooks(load_config(None, ["algorithm.estimator=rloo", "algorithm.graph_mix=0.5"]))
    got = hooks.estimate("rloo", [crafted_group()], hooks.settings())[0]
    rloo = [1 - 0.5, 1 - 0.5, 0 - 1.0]  # R_i minus the mean of the other two returns
    for i, turns in enumerate(A_G):
        assert got[i] == pytest.approx([rloo[i] + 0.5 * a for a in turns], abs=1e-4)
    plain = AlgorithmHooks(load_config(None, ["algorithm.estimator=rloo"]))
    assert plain.estimate("rloo", [crafted_group()], plain.settings())[0] == [[r] * len(t) for r, t in zip(rloo, A_G)]


def test_config_selects_the_graph_estimators_and_rejects_double_graph_credit():
    assert {"graphgpo", "tigpo"} <= set(ESTIMATORS)
    assert load_config(None, ["algorithm.estimator=tigpo"]).algorithm.tigpo_revisit_fraction == 0.25
    with pytest.raises(ConfigError, match="graph_mix must be >= 0 and 0 with graphgpo/tigpo"):
        load_config(None, ["algorithm.estimator=graphgpo", "algorithm.graph_mix=1"])
    with pytest.raises(ConfigError, match="tigpo_revisit_fraction must be in"):
        load_config(None, ["algorithm.estimator=tigpo", "algorithm.tigpo_revisit_fraction=1.0"])


def revisit_memory() -> TaskGraphMemory:
    """Step 0 explored task 7 (A -> B -> success won, A truncated): edges A->B, B->success; returns [1, 0]."""
    memory = TaskGraphMemory(revisit_fraction=0.5, seed=3)
    assert memory.next_tasks(lambda n: [7] * n, 2, step=0) == [7, 7]  # nothing explored yet: no revisit slot
    memory.record([[traj(["A", "B"], won=True, task=7), traj(["A"], won=False, finish="truncated", task=7)]])
    return memory


def test_tigpo_on_a_crafted_revisit_matches_the_hand_computation():
    memory = revisit_memory()
    assert memory.next_tasks(lambda n: [11] * n, 2, step=1) == [7, 11]  # slot 0 revisits task 7
    current = [traj(["C", "A"], won=False, finish="truncated", task=7), traj(["C", "D"], won=False, finish="truncated", task=7)]
    # Episode: returns [0, 0] with the exploration reference [1, 0]: pooled mean 1/4, std 1/2 -> [-0.5, -0.5].
    # Graph: batch edges C->A, C->D plus history A->B, B->success: d(B)=1, d(A)=2, d(C)=3, D unreachable;
    #   nodes C, A, D, B, success -> D = 5. Values τ0 [C->A 3-2=1, last turn cut short 0]; τ1 [C->D 3-5=-2, 0].
    #   Source group C: [1, -2], mean -1/2, std 3/√2 -> [1/√2, -1/√2]; A and D alone -> 0.
    got = estimate("tigpo", [current], AdvantageSettings(history=memory))[0]
    assert got[0] == pytest.approx([-0.5 + R2, -0.5], abs=1e-4)
    assert got[1] == pytest.approx([-0.5 - R2, -0.5], abs=1e-4)
    # without the history the same group has no signal at all (no success anywhere, equal returns)
    assert estimate("graphgpo", [current], AdvantageSettings())[0] == [[0.0, 0.0], [0.0, 0.0]]
    hooks = AlgorithmHooks(load_config(None, ["algorithm.estimator=tigpo"]))
    hooks.memory = memory
    assert not hooks.no_variance(current)  # the reference gives the all-equal group a baseline
    assert hooks.no_variance([traj(["Q"], won=False, task=11, group=1)] * 2)  # an exploration slot: plain test


def test_tigpo_memory_round_trips_through_a_weights_only_checkpoint_and_revisits_are_seeded():
    memory = revisit_memory()
    buffer = io.BytesIO()
    torch.save(memory.state_dict(), buffer)
    buffer.seek(0)
    loaded = TaskGraphMemory(revisit_fraction=0.5, seed=3)
    loaded.load_state_dict(torch.load(buffer, weights_only=True))
    assert loaded.edges(7) == memory.edges(7) == [("A", "B"), ("B", GOAL)]
    draws = [TaskGraphMemory(revisit_fraction=0.5, seed=3) for _ in range(2)]
    for m in draws:
        m.load_state_dict(memory.state_dict())
        m.record([[traj(["Z"], won=True, task=t)] * 2 for t in (1, 2, 3)])
    assert draws[0].next_tasks(lambda n: [0] * n, 4, step=5) == draws[1].next_tasks(lambda n: [0] * n, 4, step=5)
    assert set(draws[0].next_tasks(lambda n: [0] * n, 4, step=6)[:2]) <= {1, 2, 3, 7}


RUN = ["env.env_id=agentgym/Maze-Easy-v0", "rollout.tasks_per_step=2", "rollout.group_size=2", "env.max_turns=3",
       "rollout.max_new_tokens=8", "rollout.max_context_tokens=768", "algorithm.filter_zero_variance=false",
       "checkpoint_every=0", "loss.entropy_coef=0.01"]


@pytest.mark.parametrize("options", [["algorithm.estimator=graphgpo"], ["algorithm.estimator=gigpo", "algorithm.graph_mix=0.5"],
                                     ["algorithm.estimator=tigpo", "algorithm.tigpo_revisit_fraction=0.5", "steps=2"]])
def test_a_short_run_trains_with_graph_credit(tiny_overrides, tmp_path, options):
    trainer = Trainer(load_config(None, tiny_overrides + RUN + ["steps=1", *options, f"out_dir={tmp_path}"]))
    try:
        records = fit(trainer, echo=None)
        assert records[-1]["updated"] == 1.0 and records[-1]["groups_kept"] == 2
        if trainer.hooks.memory is not None:  # step 2 revisited one of step 1's tasks; the checkpoint holds the memory
            state = trainer.state_dict()["algorithm"]["memory"]
            assert len(state["explored"]) >= 1 and all(isinstance(task, int) for task in state["explored"])
    finally:
        trainer.close()
