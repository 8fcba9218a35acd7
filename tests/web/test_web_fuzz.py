"""Any action is safe in the text modes: nothing raises, bad actions change nothing, hostile queries are just text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_envs.fuzz import ONE_MB, hostile_actions
from agentgym_envs.web.env import WebShopEnv
from agentgym_envs.web.html_view import render_page

ENVS = {mode: WebShopEnv(mode=mode, split="test") for mode in ("text", "text_rich")}
ACTIONS = st.one_of(
    st.text(max_size=300),
    st.builds(lambda v, a: f"{v}[{a}]", st.sampled_from(["search", "click", "Search", "CLICK", "buy"]),
              st.text(max_size=80)),
    st.sampled_from([a for a in hostile_actions() if isinstance(a, str) and len(a) < 1_000]),
)


@pytest.mark.parametrize("mode", ["text", "text_rich"])
@settings(max_examples=150, deadline=None)
@given(prefix=st.lists(st.sampled_from(["expert", "random"]), max_size=4), action=ACTIONS)
def test_any_action_is_safe(mode: str, prefix: list[str], action: str) -> None:
    env = ENVS[mode]
    env.reset(options={"task_index": 11})
    for kind in prefix:
        _, _, terminated, truncated, _ = env.step(env.expert_action() if kind == "expert" else env.valid_actions()[0]
                                                  if env.valid_actions() else "search[gift]")
        if terminated or truncated:
            env.reset(options={"task_index": 11})
    key, observation = env.state_key(), env.last_observation
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and 0.0 <= reward <= 1.0
    if not info["action_valid"]:
        assert reward == 0.0 and not terminated and env.state_key() == key and env.last_observation == observation
        assert info["parse_error"]


@pytest.mark.parametrize("query", ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "{{7*7}} ${x}",
                                   "'; DROP TABLE products; --", "a" * 400])
def test_hostile_queries_are_plain_searches_and_render_escaped(query: str) -> None:
    env = ENVS["text"]
    env.reset(options={"task_index": 3})
    obs, _, _, _, info = env.step(f"search[{query}]")
    assert info["action_valid"] and "Total results:" in obs
    page = env._model_page()
    assert page.location.query == query.lower()
    html = render_page(page, "sid")
    assert "<script" not in html.lower() and "<img" not in html.lower()


def test_one_megabyte_queries_are_refused_with_an_explanation() -> None:
    env = ENVS["text"]
    env.reset(options={"task_index": 3})
    for action in ("search[" + "a" * ONE_MB + "]", "search[" + "<script>" * (ONE_MB // 8) + "]"):
        obs, reward, terminated, truncated, info = env.step(action)
        assert not info["action_valid"] and "characters long" in obs and reward == 0.0
    obs, _, _, _, info = env.step("search[" + "b " * 300 + "]")  # within the action limit, over the query limit
    assert not info["action_valid"] and "limit is 500" in obs
