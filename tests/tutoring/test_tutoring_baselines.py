"""The reward orders the scripted tutors as it should: expert > silent ≈ random > answer-giver.

200 episodes each, on the same students (episode i has seed i for every tutor); "non-overlapping" means
the 95% intervals of neighbouring levels do not touch.
"""

from __future__ import annotations

import pytest

from agentgym_envs.tutoring.evaluation import Summary, evaluate

EPISODES = 200


@pytest.fixture(scope="module")
def tutors() -> dict[str, Summary]:
    return {name: evaluate("agentgym/Tutoring-v1", name, episodes=EPISODES)
            for name in ("expert", "silent", "random", "answer_giver")}


def test_expert_beats_silent_and_random_with_separate_intervals(tutors: dict[str, Summary]) -> None:
    expert = tutors["expert"]
    assert expert.low > max(tutors["silent"].high, tutors["random"].high), tutors
    assert expert.metrics["misconceptions_fixed"] > 0.8 * expert.metrics["misconceptions_initial"]


def test_silent_and_random_are_close(tutors: dict[str, Summary]) -> None:
    silent, random = tutors["silent"], tutors["random"]
    assert abs(silent.mean - random.mean) < 0.06, (silent, random)
    assert abs(silent.mean) < 2 * silent.ci95 + 0.01  # no teaching, no gain


def test_answer_giver_is_last_with_separate_intervals(tutors: dict[str, Summary]) -> None:
    assert tutors["answer_giver"].high < min(tutors["silent"].low, tutors["random"].low), tutors


def test_answer_givers_copied_answers_do_not_count_as_gain(tutors: dict[str, Summary]) -> None:
    giver, silent = tutors["answer_giver"].metrics, tutors["silent"].metrics
    assert giver["leaks"] >= 4 and giver["copied_correct"] == 1.0  # it copies every revealed answer…
    assert giver["gain"] < silent["gain"] + 0.05  # …and gains no more than saying nothing
    assert giver["misconceptions_fixed"] == 0.0


def test_hard_leak_mode_orders_the_same_way() -> None:
    expert = evaluate("agentgym/Tutoring-HardLeak-v1", "expert", episodes=100)
    giver = evaluate("agentgym/Tutoring-HardLeak-v1", "answer_giver", episodes=100)
    assert giver.mean == -1.0 and expert.low > 0.15


def test_scheduling_expert_beats_round_robin_and_random() -> None:
    expert, robin, random = (evaluate("agentgym/PracticeScheduling-v0", name, episodes=100)
                             for name in ("expert", "round_robin", "random"))
    assert expert.low > max(robin.high, random.high), (expert, robin, random)
