"""Learning regression: on an easy household problem (two train tasks), behaviour cloning brings the tiny
policy to partial competence and RL then improves it by a clear margin. Fixed seeds; about a minute of CPU
(marked slow). The held-out version of this claim is the quickstart's (docs/trainer.md)."""

import pytest

from trainer.config import load_config
from trainer.loop import Trainer, fit

EASY = ["env.system_prompt=''", "env.train_tasks=2", "env.dense_reward=true", "env.eval_split=train",
        "eval.num_tasks=2", "eval.temperature=1.0", "eval.repeats=32", "env.max_turns=6",
        "rollout.tasks_per_step=2", "rollout.group_size=8", "rollout.max_new_tokens=12", "progress=false",
        "checkpoint_every=0", "bc.episodes=2", "bc.epochs=35", "bc.batch_size=2", "steps=20",
        "algorithm.estimator=gigpo_mean", "algorithm.positive_only=true", "optim.lr=0.0003"]


@pytest.mark.slow
def test_rl_improves_on_the_behaviour_cloned_start(tmp_path, tiny_cache):
    trainer = Trainer(load_config(None, EASY + [f"policy.cache_dir={tiny_cache}", f"out_dir={tmp_path}"]))
    try:
        untrained = trainer.evaluate()["eval_success"]
        trainer.warm_up()
        cloned = trainer.evaluate()["eval_success"]  # 64 sampled episodes
        records = fit(trainer, echo=None)
        trained = trainer.evaluate()["eval_success"]
    finally:
        trainer.close()
    assert untrained == 0.0
    # measured here: BC 0.17, BC + 20 RL updates 0.59 (95% CIs ±0.09 and ±0.12)
    assert 0.05 <= cloned <= 0.45, f"the warm-up should leave room to improve: BC success {cloned}"
    assert trained >= cloned + 0.2, f"RL did not improve on BC by a clear margin: {cloned} -> {trained}"
    assert len(records) == 20 and all(r["logprob_gap_max"] < 1e-3 for r in records if "logprob_gap_max" in r)


def test_exploring_expert_detours_are_context_not_labels(tiny_policy):
    """bc.explore: the expert sometimes first visits a wrong receptacle; those replies stay in the context
    with loss_mask 0, every other reply is a label, and the data repeat exactly for a seed."""
    from trainer.bc import expert_trajectories
    from trainer.episodes import PlaySpec

    spec = PlaySpec("agentgym/Household-PickPlace-v0", {"split": "train"}, max_turns=8, system_prompt="")
    plain = expert_trajectories(tiny_policy, spec, list(range(8)), seed=0)
    explored = expert_trajectories(tiny_policy, spec, list(range(8)), seed=0, explore=1.0, max_detours=1)
    again = expert_trajectories(tiny_policy, spec, list(range(8)), seed=0, explore=1.0, max_detours=1)
    assert [t.token_ids for t in explored] == [t.token_ids for t in again]
    assert len(plain) == len(explored) == 8  # the expert recovers from one detour within the turn limit
    for p, e in zip(plain, explored):
        assert e.num_turns == p.num_turns + 1  # one detour each
        labelled = {k for k in e.token_turns if k >= 0}
        assert labelled == set(range(1, e.num_turns))  # the detour (turn 0) is not a label
        assert sum(e.loss_mask) == sum(1 for k in e.token_turns if k >= 0)


def test_exploring_expert_needs_the_env_hook_not_env_text():
    """Detours come from the env's expert_detours(): an env without the hook (the maze) gets exactly the
    scripted expert's episodes and no detour turns, even at explore=1."""
    from agentgym_envs.policies import ExpertPolicy
    from trainer.bc import ExploringExpertPolicy
    from trainer.episodes import PlaySpec, run_text_episodes

    spec = PlaySpec("agentgym/Maze-Easy-v0", max_turns=30)
    explorer = ExploringExpertPolicy(explore=1.0, max_detours=5)
    explored = run_text_episodes(explorer, spec, [0, 1, 2], seed=0)
    plain = run_text_episodes(ExpertPolicy(), spec, [0, 1, 2], seed=0)
    assert [e.history.turns for e in explored] == [e.history.turns for e in plain]
    assert all(e.won for e in explored) and explorer.detour_turns() == [frozenset()] * 3


def test_invalid_penalty_shapes_training_rewards_only(tiny_policy):
    """rollout.invalid_penalty: the same sampled episodes, minus the penalty on each turn the env called invalid."""
    from trainer.episodes import PlaySpec
    from agentgym_envs.policies import SamplingConfig
    from trainer.rollout import RolloutWorker

    spec = PlaySpec("agentgym/Household-PickPlace-v0", {"split": "train", "dense_reward": True}, max_turns=3, system_prompt="")
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=8, seed=3)
    runs = []
    for penalty in (0.0, 0.5):
        worker = RolloutWorker(spec, tasks_per_batch=2, group_size=2, max_context_tokens=1024, invalid_penalty=penalty)
        try:
            runs.append(worker.collect(tiny_policy, [0, 1], sampling=sampling, seed=0)[0])
        finally:
            worker.close()
    plain, shaped = runs
    assert [t.token_ids for t in plain] == [t.token_ids for t in shaped]
    diffs = [s - p for a, b in zip(plain, shaped) for p, s in zip(a.rewards, b.rewards)]
    assert all(abs(d) < 1e-9 or abs(d + 0.5) < 1e-9 for d in diffs) and any(abs(d + 0.5) < 1e-9 for d in diffs)
    assert [t.won for t in plain] == [t.won for t in shaped]
