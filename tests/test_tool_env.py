"""ToolEnv: decorated methods become OpenAI tool schemas; calls parse safely and dispatch with checked types."""

from __future__ import annotations

from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_envs.core import InvalidAction, Step, ToolEnv, parse_call, tool


class Shop(ToolEnv):
    def _reset(self, options):
        self.cart = []
        return "Welcome.", {"instruction": "Buy something."}

    @tool
    def add(self, item: str, quantity: int = 1, size: Literal["S", "M", "L"] = "M") -> str:
        """Add an item to the cart.

        Args:
            item: product name.
            quantity: how many.
            size: clothing size.
        """
        self.cart.append((item, quantity, size))
        return f"added {quantity} {item} ({size})"

    @tool
    def checkout(self, budget: float) -> Step:
        """Pay and finish."""
        return Step(f"paid within {budget}", reward=1.0, terminated=True, won=True)


def test_schema_from_signature_hints_and_docstring():
    schemas = {t["function"]["name"]: t["function"] for t in Shop().tools}
    add = schemas["add"]
    assert add["description"] == "Add an item to the cart."
    assert add["parameters"]["required"] == ["item"]
    assert add["parameters"]["properties"]["quantity"] == {"type": "integer", "description": "how many."}
    assert add["parameters"]["properties"]["size"]["enum"] == ["S", "M", "L"]
    assert schemas["checkout"]["parameters"]["properties"]["budget"]["type"] == "number"


@pytest.mark.parametrize("action, expected", [
    ('add("sock")', "added 1 sock (M)"),
    ("add(item='hat', quantity=2, size='L')", "added 2 hat (L)"),
    ('{"name": "add", "arguments": {"item": "cap", "quantity": 3.0}}', "added 3 cap (M)"),
    ('{"name": "add", "arguments": "{\\"item\\": \\"scarf\\"}"}', "added 1 scarf (M)"),
])
def test_calls_dispatch(action, expected):
    env = Shop()
    env.reset(seed=0)
    obs, _, _, _, info = env.step(action)
    assert obs == expected and info["action_valid"] and "tools" in info


@pytest.mark.parametrize("action, message", [
    ("remove('x')", "Unknown tool 'remove'"),
    ("add()", "missing a required argument"),
    ("add(item=1)", "expected string, got int"),
    ("add('x', size='XL')", "expected one of"),
    ("add('x', quantity=True)", "expected integer"),
    ("add(item=__import__('os').getcwd())", "must be literals"),
    ("add(**{'item': 'x'})", "not allowed"),
    ('{"name": "add", "arguments": [1]}', "must be a JSON object"),
    ('{"name": "add"', "malformed JSON"),
    ("import os", "expected name("),
])
def test_bad_calls_are_invalid_actions(action, message):
    env = Shop()
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(action)
    assert message in obs and not info["action_valid"] and reward == 0 and not terminated


def test_tool_returning_step_ends_episode():
    env = Shop()
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("checkout(10)")
    assert reward == 1.0 and terminated and info["won"]


@settings(max_examples=300)
@given(st.text(max_size=200))
def test_parse_call_only_raises_invalid_action(text):
    try:
        name, args, kwargs = parse_call(text)
    except InvalidAction:
        return
    assert isinstance(name, str) and isinstance(args, list) and isinstance(kwargs, dict)


class Documented(ToolEnv):
    def _reset(self, options):
        return "", {}

    @tool
    def find(self, query: str, limit: int | None = None) -> str:
        """Find things.

        Args:
            query: what to look for, written
                over two lines.
            limit: at most this many.
        """
        return f"{query}:{limit}"


def test_schema_handles_optional_and_multiline_descriptions():
    props = Documented().tools[0]["function"]["parameters"]["properties"]
    assert props["query"]["description"] == "what to look for, written over two lines."
    assert props["limit"] == {"type": "integer", "description": "at most this many."}
    env = Documented()
    env.reset(seed=0)
    assert env.step("find('x', limit=2)")[0] == "x:2"
    assert "Invalid call to find(query: str" in env.step("find()")[0]
