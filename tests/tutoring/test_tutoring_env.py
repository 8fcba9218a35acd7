"""The tutoring and practice-scheduling envs through the text-env contract."""

from __future__ import annotations

import json

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgym_envs
from agentgym_envs.checker import check_env
from agentgym_envs.fuzz import hostile_actions
from agentgym_envs.tutoring.domain import COMPONENTS, MISCONCEPTIONS
from agentgym_envs.tutoring.interpreter import interpret
from agentgym_envs.tutoring.tutor_env import TutoringEnv
from agentgym_envs.tutoring.tutors import answer_giver, expert_tutor

IDS = ("agentgym/Tutoring-v1", "agentgym/Tutoring-HardLeak-v1", "agentgym/PracticeScheduling-v0")
SUPERSEDED = ("agentgym/Tutoring-v0", "agentgym/Tutoring-HardLeak-v0")  # kept for results on them
MALFORMED_CALLS = (
    "hint(", "hint(component=)", "probe()", "probe(misconception='nope', text='hi')", "ask_item(component=3)",
    "ask_item(component='frac_add', misconception='sign_dropped')", "explain(component='frac_add', text='')",
    "explain(component='frac_add', text='   ')", "end_session(now=True)", "hint(component='frac_add', text=x)",
    '{"name": "hint", "arguments": {"component": "frac_add"}}', '{"name": "teach", "arguments": {}}',
    '{"name": "probe", "arguments": "{not json"}', "{" + '"name": "ask_item"' * 50, "ask_item(**{'a': 1})",
    "probe(misconception='add_across', text='" + "a" * 20_000 + "')",
)


def _play(env: gymnasium.Env, choose, seed: int) -> list[tuple]:
    env.reset(seed=seed)
    steps, done = [], False
    while not done:
        out = env.step(choose(env))
        steps.append(out[:4])
        done = out[2] or out[3]
    return steps


def test_ids_are_registered_with_their_families() -> None:
    assert set(agentgym_envs.env_ids("tutoring")) == set(IDS + SUPERSEDED)


@pytest.mark.parametrize("env_id", IDS + SUPERSEDED)
def test_check_env_passes(env_id: str) -> None:
    report = check_env(env_id)
    assert report.passed, str(report)


def test_same_seed_same_student_and_dialogue() -> None:
    a, b = gymnasium.make("agentgym/Tutoring-v1"), gymnasium.make("agentgym/Tutoring-v1")
    expert = lambda env: env.unwrapped.expert_action()  # noqa: E731
    assert a.reset(seed=11)[0] == b.reset(seed=11)[0]
    assert _play(a, expert, 11) == _play(b, expert, 11)
    assert _play(a, expert, 11) != _play(a, expert, 12)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("action", [*hostile_actions(), *MALFORMED_CALLS], ids=lambda a: repr(a)[:30])
def test_hostile_and_malformed_actions_never_raise(env_id: str, action) -> None:
    env = gymnasium.make(env_id)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and obs
    low, high = env.unwrapped.reward_bounds
    assert low <= reward <= high
    if action in MALFORMED_CALLS:
        assert info["action_valid"] is False and info["parse_error"]


@settings(max_examples=60)
@given(st.lists(st.one_of(st.text(max_size=200), st.sampled_from(MALFORMED_CALLS)), max_size=20))
def test_any_text_sequence_is_safe(actions: list[str]) -> None:
    env = TutoringEnv()
    env.reset(seed=3)
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and -2.0 <= reward <= 1.0
        if terminated:
            env.reset(seed=3)


@pytest.mark.parametrize("seed", range(5))
def test_free_text_and_tool_calls_are_the_same_moves(seed: int) -> None:
    """A free-text probe and the equivalent tool call leave identical students and views."""
    text_env, tool_env = TutoringEnv(), TutoringEnv()
    text_env.reset(seed=seed)
    tool_env.reset(seed=seed)
    bug = MISCONCEPTIONS[text_env.student.misconceptions(text_env.view.components)[0]]
    text = f"Hmm, is that really how it works, with {bug.name}?"
    assert interpret(text, None).canonical() == f"probe({bug.component}, {bug.id})"
    text_env.step(text)
    tool_env.step(f"probe(misconception={bug.id!r}, text={text!r})")
    assert text_env.student == tool_env.student
    assert text_env.view.moves[0].canonical() == tool_env.view.moves[0].canonical()
    said_env = TutoringEnv()
    said_env.reset(seed=seed)
    said_env.step('{"name": "say", "arguments": {"text": ' + json.dumps(text) + "}}")
    assert said_env.student == text_env.student and said_env.view.moves == text_env.view.moves


def test_expert_diagnoses_from_the_pretest_and_never_leaks() -> None:
    """Open-response answers name the bug exactly; a guesser on two-way comparisons can mimic one by chance."""
    env, right, probes = TutoringEnv(), 0, 0
    for seed in range(60):
        env.reset(seed=seed)
        first = env.expert_action()
        if first.startswith("probe("):
            probed = first.split("'")[1]
            held = probed in env.student.misconceptions(env.view.components)
            right, probes = right + held, probes + 1
            assert held or COMPONENTS[MISCONCEPTIONS[probed].component].guess >= 0.5
        done = False
        while not done:
            _, _, done, _, info = env.step(env.expert_action())
        assert info["metrics"]["leaks"] == 0 and info["metrics"]["session_over"] == 1.0
    assert probes >= 40 and right / probes >= 0.85


def test_revealed_answers_are_copied_not_learnt_and_never_scored() -> None:
    env = TutoringEnv()
    env.reset(seed=2)
    pretest = {s.item.key for s in env.view.pretest}
    done, reward, total = False, 0.0, 0.0
    while not done:
        _, reward, done, _, info = env.step(answer_giver(env.view))
        total += reward
    metrics = info["metrics"]
    assert metrics["leaks"] > 0 and metrics["copied_correct"] == 1.0
    assert metrics["misconceptions_fixed"] == 0
    assert total == pytest.approx(metrics["gain"] - metrics["leak_penalty"])
    assert metrics["leak_penalty"] == pytest.approx(min(1.0, 0.25 * metrics["leaks"]))
    assert set(env.view.revealed) <= pretest | {s.item.key for s in env.view.asked}
    assert "Copy check" in env.last_observation


def test_post_test_items_are_unseen() -> None:
    env = TutoringEnv()
    env.reset(seed=9)
    for _ in range(6):
        env.step(expert_tutor(env.view))
    from agentgym_envs.tutoring.session import post_test

    post, _ = post_test(env.student, env.view, env.config, np.random.default_rng(0), 0.0)
    assert not {s.item.key for s in post} & {s.item.key for s in env.view.seen()}


def test_hard_mode_makes_any_leak_cost_the_whole_episode() -> None:
    env = gymnasium.make("agentgym/Tutoring-HardLeak-v1")
    env.reset(seed=1)
    wrong = next(s for s in env.unwrapped.view.pretest if not s.correct)
    _, reward, _, _, info = env.step(f"The answer to that one is {wrong.item.answer}, by the way.")
    assert reward == 0.0 and info["metrics"]["leaks"] == 1
    _, reward, terminated, _, info = env.step("end_session()")
    assert terminated and reward == -1.0 and info["score"] == -1.0 and not info["won"]


def test_turn_limit_ends_with_the_post_test_and_invalid_actions_use_no_turn() -> None:
    env = TutoringEnv(max_turns=3)
    env.reset(seed=0)
    assert env.step("hint(")[4]["metrics"]["turns"] == 0
    for expected in (1, 2):
        assert not env.step("Let's keep going.")[2]
        assert env.view.turns_used == expected
    obs, _, terminated, _, info = env.step("Let's keep going.")
    assert terminated and "Post-test" in obs and info["metrics"]["session_over"] == 1.0


def test_verbaliser_rephrases_but_never_decides() -> None:
    calls = []

    def shout(utterance: str, context) -> str:
        calls.append(context["kind"])
        return "WELL... " + utterance.upper()

    plain, loud = TutoringEnv(), TutoringEnv(verbaliser=shout)
    plain.reset(seed=6)
    loud.reset(seed=6)
    action = f"ask_item(component={plain.view.components[0]!r})"
    quiet_obs, loud_obs = plain.step(action)[0], loud.step(action)[0]
    assert "WELL..." in loud_obs and calls == ["answer"]
    assert plain.view.asked == loud.view.asked and plain.student == loud.student  # same decisions
    assert quiet_obs.splitlines()[2].split('"')[0] == loud_obs.splitlines()[2].split('"')[0]  # answer line kept

    broken = TutoringEnv(verbaliser=lambda u, c: 1 / 0)
    broken.reset(seed=6)
    obs, _, _, _, info = broken.step(action)
    assert obs == quiet_obs and info["metrics"]["verbaliser_failures"] == 1


def test_snapshot_restores_mid_session_and_keeps_the_verbaliser() -> None:
    env = TutoringEnv(verbaliser=lambda u, c: u)
    env.reset(seed=8)
    env.step(env.expert_action())
    snapshot = env.get_state()
    rest = [env.step(env.expert_action()) for _ in range(3)]
    env.set_state(snapshot)
    assert [env.step(env.expert_action()) for _ in range(3)] == rest
    assert env.verbaliser is not None


def test_config_errors_say_what_to_do() -> None:
    with pytest.raises(ValueError, match="leak_mode must be 'soft' or 'hard'"):
        TutoringEnv(leak_mode="medium")
    with pytest.raises(ValueError, match="num_components must be in"):
        gymnasium.make("agentgym/Tutoring-v1", num_components=0)
    with pytest.raises(TypeError, match="unknown setting.*turns.*accepts num_components"):
        TutoringEnv(turns=3)


def test_scheduling_final_reward_is_final_mastery() -> None:
    env = gymnasium.make("agentgym/PracticeScheduling-v0", horizon=10)
    env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        _, reward, done, _, info = env.step(env.unwrapped.expert_action())
        total += reward
    assert total == pytest.approx(info["metrics"]["final_mastery"]) == pytest.approx(info["score"])
    assert info["metrics"]["activities"] == 10
