"""The contract primitives shared by single-agent and multi-agent envs: the info tables and action coercion.

Both adapters must agree with :mod:`agentgym_envs.core.info` (the checker reads the same tables), and both
turn hostile actions into text through :func:`~agentgym_envs.core.actions.coerce_action`.
"""

from __future__ import annotations

import numpy as np
import pytest

import agentgym_envs
from agentgym_envs.core.actions import coerce_action
from agentgym_envs.core.info import (AGENT_KEY_TYPES, OPTIONAL_KEY_TYPES, RESET_KEY_TYPES, STEP_KEY_TYPES, StepInfo,
                                     info_problems)

MULTI_ID = "agentgym/TicTacToe-v0"


@pytest.mark.parametrize("action, text, kind", [
    ("  go north\n", "go north", None),
    (b"go \xff north", "go \ufffd north", None),
    (np.str_(" look "), "look", None),
    ("take \ud800 lamp", "take \ufffd lamp", None),
    (None, "", "not_text"), (42, "", "not_text"), (object(), "", "not_text"),
    ("   \n\t", "", "empty"), (" " * 101, "", "too_long"), ("x" * 101, "", "too_long"),
])
def test_coerce_action(action, text, kind):
    coerced = coerce_action(action, 100)
    assert (coerced.text, coerced.kind) == (text, kind)
    assert type(coerced.text) is str and (coerced.problem is None) == (kind is None)
    coerced.text.encode("utf-8")  # always safe to forward


def test_step_info_names_every_tabled_key():
    tabled = set(STEP_KEY_TYPES) | set(RESET_KEY_TYPES) | set(OPTIONAL_KEY_TYPES) | set(AGENT_KEY_TYPES)
    assert tabled == set(StepInfo.__annotations__)


def test_info_problems_reports_missing_and_mistyped_keys():
    assert info_problems([], STEP_KEY_TYPES) == ["info should be a dict, got list"]
    problems = info_problems({"won": 1, "valid_actions": [3]}, {"won": (bool,), "score": (float, int)}, OPTIONAL_KEY_TYPES)
    assert problems == ["info['won'] should be bool, got int", "info lacks the standard key 'score'",
                        "info['valid_actions'] must hold strings"]


def test_text_env_infos_conform_to_the_tables():
    env = agentgym_envs.make("agentgym/Maze-Easy-v0")
    _, info = env.reset(seed=0)
    assert info_problems(info, {**RESET_KEY_TYPES, **STEP_KEY_TYPES}, OPTIONAL_KEY_TYPES) == []
    for action in ("north", None, "", "x" * 20_000, "\ud800"):
        obs, *_, info = env.step(action)
        assert info_problems(info, STEP_KEY_TYPES, OPTIONAL_KEY_TYPES) == [] and obs.encode("utf-8")


def test_game_infos_conform_and_a_lone_surrogate_move_forfeits_with_a_utf8_safe_reason():
    env = agentgym_envs.make_multi(MULTI_ID)
    env.reset(seed=0)
    for agent in env.possible_agents:
        assert info_problems(env.infos[agent], AGENT_KEY_TYPES) == []
    offender = env.agent_selection
    env.step("\ud800 centre")
    info = env.infos[offender]
    assert info["action_valid"] is False and "\ufffd" in info["parse_error"]
    info["parse_error"].encode("utf-8")
    env.observe(offender).encode("utf-8")
