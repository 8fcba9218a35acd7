"""BKT arithmetic, simulated students, and the documented learning dynamics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym_envs.tutoring import bkt
from agentgym_envs.tutoring.domain import COMPONENTS, MISCONCEPTION_IDS, MISCONCEPTIONS, generate_item
from agentgym_envs.tutoring.dynamics import Dynamics, confront, instruct, teach
from agentgym_envs.tutoring.student import Student, make_student

PARAMS = bkt.BKTParams(p_init=0.3, p_learn=0.1, p_guess=0.2, p_slip=0.1)


# ----------------------------------------------------------------------------- BKT
def test_bkt_updates_match_hand_computed_values() -> None:
    # correct: 0.3*0.9 / (0.3*0.9 + 0.7*0.2) = 0.27 / 0.41
    assert bkt.posterior(0.3, True, PARAMS) == pytest.approx(0.27 / 0.41)
    # wrong: 0.3*0.1 / (0.3*0.1 + 0.7*0.8) = 0.03 / 0.59
    assert bkt.posterior(0.3, False, PARAMS) == pytest.approx(0.03 / 0.59)
    assert bkt.transition(0.5, 0.1) == pytest.approx(0.55)
    assert bkt.update(0.3, True, PARAMS) == pytest.approx(0.27 / 0.41 + (1 - 0.27 / 0.41) * 0.1)
    assert bkt.p_correct(0.3, PARAMS) == pytest.approx(0.3 * 0.9 + 0.7 * 0.2)
    # two steps by hand: wrong then right
    first = 0.03 / 0.59 + (1 - 0.03 / 0.59) * 0.1
    second = first * 0.9 / (first * 0.9 + (1 - first) * 0.2)
    assert bkt.trace([False, True], PARAMS) == pytest.approx([0.3, first, second + (1 - second) * 0.1])


def test_bkt_params_are_validated() -> None:
    with pytest.raises(ValueError, match="p_learn must be a probability"):
        bkt.BKTParams(0.3, 1.5, 0.2, 0.1)
    with pytest.raises(ValueError, match="p_guess \\+ p_slip must be < 1"):
        bkt.BKTParams(0.3, 0.1, 0.6, 0.5)


@given(p=st.floats(0, 1), correct=st.booleans())
def test_bkt_posterior_stays_a_probability_and_moves_the_right_way(p: float, correct: bool) -> None:
    after = bkt.posterior(p, correct, PARAMS)
    assert 0.0 <= after <= 1.0
    assert (after >= p - 1e-12) if correct else (after <= p + 1e-12)


# ----------------------------------------------------------------------------- students
def _holding(bug: str, seed: int = 0) -> Student:
    student = make_student(np.random.default_rng(seed))
    skill = student.skills[MISCONCEPTIONS[bug].component]
    skill.misconception, skill.known = bug, False
    return student


@pytest.mark.parametrize("bug", MISCONCEPTION_IDS)
@given(seed=st.integers(0, 2**32 - 1))
def test_student_holding_a_misconception_answers_by_it(bug: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    student = _holding(bug, seed)
    component = MISCONCEPTIONS[bug].component
    diagnostic = generate_item(component, rng, target=bug)
    attempt = student.attempt(diagnostic, rng)
    assert attempt.answer == MISCONCEPTIONS[bug].answer(diagnostic) and not attempt.correct and attempt.source == bug
    any_item = generate_item(component, rng)  # on every item of the component, the bug decides the answer
    assert student.attempt(any_item, rng).answer == MISCONCEPTIONS[bug].answer(any_item)


def test_same_seed_same_student() -> None:
    assert make_student(np.random.default_rng(7)) == make_student(np.random.default_rng(7))
    assert make_student(np.random.default_rng(7)) != make_student(np.random.default_rng(8))


def test_copied_answers_serve_only_their_item() -> None:
    rng = np.random.default_rng(0)
    student = _holding("add_across")
    leaked = generate_item("frac_add", rng, target="add_across")
    student.copied[leaked.key] = leaked.answer
    assert student.attempt(leaked, rng).correct
    other = generate_item("frac_add", rng, target="add_across", avoid={leaked.key})
    assert student.attempt(other, rng).source == "add_across"  # nothing was learnt


# ----------------------------------------------------------------------------- dynamics
def _removal_rate(move, trials: int = 2000) -> float:
    rng, dyn, removed = np.random.default_rng(0), Dynamics(), 0
    student = _holding("add_across")
    for _ in range(trials):
        student.skills["frac_add"].misconception, student.skills["frac_add"].known = "add_across", False
        move(student, rng, dyn)
        removed += student.skills["frac_add"].misconception is None
    return removed / trials


def test_probing_beats_targeted_telling_beats_untargeted_teaching() -> None:
    probe = _removal_rate(lambda s, r, d: confront(s, "add_across", d.p_fix_probe, r, d))
    explain = _removal_rate(lambda s, r, d: teach(s, "frac_add", ("add_across",), "explain", r, d))
    hint = _removal_rate(lambda s, r, d: teach(s, "frac_add", ("add_across",), "hint", r, d))
    untargeted = _removal_rate(lambda s, r, d: teach(s, "frac_add", (), "explain", r, d))
    wrong_target = _removal_rate(lambda s, r, d: confront(s, "keep_numerators", d.p_fix_probe, r, d))
    assert probe == pytest.approx(0.6, abs=0.04) and explain == pytest.approx(0.35, abs=0.04)
    assert probe > explain > hint > untargeted == wrong_target == 0.0


def test_untargeted_teaching_raises_mastery_slowly_and_prerequisites_slow_it_more() -> None:
    def learnt(component: str, ready: bool, trials: int = 3000) -> float:
        rng, dyn, count = np.random.default_rng(1), Dynamics(), 0
        student = make_student(np.random.default_rng(5))
        for skill in student.skills.values():
            skill.misconception, skill.known = None, ready
        for _ in range(trials):
            student.skills[component].known = False
            instruct(student, component, dyn.learn_explain, rng, dyn)
            count += student.skills[component].known
        return count / trials

    p_learn = make_student(np.random.default_rng(5)).skills["frac_add"].params.p_learn
    assert learnt("frac_add", ready=True) == pytest.approx(p_learn, abs=0.025)
    assert learnt("frac_add", ready=False) == pytest.approx(p_learn * Dynamics().prerequisite_factor, abs=0.02)


def test_long_sessions_tire_the_student() -> None:
    student = make_student(np.random.default_rng(0))
    assert student.energy() == 1.0
    student.activity = student.persona.persistence * 2
    assert student.energy() == pytest.approx(np.exp(-1.0))
    rng, dyn = np.random.default_rng(0), Dynamics()
    tired = sum(confront(_tired_holder(), "add_across", dyn.p_fix_probe, rng, dyn).removed for _ in range(2000)) / 2000
    assert tired == pytest.approx(dyn.p_fix_probe * np.exp(-1.0), abs=0.04)


def _tired_holder() -> Student:
    student = _holding("add_across")
    student.activity = student.persona.persistence * 2
    return student


def test_dynamics_rates_are_validated() -> None:
    with pytest.raises(ValueError, match="p_fix_probe must be a probability"):
        Dynamics(p_fix_probe=1.5)
    assert COMPONENTS["linear_eq"].prerequisites == ("order_ops", "int_subtract")
