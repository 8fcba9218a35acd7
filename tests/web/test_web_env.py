"""The web shop env in its text modes: WebShop's pages and grammar, the expert, the rule baseline, the contract."""

from __future__ import annotations

import re
import statistics

import gymnasium
import pytest

import agentgym_envs
from agentgym_envs.checker import check_env, same
from agentgym_envs.web.env import WebShopEnv
from agentgym_envs.web.expert import rule_agent
from agentgym_envs.web.shop import PRODUCT_WINDOW

TEXT_IDS = ["agentgym/WebShop-v0", "agentgym/WebShop-Rich-v0"]
RESULTS_PAGE = re.compile(
    r"^Instruction: \[SEP\] .+ \[SEP\] Back to Search \[SEP\] Page 1 \(Total results: 50\) \[SEP\] Next > "
    r"(\[SEP\] B0[0-9A-Z]{8} \[SEP\] [^[]+ \[SEP\] \$\d+\.\d\d ?){10}$")


def _episode(env, act) -> tuple[float, dict]:
    while True:
        _, reward, terminated, truncated, info = env.step(act(env))
        if terminated or truncated:
            return reward, info


def test_ids_are_registered() -> None:
    ids = ["agentgym/WebShop-Browser-v0", "agentgym/WebShop-Rich-v0", "agentgym/WebShop-v0"]
    assert agentgym_envs.env_ids("web") == ids


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_check_env_passes(env_id: str) -> None:
    report = check_env(env_id)
    assert report.passed, str(report)


def test_webshop_text_pages() -> None:
    env = gymnasium.make("agentgym/WebShop-v0", split="test")
    obs, info = env.reset(options={"task_index": 0})
    assert obs == f"WebShop [SEP] Instruction: [SEP] {info['instruction']} [SEP] Search"
    assert info.get("valid_actions") is None and info["available_actions"] == {"has_search_bar": True, "clickables": []}
    obs, *_ = env.step("search[coffee beans]")
    assert RESULTS_PAGE.match(obs), obs
    obs, _, _, _, info = env.step("click[next >]")
    assert "Page 2 (Total results: 50) [SEP] < Prev [SEP] Next >" in obs
    asin = info["available_actions"]["clickables"][3]
    obs, _, _, _, info = env.step(f"click[{asin.upper()}]")  # WebShop lowercases click arguments
    assert info["action_valid"] and " [SEP] Back to Search [SEP] < Prev [SEP] " in obs
    assert re.search(r"\[SEP\] Price: \$\d+\.\d\d \[SEP\] Rating: (\d\.\d|N\.A\.) \[SEP\] Description \[SEP\] "
                     r"Features \[SEP\] Reviews \[SEP\] Buy Now$", obs), obs
    obs, *_ = env.step("click[reviews]")
    assert obs.split(" [SEP] ")[2:4] == ["Back to Search", "< Prev"]
    obs, _, _, _, info = env.step("click[< prev]")
    assert obs.endswith("Buy Now") and env.unwrapped.location.kind == "item"


def test_pagination_is_ten_per_page_over_fifty_results() -> None:
    env = WebShopEnv(split="test")
    env.reset(options={"task_index": 1})
    env.step("search[shoes]")
    seen = []
    for page in range(1, 6):
        products = [a for a in env.valid_actions() if re.fullmatch(r"click\[b0[0-9a-z]{8}\]", a)]
        assert len(products) == PRODUCT_WINDOW
        seen += products
        assert ("click[next >]" in env.valid_actions()) == (page < 5)
        if page < 5:
            env.step("click[next >]")
    assert len(set(seen)) == 50
    _, _, _, _, info = env.step("click[next >]")
    assert not info["action_valid"]


def test_options_are_chosen_and_shown_in_rich_mode() -> None:
    env = WebShopEnv(mode="text_rich", split="test")
    env.reset(options={"task_index": 0})
    goal = env.goal
    env.step(f"search[{goal.name}]")
    env.step(f"click[{goal.asin.lower()}]")
    name, value = goal.options[0]
    obs, *_ = env.step(f"click[{value}]")
    assert obs.startswith(f"You have clicked {value}.\n")
    assert f"  [clicked button] {value} [clicked button_]" in obs and "[button] Buy Now [button_]" in obs
    env.step("click[< prev]")
    obs = env.unwrapped.last_observation
    assert f"\n[clicked button] {goal.asin} [clicked button_]" in obs  # opened products are marked


def test_invalid_actions_are_no_ops_that_explain() -> None:
    env = WebShopEnv(split="test")
    env.reset(options={"task_index": 2})
    key = env.state_key()
    cases = {
        "buy it now": "Actions are search[keywords]",
        "click[buy now]": "There is no 'buy now' to click",
        "search[]": "query is empty",
        "search[" + "x" * 600 + "]": "the limit is 500",
    }
    for action, reason in cases.items():
        obs, reward, terminated, truncated, info = env.step(action)
        assert reason in obs and not info["action_valid"] and reward == 0.0 and not (terminated or truncated)
        assert env.state_key() == key
    env.step("search[red shoes]")
    _, _, _, _, info = env.step("search[blue shoes]")
    assert "no search box" in info["parse_error"]


def test_expert_reaches_at_least_090_on_the_whole_test_split() -> None:
    env = gymnasium.make("agentgym/WebShop-v0", split="test")
    rewards = []
    for index in range(env.unwrapped.num_tasks):
        env.reset(options={"task_index": index})
        reward, info = _episode(env, lambda e: e.unwrapped.expert_action())
        assert info["action_valid"]
        rewards.append(reward)
    assert statistics.mean(rewards) >= 0.9


def test_rule_baseline_score_is_reported() -> None:
    env = gymnasium.make("agentgym/WebShop-v0", split="test")
    rewards = []
    for index in range(200):
        env.reset(options={"task_index": index})
        rewards.append(_episode(env, rule_agent)[0])
    score, success = statistics.mean(rewards), sum(r == 1.0 for r in rewards) / len(rewards)
    print(f"\nrule baseline on 200 test goals: score {score:.3f}, success {success:.1%}")
    assert 0.3 < score < 0.9 and success < 0.3  # WebShop's own rule baseline: score 0.456, success 9.6%


def test_reset_by_seed_is_deterministic_and_weighted() -> None:
    a, b = WebShopEnv(split="train"), WebShopEnv(split="train")
    for seed in range(5):
        assert same(a.reset(seed=seed), b.reset(seed=seed))
    indices = {a.reset(seed=s)[1]["task_id"] for s in range(50)}
    assert len(indices) > 40


def test_snapshot_restores_mid_episode() -> None:
    env = WebShopEnv(split="test")
    env.reset(options={"task_index": 4})
    for _ in range(2):
        env.step(env.expert_action())
    snapshot = env.get_state()
    first = [env.step(env.expert_action()) for _ in range(3)]
    fresh = WebShopEnv(split="test")
    fresh.reset(seed=9)
    fresh.set_state(snapshot)
    assert same(first, [fresh.step(fresh.expert_action()) for _ in range(3)])
    assert len(snapshot) < 10_000  # the catalogue and tasks are not in it


def test_attributes_sub_page_when_enabled() -> None:
    env = gymnasium.make("agentgym/WebShop-v0", split="test", show_attributes=True)
    env.reset(options={"task_index": 6})
    goal = env.unwrapped.goal
    env.step(f"search[{goal.name}]")
    obs, *_ = env.step(f"click[{goal.asin.lower()}]")
    assert obs.endswith("Description [SEP] Features [SEP] Reviews [SEP] Attributes [SEP] Buy Now")
    obs, *_ = env.step("click[attributes]")
    product = env.unwrapped.shop.catalogue.get(goal.asin)
    assert obs.split(" [SEP] ")[4:] == list(product.attributes)
