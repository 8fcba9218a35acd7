"""The trainer runs on any env: make kwargs come only from the config, tasks come from a task list or from
seeds, BC is skipped where there is no expert, and more minibatches than trajectories do not crash."""

from __future__ import annotations

import math

import pytest

import agentgym_envs
from trainer.config import load_config
from trainer.episodes import PlaySpec, task_seed
from trainer.loop import Trainer

SPLIT_ENVS = {"agentgym/Search-1Hop-v0", "agentgym/WebShop-v0", "agentgym/Household-PickPlace-v0"}
IDS = ["agentgym/Maze-Easy-v0", "agentgym/GuessNumber-v0", "agentgym/Wordle-Easy-v0",
       "agentgym/TicTacToe-VsScripted-v0", "agentgym/Search-1Hop-v0", "agentgym/WebShop-v0",
       "agentgym/Tutoring-v0", "agentgym/Household-PickPlace-v0"]
SMALL = ["rollout.tasks_per_step=2", "rollout.group_size=2", "env.max_turns=3", "rollout.max_new_tokens=8",
         "rollout.max_context_tokens=768", "algorithm.filter_zero_variance=false", "checkpoint_every=0",
         "env.system_prompt=''", "eval.num_tasks=2", "loss.entropy_coef=0.01"]  # entropy: a gradient even at zero advantage


@pytest.fixture
def make_calls(monkeypatch):
    """Every kwargs dict the trainer passes to agentgym_envs.make."""
    calls: list[dict] = []
    real = agentgym_envs.make

    def spy(env_id, **kwargs):
        calls.append(kwargs)
        return real(env_id, **kwargs)

    monkeypatch.setattr(agentgym_envs, "make", spy)
    return calls


@pytest.mark.parametrize("env_id", IDS)
def test_one_step_on_every_family(env_id, tiny_overrides, tmp_path, make_calls):
    # GuessNumber is a tool env; the trainer trains it through the plain protocol here (its replies are text).
    trainer = Trainer(load_config(None, tiny_overrides + SMALL + [f"env.env_id={env_id}", f"out_dir={tmp_path}"]))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    record = trainer.train_step()
    assert trainer.step == 1 and record["updated"] == 1.0, record
    assert all(math.isfinite(v) for v in record.values() if isinstance(v, float)), record
    moved = [n for n, p in trainer.model.named_parameters() if p.requires_grad and not p.detach().equal(before[n])]
    assert moved, "the update changed no weight"
    ours = [kw for kw in make_calls if kw.get("max_turns") == 3]  # (the tiny model's corpus build plays Household)
    assert ours and all(set(kw) == {"protocol", "max_turns"} for kw in ours), ours  # no split=, no kwarg at all
    assert trainer.evaluate()["eval_episodes"] == 2


def test_household_recipe_kwargs_reach_make(tiny_overrides, tmp_path, make_calls):
    overrides = tiny_overrides + SMALL + [f"out_dir={tmp_path}", "env.train_kwargs={split: train, dense_reward: true}",
                                          "env.eval_kwargs={split: valid_seen}"]
    trainer = Trainer(load_config(None, overrides))
    trainer.evaluate()
    ours = [kw for kw in make_calls if kw.get("max_turns") == 3]
    assert {"split": "train", "dense_reward": True}.items() <= ours[0].items()
    assert make_calls[-1]["split"] == "valid_seen" and "dense_reward" not in make_calls[-1]


def test_quickstart_passes_the_same_household_kwargs_as_before():
    env = load_config("trainer/configs/quickstart.yaml").env
    assert env.make_kwargs(train=True) == {"split": "train", "dense_reward": True}
    assert env.make_kwargs(train=False) == {"split": "valid_seen"}


def test_seeded_tasks_name_one_start_state_and_held_out_seeds_are_disjoint():
    train, held_out = PlaySpec("agentgym/Maze-Easy-v0"), PlaySpec("agentgym/Maze-Easy-v0", seed_stream=1)
    obs = [train.make().reset(seed=s, options={"task_index": 3})[0] for s in (0, 99)]
    assert obs[0] == obs[1]  # the task id, not the vector env's seed, picks the start
    assert obs[0] == agentgym_envs.make("agentgym/Maze-Easy-v0").reset(seed=task_seed(3, 0))[0]
    assert held_out.make().reset(options={"task_index": 3})[0] == \
        agentgym_envs.make("agentgym/Maze-Easy-v0").reset(seed=task_seed(3, 1))[0]
    assert not {task_seed(t, 0) for t in range(1000)} & {task_seed(t, 1) for t in range(1000)}


def test_bc_is_skipped_with_a_message_without_an_expert(tiny_overrides, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr("trainer.loop.has_expert", lambda env: False)
    trainer = Trainer(load_config(None, tiny_overrides + SMALL + ["env.env_id=agentgym/Maze-Easy-v0", "bc.episodes=4",
                                                                  f"out_dir={tmp_path}"]))
    with caplog.at_level("WARNING"):
        result = trainer.warm_up()
    assert result["bc_skipped"] == 1.0 and trainer.bc_done
    assert "no scripted expert" in caplog.text


def test_bc_runs_on_a_seeded_env_with_an_expert(tiny_overrides, tmp_path):
    trainer = Trainer(load_config(None, tiny_overrides + SMALL + ["env.env_id=agentgym/Maze-Easy-v0", "bc.episodes=4",
                                                                  "env.max_turns=20", f"out_dir={tmp_path}"]))
    assert trainer.warm_up()["bc_trajectories"] == 4


def test_more_minibatches_than_trajectories_do_not_crash(tiny_overrides, tmp_path, caplog):
    trainer = Trainer(load_config(None, tiny_overrides + SMALL + ["env.env_id=agentgym/Maze-Easy-v0", "optim.minibatches=16",
                                                                  f"out_dir={tmp_path}"]))
    with caplog.at_level("INFO"):
        record = trainer.train_step()
    assert record["updated"] == 1.0 and math.isfinite(record["loss"])
    assert "using 4 minibatches" in caplog.text
