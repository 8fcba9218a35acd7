"""Twenty Questions rules: the object table, the keyword rule, the answerer and the questioner."""

from __future__ import annotations

import pytest

from agentgym_envs.games.twenty_questions import rules
from agentgym_envs.games.twenty_questions.objects import ATTRIBUTES, OBJECTS


def test_the_table_has_100_distinguishable_objects_with_known_attributes():
    assert len(OBJECTS) == 100
    assert len({attrs for attrs in OBJECTS.values()}) == 100, "two objects share every attribute"
    known = {name for name, a in ATTRIBUTES.items() if a.negation_of is None}
    assert all(attrs <= known for attrs in OBJECTS.values())
    assert set(rules.EASY_OBJECTS) <= set(OBJECTS)


@pytest.mark.parametrize("name", list(ATTRIBUTES))
def test_each_canonical_question_asks_its_own_attribute(name):
    assert rules.match_attribute(ATTRIBUTES[name].question) == (name, "")


@pytest.mark.parametrize("question, attribute", [
    ("Does it have four legs?", "four_legs"), ("does it have legs", "legs"), ("Is it bigger than a car?", "big"),
    ("Is it smaller than a breadbox?", "small"), ("Can you eat it?", "food"), ("Is it man-made?", "man_made"),
    ("IS IT FOUND IN THE KITCHEN???", "kitchen"), ("Does it live in the ocean?", "water"),
])
def test_keyword_rule_examples(question, attribute):
    assert rules.match_attribute(question)[0] == attribute


@pytest.mark.parametrize("question, why", [
    ("Is it a living animal?", "several properties"), ("Is it nice?", "no known property"), ("", "no known property"),
])
def test_unclear_questions_are_not_understood(question, why):
    attribute, reason = rules.match_attribute(question)
    assert attribute is None and why in reason


def test_negated_attributes_answer_the_opposite():
    assert rules.answer("elephant", "big") and not rules.answer("elephant", "small")
    assert rules.answer("mouse", "small") and rules.canonical("small", True) == ("big", False)


def test_guesses_ignore_articles_and_case():
    assert rules.object_named("The Ice Cream") == "ice cream" and rules.object_named("a dog") == "dog"
    assert rules.object_named("unicorn") is None


@pytest.mark.parametrize("difficulty", sorted(rules.PRESETS))
def test_questioner_finds_every_object_within_the_budget(difficulty):
    preset = rules.PRESETS[difficulty]
    for secret in preset.objects:
        facts, wrong, used = {}, [], 0
        while True:
            action = rules.solver_action(preset.objects, facts, wrong)
            used += 1
            if action.startswith("guess "):
                name = rules.object_named(action[6:])
                if name == secret:
                    break
                wrong.append(name)
                continue
            attribute, _ = rules.match_attribute(action)
            base, value = rules.canonical(attribute, rules.answer(secret, attribute))
            facts[base] = value
        assert used <= preset.max_questions, (secret, used)
