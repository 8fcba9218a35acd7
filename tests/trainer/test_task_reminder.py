"""``env.task_reminder``: the instruction follows every observation, identically in rollouts and text episodes."""

from agentgym_envs.policies import ExpertPolicy, SamplingConfig
from trainer.collect.episodes import PlaySpec, run_text_episodes
from trainer.collect.rollout import RolloutWorker


def test_reminder_follows_every_observation_in_rollouts_and_text_episodes(tiny_policy):
    spec = PlaySpec("agentgym/Household-PickPlace-v0", max_turns=3, system_prompt="", task_reminder=True)
    worker = RolloutWorker(spec, tasks_per_batch=1, group_size=2, max_context_tokens=4096)
    try:
        trajectories, _ = worker.collect(tiny_policy, [7], sampling=SamplingConfig(max_new_tokens=6, seed=0), seed=0)
    finally:
        worker.close()
    env = spec.make()
    _, info = env.reset(options={"task_index": 7})
    reminder = f"\n\nTask: {info['instruction']}"
    for t in trajectories:
        text = tiny_policy.decode(t.token_ids)
        assert t.num_turns == 3 and text.count(reminder) == 2  # after each observation but the last (never shown)
    plain = PlaySpec("agentgym/Household-PickPlace-v0", max_turns=3, system_prompt="")
    expert = run_text_episodes(ExpertPolicy(), spec, [7])[0]
    assert all(obs.endswith(reminder) for _, obs in expert.history.turns)
    assert not any("Task: " in obs for _, obs in run_text_episodes(ExpertPolicy(), plain, [7])[0].history.turns)
