"""The browser mode with real headless Chromium: the contract, parity with text mode, failures, parallelism.

Needs the system's ``chromium`` and ``chromium-driver`` (CI installs them); skipped where they are missing.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from agentgym_envs.checker import check_env
from agentgym_envs.core.errors import InfraError
from agentgym_envs.web.browser import BrowserConfig, BrowserPool
from agentgym_envs.web.env import WebShopEnv
from agentgym_envs.web.expert import rule_agent

pytestmark = pytest.mark.skipif(
    not (os.path.exists(BrowserConfig().chromium) and os.path.exists(BrowserConfig().chromedriver)),
    reason="needs chromium and chromedriver (apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def pool():
    pool = BrowserPool()
    yield pool
    pool.close()


def _text_part(observation: str) -> str:
    return observation.split("\n\nClickable elements:")[0]


def _sequences(env: WebShopEnv, task: int, rng: np.random.Generator) -> list[list[str]]:
    """Action sequences to replay: the expert's, the rule baseline's, and a random walk that ends in a purchase."""
    out = []
    for policy in (lambda e: e.expert_action(), rule_agent, lambda e: e.random_action(rng)):
        env.reset(options={"task_index": task})
        actions, done = [], False
        while not done and len(actions) < 8:
            actions.append(policy(env))
            _, _, terminated, truncated, _ = env.step(actions[-1])
            done = terminated or truncated
        out.append(actions + ([] if done else ["click[back to search]", "search[gift]", "click[#3]"]))
    return out


def test_check_env_passes_in_browser_mode() -> None:
    report = check_env("agentgym/WebShop-Browser-v0")
    assert report.passed, str(report)


def test_same_actions_give_same_pages_and_rewards_in_text_and_browser(pool: BrowserPool) -> None:
    text, browser = WebShopEnv(split="test"), WebShopEnv(mode="browser", split="test", browser_pool=pool)
    rng = np.random.default_rng(0)
    rewards = []
    for task in (5, 17, 42):
        for actions in _sequences(text, task, rng):
            text_obs, _ = text.reset(options={"task_index": task})
            browser_obs, _ = browser.reset(options={"task_index": task})
            assert _text_part(browser_obs) == text_obs
            for action in actions:
                if action.startswith("click[#"):  # ids exist in the browser only: name the same element in text
                    label = dict(browser._read.clickables).get(action[7:-1], "?")
                    t = text.step(f"click[{label}]")
                else:
                    t = text.step(action)
                b = browser.step(action)
                assert _text_part(b[0]) == t[0] and b[1:4] == t[1:4], action
                assert b[4]["state_key"] == t[4]["state_key"] and b[4].get("valid_actions") == t[4].get("valid_actions")
                if t[2] or t[3]:
                    rewards.append(b[1])
                    break
    browser.close()
    assert len(rewards) >= 6 and max(rewards) == 1.0 and min(rewards) < 1.0


def test_screenshot_click_by_id_and_no_script_runs(pool: BrowserPool) -> None:
    env = WebShopEnv(mode="browser", split="test", browser_pool=pool)
    env.reset(options={"task_index": 0})
    obs, _, _, _, info = env.step("search[<script>alert(1)</script> <img src=x onerror=alert(2)> coffee]")
    assert info["action_valid"] and "Page 1 (Total results:" in obs
    driver = env._tab.browser.driver
    assert driver.execute_script("return document.scripts.length") == 0
    assert driver.execute_script("return document.querySelectorAll('img').length") == 0
    assert "<script" not in driver.page_source.lower()
    first_id = env._read.clickables[0][0]
    obs, _, _, _, info = env.step(f"click[#{first_id}]")
    assert info["action_valid"] and env.location.kind == "search"  # the first clickable is Back to Search
    assert env.screenshot().startswith(b"\x89PNG")
    env.close()


def test_killing_chromium_truncates_with_infra_error_and_reset_recovers() -> None:
    psutil = pytest.importorskip("psutil")
    private = BrowserPool()
    env = WebShopEnv(mode="browser", split="test", browser_pool=private)
    try:
        env.reset(options={"task_index": 7})
        env.step(env.expert_action())
        driver = env._tab.browser.driver
        for process in psutil.Process(driver.service.process.pid).children(recursive=True):
            process.kill()
        obs, reward, terminated, truncated, info = env.step(env.expert_action())
        assert truncated and not terminated and reward == 0.0 and info["infra_error"]
        assert "not your fault" in obs
        assert env.step("click[buy now]")[4]["infra_error"]  # stays failed until reset
        obs, info = env.reset(options={"task_index": 7})
        assert info["infra_error"] is None and obs.startswith("WebShop [SEP] Instruction:")
        while True:
            _, reward, terminated, truncated, info = env.step(env.expert_action())
            if terminated or truncated:
                break
        assert reward == 1.0 and info["infra_error"] is None
    finally:
        env.close()
        private.close()


def test_a_missing_browser_is_an_infra_error() -> None:
    broken = BrowserPool(BrowserConfig(chromium="/nonexistent/chromium"))
    env = WebShopEnv(mode="browser", split="test", browser_pool=broken)
    obs, info = env.reset(options={"task_index": 0})
    assert "not found" in info["infra_error"] and "apt-get install" in obs
    with pytest.raises(InfraError):
        broken.lease()


def test_thirty_two_envs_in_threads_share_one_server() -> None:
    """32 browser envs in 32 threads (four Chromiums, eight tabs each) shop at once, each on its own task,
    with the rule baseline (search, open the first hit, buy); every reward must equal text mode's."""
    private = BrowserPool()
    text = WebShopEnv(split="eval")
    expected = {}
    for task in range(32):
        text.reset(options={"task_index": task})
        expected[task] = _run(text, rule_agent)
    results: dict[int, float] = {}
    errors: list[str] = []

    def shop(task: int) -> None:
        env = WebShopEnv(mode="browser", split="eval", browser_pool=private)
        try:
            _, info = env.reset(options={"task_index": task})
            assert info["infra_error"] is None, info["infra_error"]
            results[task] = _run(env, rule_agent)
        except Exception as e:  # collected and asserted on in the main thread
            errors.append(f"task {task}: {type(e).__name__}: {e}")
        finally:
            env.close()

    try:
        threads = [threading.Thread(target=shop, args=(task,)) for task in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors[:3]
        assert results == expected and len(set(expected.values())) > 1
        assert len(private.browsers) == 4
    finally:
        private.close()


def _run(env: WebShopEnv, agent) -> float:
    """One episode with ``agent``; every step must be valid and free of infrastructure errors."""
    for _ in range(20):
        _, reward, terminated, truncated, info = env.step(agent(env))
        assert info["action_valid"] and info["infra_error"] is None, info
        if terminated or truncated:
            return reward
    raise AssertionError("the episode did not end")
