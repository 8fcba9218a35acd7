"""``won`` cannot be rigged: it counts real learning in the hidden state, not post-test noise.

In Tutoring-v0 ``won`` was a positive post-test gain without a leak; a few diagnostic items are noisy (a
student slips or guesses), so a tutor that ended the session at once won 47 of 200 sessions. From -v1 the
student must also end free of every misconception they started with. Each test plays the same 200 students
(seeds of :func:`~agentgym_envs.seeding.episode_seed`) with a scripted tutor; the cheap ones are the
policies an RL tutor would find first if they paid.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium
import numpy as np
import pytest

from agentgym_envs.registration import make
from agentgym_envs.seeding import episode_seed
from agentgym_envs.tutoring.tutors import TUTORS

EPISODES = 200
IDS = ("agentgym/Tutoring-v1", "agentgym/Tutoring-HardLeak-v1")

Tutor = Callable[[gymnasium.Env, np.random.Generator], str]


def _components(env: gymnasium.Env) -> tuple[str, ...]:
    return env.unwrapped.view.components


def _one_hint_then_end(env: gymnasium.Env, rng: np.random.Generator) -> str:
    if env.unwrapped.view.moves:
        return "end_session()"
    return f"hint(component={_components(env)[0]!r}, text='Take your time and check each step.')"


def _explain_everything(env: gymnasium.Env, rng: np.random.Generator) -> str:
    """Generic explanations of each component in turn: untargeted teaching, never aimed at a misconception."""
    components = _components(env)
    component = components[len(env.unwrapped.view.moves) % len(components)]
    return f"explain(component={component!r}, text='Work through it step by step and check your answer.')"


def _play(env_id: str, tutor: Tutor) -> list[tuple[bool, float, dict[str, float]]]:
    """``(won, return, final metrics)`` of each of the fixed episodes; ``mastery_rise`` added to the metrics."""
    env, rng, results = make(env_id), np.random.default_rng(0), []
    for i in range(EPISODES):
        _, info = env.reset(seed=episode_seed(0, i))
        start = info["metrics"]["true_mastery"]
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, info = env.step(tutor(env, rng))
            total, done = total + reward, terminated or truncated
        metrics = {**info["metrics"], "mastery_rise": info["metrics"]["true_mastery"] - start}
        results.append((bool(info["won"]), total, metrics))
    env.close()
    return results


def _wins(env_id: str, tutor: Tutor) -> int:
    return sum(won for won, _, _ in _play(env_id, tutor))


@pytest.mark.parametrize("env_id", IDS)
def test_ending_the_session_at_once_never_wins(env_id: str) -> None:
    assert _wins(env_id, TUTORS["silent"]) == 0  # 47 of 200 on v0


@pytest.mark.parametrize("env_id", IDS)
def test_cheap_moves_then_quitting_never_win(env_id: str) -> None:
    assert _wins(env_id, _one_hint_then_end) == 0  # 38 of 200 on v0


@pytest.mark.parametrize("env_id", IDS)
def test_untargeted_teaching_never_wins(env_id: str) -> None:
    """Generic explanations raise the true mastery of bug-free components (a mastery-only verdict gave this 26.5%),
    but never get past the misconception the session is about."""
    results = _play(env_id, _explain_everything)
    assert sum(m["mastery_rise"] > 0 for _, _, m in results) >= 0.1 * EPISODES  # it does teach something…
    assert not any(won for won, _, _ in results)  # …but not what the student got wrong


@pytest.mark.parametrize("env_id", IDS)
def test_the_expert_wins_most_sessions_and_the_random_tutor_few(env_id: str) -> None:
    """Measured on these seeds: expert 154 of 200 (77%), random 15 (7.5%)."""
    assert _wins(env_id, TUTORS["expert"]) >= 0.7 * EPISODES
    assert _wins(env_id, TUTORS["random"]) <= 0.12 * EPISODES


def test_a_win_is_learning_in_the_hidden_state_and_a_positive_return() -> None:
    results = _play("agentgym/Tutoring-v1", TUTORS["expert"])
    won = [(total, m) for w, total, m in results if w]
    assert won and all(total > 0 and m["misconceptions_active"] == 0 and m["leaks"] == 0 for total, m in won)
    assert all(m["misconceptions_fixed"] == m["misconceptions_initial"] >= 1 and m["mastery_rise"] > 0 for _, m in won)


def test_answer_giving_never_wins() -> None:
    assert _wins("agentgym/Tutoring-v1", TUTORS["answer_giver"]) == 0


@pytest.mark.parametrize("env_id", ["agentgym/Tutoring-v0", "agentgym/Tutoring-HardLeak-v0"])
def test_v0_keeps_its_verdict_so_its_numbers_mean_what_they_meant(env_id: str) -> None:
    assert _wins(env_id, TUTORS["silent"]) == 47  # the defect -v1 fixes, kept for results on v0
