"""The domain model: diagnostic items, misconceptions as buggy procedures, answers, leaks and the interpreter."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym_envs.tutoring.answers import fmt, number_values, value
from agentgym_envs.tutoring.domain import (
    COMPONENT_IDS, COMPONENTS, MISCONCEPTION_IDS, MISCONCEPTIONS, Item, consistent_misconceptions, generate_item,
    wrong_answer,
)
from agentgym_envs.tutoring.interpreter import addressed_misconceptions, interpret
from agentgym_envs.tutoring.leaks import revealed_items

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


# ----------------------------------------------------------------------------- the catalogue
def test_every_component_has_documented_misconceptions_and_known_prerequisites() -> None:
    assert set(COMPONENT_IDS) == {"frac_compare", "frac_add", "decimal_compare", "int_subtract", "order_ops", "linear_eq"}
    for component in COMPONENTS.values():
        assert len(component.misconceptions) == 2
        assert set(component.prerequisites) <= set(COMPONENT_IDS) and component.id not in component.prerequisites
    for bug in MISCONCEPTIONS.values():
        assert bug.id in COMPONENTS[bug.component].misconceptions
        assert bug.citation and any(ch.isdigit() for ch in bug.citation), f"{bug.id} cites no dated source"


def test_teaching_texts_reveal_no_numbers_and_target_exactly_what_they_say() -> None:
    for bug in MISCONCEPTIONS.values():
        assert not any(ch.isdigit() for ch in bug.explanation + bug.counter_example), bug.id
        assert addressed_misconceptions(bug.explanation, bug.component) == (bug.id,)
    for component in COMPONENTS.values():
        assert addressed_misconceptions(component.explanation) == ()  # an untargeted explanation
        assert addressed_misconceptions(component.hint) == ()


# ----------------------------------------------------------------------------- items and bugs
@pytest.mark.parametrize("bug", MISCONCEPTION_IDS)
@given(seed=SEEDS)
def test_misconception_gives_its_signature_wrong_answer_on_its_items(bug: str, seed: int) -> None:
    item = generate_item(MISCONCEPTIONS[bug].component, np.random.default_rng(seed), target=bug)
    answer = MISCONCEPTIONS[bug].answer(item)
    assert not item.is_correct(answer)
    assert value(answer) not in {value(MISCONCEPTIONS[m].answer(item)) for m in COMPONENTS[item.component].misconceptions
                                 if m != bug}, "two bugs give the same wrong answer: the item cannot tell them apart"
    assert consistent_misconceptions([(item, answer)]) == [bug]


@pytest.mark.parametrize("component", COMPONENT_IDS)
@given(seed=SEEDS)
def test_items_are_isomorphic_well_formed_and_seeded(component: str, seed: int) -> None:
    item = generate_item(component, np.random.default_rng(seed))
    again = generate_item(component, np.random.default_rng(seed))
    assert item == again
    assert item.component == component and item.form in COMPONENTS[component].forms
    assert item.is_correct(item.answer) and value(item.answer) is not None
    if not item.options:
        assert item.answer_value not in item.shown_values()  # quoting the question reveals nothing
    assert not item.is_correct(wrong_answer(item, np.random.default_rng(seed)))


def test_generator_avoids_given_items() -> None:
    rng = np.random.default_rng(0)
    used = {generate_item("int_subtract", rng).key for _ in range(50)}
    fresh = [generate_item("int_subtract", rng, avoid=used) for _ in range(50)]
    assert not used & {item.key for item in fresh}


@pytest.mark.parametrize(("bug", "item", "expected"), [
    ("add_across", Item("frac_add", "add", (1, 2, 1, 3), "1/2 + 1/3 = ?", "5/6"), "2/5"),
    ("keep_numerators", Item("frac_add", "add", (1, 2, 1, 3), "1/2 + 1/3 = ?", "5/6"), "2/6"),
    ("longer_is_larger", Item("decimal_compare", "cmp", (1, 2), "Which is larger: 0.8 or 0.45?", "0.8", ("0.8", "0.45")), "0.45"),
    ("shorter_is_larger", Item("decimal_compare", "cmp", (1, 2), "Which is larger: 0.4 or 0.45?", "0.45", ("0.4", "0.45")), "0.4"),
    ("double_negative_ignored", Item("int_subtract", "sub_neg", (5, -3), "5 - (-3) = ?", "8"), "2"),
    ("sign_dropped", Item("int_subtract", "small_minus_large", (3, 8), "3 - 8 = ?", "-5"), "5"),
    ("left_to_right", Item("order_ops", "add_mul", (2, 3, 4), "2 + 3 × 4 = ?", "14"), "20"),
    ("addition_first", Item("order_ops", "sub_add", (9, 3, 2), "9 - 3 + 2 = ?", "8"), "4"),
    ("sign_kept_when_moving", Item("linear_eq", "plus", (3, 5, 17), "Solve 3x + 5 = 17. x = ?", "4"), "22/3"),
    ("coefficient_as_addend", Item("linear_eq", "plus", (3, 5, 17), "Solve 3x + 5 = 17. x = ?", "4"), "9"),
    ("larger_denominator_larger", Item("frac_compare", "cmp", (2, 3, 3, 7), "Which is larger: 2/3 or 3/7?", "2/3", ("2/3", "3/7")), "3/7"),
    ("gap_thinking", Item("frac_compare", "cmp", (1, 2, 3, 5), "Which is larger: 1/2 or 3/5?", "3/5", ("1/2", "3/5")), "1/2"),
])
def test_buggy_procedures_match_the_literature_examples(bug: str, item: Item, expected: str) -> None:
    assert MISCONCEPTIONS[bug].answer(item) == expected


# ----------------------------------------------------------------------------- answers and leaks
def test_answer_values_compare_meanings_not_spellings() -> None:
    assert value("10/12") == value("5/6") == Fraction(5, 6)
    assert value("x = -4") == -4 and value("0.80") == Fraction(4, 5) and value("five") is None
    assert fmt(Fraction(6, 3)) == "2"
    assert number_values("3-8 and (-8) and negative 2") == [3, 8, -8, -2]
    assert number_values("9" * 5000) == []  # no giant ints (and no int-parsing limit errors)


def test_leaks_need_the_answer_of_a_seen_item() -> None:
    item = Item("decimal_compare", "cmp", (1, 2), "Which is larger: 0.45 or 0.8?", "0.8", ("0.45", "0.8"))
    assert revealed_items("0.8 is larger than 0.45.", [item]) == [item]
    assert revealed_items("It's 0.80.", [item]) == [item]
    assert revealed_items("Compare 0.45 and 0.8 place by place.", [item]) == []
    assert revealed_items("Which is larger: 0.45 or 0.8? Think about tenths.", [item]) == []
    equation = Item("linear_eq", "plus", (3, 5, 17), "Solve 3x + 5 = 17. x = ?", "4")
    assert revealed_items("So x = 4.", [equation]) == [equation]
    assert revealed_items("Subtract 5 from both sides, then divide by 3.", [equation]) == []


# ----------------------------------------------------------------------------- the interpreter
@pytest.mark.parametrize(("text", "expected"), [
    ("Okay, that's all for today. Bye!", "end_session()"),
    ("Here's another problem, try this one.", "ask_item(frac_add)"),
    ("Would you really add the denominators?", "probe(frac_add, add_across)"),
    ("We never add the denominators.", "explain(frac_add, addresses add_across)"),
    ("What happens with decimals here?", "hint(decimal_compare)"),
    ("Let's talk about the order of operations.", "explain(order_ops)"),
    ("You are doing great.", "talk(frac_add)"),
    ("Is a missing piece always the same size?", "probe(frac_compare, gap_thinking)"),
])
def test_free_text_rules(text: str, expected: str) -> None:
    assert interpret(text, "frac_add").canonical() == expected


@given(st.text(max_size=300))
def test_interpreter_reads_any_text(text: str) -> None:
    move = interpret(text, "linear_eq")
    assert move.kind in ("ask_item", "hint", "explain", "probe", "talk", "end_session")
