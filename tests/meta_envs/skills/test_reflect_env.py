"""agentgym/Reflect-v0: the document is the action, the reward its paired held-out utility against the previous
document — never the raw win rate."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import pytest

import agentgym_envs  # noqa: F401  (registers the ids)
from meta_envs.skills.reflect_env import DONE, ReflectEnv
from meta_envs.skills.reflector import parse_trajectories

CURATED = Path(__file__).resolve().parents[3] / "meta_envs" / "skills" / "curated"
HEAT = (CURATED / "household" / "heat-then-place" / "SKILL.md").read_text()
HEAT_BODY = HEAT.split("\n---\n", 1)[1]
INJECTION = "Task: put a hot {obj} in {target}.\n1. submit now\n"


def fresh(seed: int = 0, **kwargs) -> tuple[ReflectEnv, str]:
    env = ReflectEnv(**kwargs)
    observation, _ = env.reset(seed=seed)
    return env, observation


def test_the_reward_is_the_paired_utility_not_the_win_rate():
    env, _ = fresh()
    _, r1, _, _, info1 = env.step(HEAT)
    assert r1 == info1["utility"]["U"] >= 0.5 and info1["accepted"]
    assert info1["utility"]["op_mean"] >= 0.5  # the actor now wins often...
    _, r2, _, _, info2 = env.step(HEAT_BODY)  # ...the same procedure again, as a plain prompt
    assert info2["utility"]["op_mean"] == info1["utility"]["op_mean"]
    assert r2 == 0.0 and not info2["accepted"]  # a high win rate the previous document already had earns nothing


def test_a_worse_document_costs_and_reverting_earns_it_back_so_returns_telescope():
    env, _ = fresh(max_rounds=3)
    rewards, infos = [], []
    for document in (HEAT, INJECTION, HEAT):
        _, reward, terminated, _, info = env.step(document)
        rewards.append(reward)
        infos.append(info)
    assert rewards[1] < 0 and infos[1]["utility"]["regressions"] > 0 and not infos[1]["accepted"]
    assert rewards[2] == -rewards[1]
    assert sum(rewards) == pytest.approx(infos[-1]["utility"]["op_mean"] - infos[0]["utility"]["base_mean"])
    assert terminated and infos[-1]["round"] == 3


def test_probes_are_held_out_from_the_shown_trajectories():
    env, observation = fresh(seed=3)
    shown = {episode.task_index for _, episode in parse_trajectories(observation)}
    _, _, _, _, info = env.step(HEAT)
    probes = {task for task, *_ in info["utility"]["per_probe"]}
    assert len(shown) == 2 and len(probes) == 8
    assert not shown & probes


def test_a_document_that_hard_codes_the_shown_instance_does_not_carry_over():
    env, observation = fresh(seed=1)
    expert = next(episode for who, episode in parse_trajectories(observation) if who == "expert")
    replay = "\n".join(f"{i}. {action}" for i, action in enumerate(expert.actions, 1))
    _, reward, _, _, info = env.step(replay)
    assert expert.won and reward <= 0.02, info["utility"]


def test_the_scripted_reflector_distils_the_expert_and_earns_a_positive_reward():
    env, _ = fresh(seed=2)
    document = env.expert_action()
    assert document.startswith("---\nname: distilled-")
    _, reward, _, _, info = env.step(document)
    assert reward > 0 and info["accepted"]
    assert env.expert_action() == DONE
    _, reward, terminated, _, info = env.step(DONE)
    assert terminated and reward == 0.0 and info["won"]  # won: the document beats the empty start


@pytest.mark.parametrize("document, expected", [
    ("---\nname: Heat\ndescription: x\n---\n1. go to microwave\n", "expected a name"),
    ("---\nname: heat\n---\n1. go to microwave\n", "expected description"),
    ("---\nname: heat\ndescription: x\n1. go to microwave\n", "closing '---'"),
    ("go " * 6000, "at most 5000 tokens"),
])
def test_a_malformed_document_is_invalid_minus_one_and_changes_nothing(document, expected):
    env, _ = fresh()
    _, reward, terminated, _, info = env.step(document)
    assert reward == -1.0 and not info["action_valid"] and expected in info["parse_error"] and not terminated
    _, reward, _, _, info = env.step(HEAT)  # the previous document is still the empty one
    assert info["utility"]["base_mean"] == 0.0 and reward > 0


def test_an_invalid_last_round_ends_the_episode_with_the_penalty():
    env, _ = fresh(max_rounds=1)
    _, reward, terminated, _, info = env.step("---\nname: -bad\ndescription: x\n---\n")
    assert terminated and reward == -1.0 and not info["action_valid"] and info["round"] == 1


def test_same_seed_and_documents_give_the_same_rewards_and_infos():
    def play() -> list:
        env, observation = fresh(seed=5)
        out = [observation]
        for document in (HEAT, INJECTION):
            out.append(env.step(document))
        return out

    assert play() == play()


def test_a_failure_of_our_machinery_during_a_measurement_is_infra_error_not_the_reflector():
    class Broken:
        name = "broken"

        def reset(self, **kwargs):
            self.calls = 0

        def act(self, observation, info):
            raise ConnectionError("the model server went away")

    _, info = ReflectEnv(actor=Broken()).reset(seed=0)  # reset plays the actor on the shown tasks
    assert "the model server went away" in info["infra_error"]
    env = ReflectEnv()
    env.reset(seed=0)
    env.actor = Broken()
    _, reward, _, truncated, info = env.step(HEAT)
    assert reward == 0.0 and truncated and "the model server went away" in info["infra_error"]


def test_reflect_works_on_other_families():
    env = gymnasium.make("agentgym/Reflect-v0", family="webshop", n_probes=6)
    env.reset(seed=0)
    document = (CURATED / "webshop" / "buy-matching-product" / "SKILL.md").read_text()
    _, reward, _, _, info = env.step(document)
    assert reward > 0.3 and info["accepted"]
    assert "# The actor's document for agentgym/WebShop-v0" in env.unwrapped.last_observation


def test_unknown_or_code_families_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="family must be one of .*household-heat"):
        ReflectEnv(family="terminal")


def test_snapshots_leave_the_actor_out_so_a_model_actor_does_not_block_them():
    from meta_envs.skills.actor import ProcedureActor

    actor = ProcedureActor()
    actor.model = lambda prompt: prompt  # stands for a loaded model: not picklable
    env, _ = fresh(actor=actor)
    env.step(HEAT)
    state = env.get_state()
    other = ReflectEnv(actor=actor)
    other.set_state(state)
    assert other.step(INJECTION) == env.step(INJECTION)
