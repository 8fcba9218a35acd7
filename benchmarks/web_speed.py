"""Speed and scores of the web shop: step latency in text and browser modes, search latency at scale.

Measures, in one run:

* text mode: median ``env.step`` latency of the scripted expert over whole test-split episodes
  (target ≤ 1 ms), through ``gymnasium.make`` as users run it; also the median ``reset``;
* browser mode: median ``env.step`` latency with real headless Chromium (target ≤ 200 ms), split into
  clicks and searches (a search types the query key by key, so it costs more);
* search: median BM25 latency at ``--products`` products (default 100,000; target ≤ 5 ms), on uncached
  WebShop-style queries (instructions of test goals), plus the catalogue and index build times (the
  first run builds and caches them on disk; later runs load them);
* scores on the whole test split (500 goals, text mode): the scripted expert and WebShop's rule baseline
  (search the instruction, click the first result, buy).

Only ``env.step``/``env.reset``/search calls are timed, not the choice of action.

    python benchmarks/web_speed.py [--browser-episodes 6] [--products 100000] [--no-browser]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import gymnasium

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.web.catalogue import load_catalogue
from agentgym_envs.web.expert import rule_agent
from agentgym_envs.web.search import load_search
from agentgym_envs.web.tasks import load_goals

Policy = Callable[[Any], str]


def expert(env: Any) -> str:
    return env.unwrapped.expert_action()


def rule(env: Any) -> str:
    return rule_agent(env)


def run_episodes(env: Any, policy: Policy, tasks: range) -> tuple[list[float], list[float], list[float], dict]:
    """Step latencies, reset latencies and final rewards of one episode per task; latencies by verb."""
    steps, resets, rewards, by_verb = [], [], [], {"search": [], "click": []}
    for i in tasks:
        start = time.perf_counter()
        env.reset(options={"task_index": i})
        resets.append(time.perf_counter() - start)
        done, reward = False, 0.0
        while not done:
            action = policy(env)
            start = time.perf_counter()
            _, reward, terminated, truncated, _ = env.step(action)
            elapsed = time.perf_counter() - start
            steps.append(elapsed)
            by_verb["search" if action.startswith("search") else "click"].append(elapsed)
            done = terminated or truncated
        rewards.append(float(reward))
    return steps, resets, rewards, by_verb


def ms(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):.3f} ms" if values else "n/a"


def search_latency(num_products: int, queries: list[str]) -> tuple[float, float, float]:
    """Build (or load) the catalogue and index, then the median uncached query time."""
    start = time.perf_counter()
    catalogue = load_catalogue(num_products)
    built = time.perf_counter() - start
    start = time.perf_counter()
    search = load_search(catalogue)
    indexed = time.perf_counter() - start
    times = []
    for query in queries:
        start = time.perf_counter()
        search._search(query)  # the uncached path (search() memoises repeated queries)
        times.append(time.perf_counter() - start)
    return built, indexed, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser-episodes", type=int, default=6)
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    rows = []

    env = gymnasium.make("agentgym/WebShop-v0", split="test")
    steps, resets, expert_rewards, _ = run_episodes(env, expert, range(500))
    rows.append(("text step (expert)", ms(steps), "≤ 1 ms", f"{len(steps)} steps"))
    rows.append(("text reset", ms(resets), "", f"{len(resets)} resets"))
    _, _, rule_rewards, _ = run_episodes(env, rule, range(500))
    rows.append(("expert score, test split", f"{statistics.mean(expert_rewards):.3f}", "≥ 0.9",
                 f"success {sum(r >= 1 for r in expert_rewards) / 500:.1%}"))
    rows.append(("rule baseline score, test split", f"{statistics.mean(rule_rewards):.3f}", "",
                 f"success {sum(r >= 1 for r in rule_rewards) / 500:.1%}"))

    if not args.no_browser:
        browser = gymnasium.make("agentgym/WebShop-Browser-v0", split="test")
        browser.reset(options={"task_index": 0})  # starts Chromium and warms the first page
        steps, resets, _, by_verb = run_episodes(browser, expert, range(args.browser_episodes))
        rows.append(("browser step (expert)", ms(steps), "≤ 200 ms", f"{len(steps)} steps"))
        rows.append(("  browser click", ms(by_verb["click"]), "", f"{len(by_verb['click'])} clicks"))
        rows.append(("  browser search (typing)", ms(by_verb["search"]), "", f"{len(by_verb['search'])} searches"))
        rows.append(("browser reset", ms(resets), "", f"{len(resets)} resets"))
        browser.close()

    goals = load_goals(load_catalogue())
    queries = [goals.goals[i].instruction for i in goals.split("test")]
    built, indexed, median = search_latency(args.products, queries)
    rows.append((f"search @ {args.products:,} products", f"{1000 * median:.3f} ms", "≤ 5 ms",
                 f"{len(queries)} queries"))
    rows.append(("  catalogue generate/load", f"{built:.1f} s", "", "cached on disk after the first run"))
    rows.append(("  index build/load", f"{indexed:.1f} s", "", ""))

    print("| measurement | value | target | note |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
