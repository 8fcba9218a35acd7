"""Rendering of every multi-agent game: PettingZoo's own ``render_test``, and ``ansi`` after the game is over.

``render_test`` plays random (so illegal, forfeiting) moves and renders after each batch: the game is over
after the first move, and ``render()`` used to return ``None`` in ``ansi`` mode from then on.
"""

from __future__ import annotations

import functools
import importlib
import re
from pathlib import Path

import pytest
from pettingzoo.test import render_test
from pettingzoo.utils.conversions import parallel_to_aec

import agentgym_envs
from agentgym_envs.games.multiagent.rps import parallel_env

MULTI_IDS = agentgym_envs.multi_ids()


def test_every_multi_agent_game_is_rendered() -> None:
    assert len(MULTI_IDS) == 6


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_pettingzoo_render_test(env_id: str) -> None:
    render_test(functools.partial(agentgym_envs.make_multi, env_id))


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_ansi_render_shows_the_final_position_and_result(env_id: str) -> None:
    env = agentgym_envs.make_multi(env_id, render_mode="ansi")
    assert env.render() == ""  # before the first reset: nothing to show, but still a str
    env.reset(seed=0)
    playing = env.render()
    env.step("an illegal move")  # forfeits: the game is over
    for agent in env.agent_iter():
        env.step(None)
    final = env.render()
    assert not env.agents and isinstance(final, str) and final != playing and "forfeit" in final.lower()


def test_parallel_rock_paper_scissors_renders_after_the_match() -> None:
    env = parallel_env(render_mode="ansi")
    assert env.render() == ""
    env.reset(seed=0)
    env.step({a: "rock" for a in env.agents})
    while env.agents:
        env.step({a: "paper" for a in env.agents})
    assert not env.agents and "round" in env.render()
    render_test(lambda render_mode=None: parallel_to_aec(parallel_env(render_mode=render_mode)))


def test_the_documented_api_test_patch_runs(monkeypatch) -> None:
    """docs/sdk.md's snippet for PettingZoo's api_test on text spaces runs and passes as written."""
    docs = (Path(__file__).parents[2] / "docs" / "sdk.md").read_text()
    snippet = next(b for b in re.findall(r"```python\n(.*?)```", docs, re.S) if "api_test(" in b)
    module = importlib.import_module("pettingzoo.test.api_test")
    monkeypatch.setattr(module, "_test_observation_space_compatibility", module._test_observation_space_compatibility)
    exec(compile(snippet, "docs/sdk.md", "exec"), {})  # raises if api_test fails
    assert module._test_observation_space_compatibility.__name__ == "text_aware_check"
