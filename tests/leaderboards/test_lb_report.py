"""Reports: the statistics, the Markdown table, and the HTML page opened in headless Chromium."""

from __future__ import annotations

import itertools
import re
import shutil
from math import comb
from pathlib import Path

import pytest
from lb_helpers import REPO, agentgym, write_suite

from leaderboards.report import collect, markdown
from leaderboards.runner import BenchOptions, run_bench
from leaderboards.stats import macro_rate_ci, pass_at_k, wilson

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def test_wilson_interval_matches_the_textbook_values():
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_pass_at_k_is_the_chance_that_a_k_subset_holds_a_success(n):
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(outcomes, k))
            assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / comb(n, k))


def test_overall_success_weighs_families_equally_and_keeps_uncertainty_at_the_edges():
    point, lo, hi = macro_rate_ci([(90, 100), (0, 10)])
    assert point == pytest.approx(0.45) and lo < point < hi
    point, lo, hi = macro_rate_ci([(16, 16)])
    assert point == 1.0 and hi == 1.0 and 0.75 < lo < 0.95  # all wins out of 16 is not certainty
    assert macro_rate_ci([(3, 7)])[1:] == pytest.approx(_agresti_coull(3, 7))


def _agresti_coull(k, n, z=1.959963984540054):
    n_ = n + z * z
    p = (k + z * z / 2) / n_
    half = z * (p * (1 - p) / n_) ** 0.5
    return k / n - half, k / n + half


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Random and expert on a small suite with repeated tasks (so pass@2 is defined)."""
    root = tmp_path_factory.mktemp("report")
    suite = write_suite(root / "suite.yaml", [
        {"env": "agentgym/Maze-Easy-v0", "tasks": 3, "repeats": 2},
        {"env": "agentgym/TicTacToe-VsRandom-v0", "tasks": 3, "repeats": 2},
        {"env": "agentgym/Household-PickPlace-v0", "split": "valid_seen", "tasks": 2, "repeats": 2, "max_steps": 15},
    ], name="mini")
    for policy in ("random", "expert"):
        run_bench(suite, policy, root / "results.sqlite", BenchOptions(progress=False))
    return root / "results.sqlite"


def test_markdown_has_a_row_per_policy_and_per_env(store):
    (suite,) = collect([store])
    text = markdown([suite])
    assert "## mini v1" in text and "pass@2" in text
    table = [line for line in text.splitlines() if line.startswith("| expert ") or line.startswith("| random ")]
    assert [line.split(" | ")[0] for line in table] == ["| expert", "| random"]  # best first
    expert = suite.runs[0]
    assert expert.label == "expert" and expert.families["examples"].value == 1.0 and expert.pass_at[2] is not None
    assert "| agentgym/Maze-Easy-v0 | examples | 6/6 |" in text


def test_the_html_report_opens_in_headless_chromium(store, tmp_path):
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("needs Chromium and chromedriver (apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    out = tmp_path / "site"
    result = agentgym("leaderboard", "--store", str(store), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert re.search(r"^\| expert \| 1\.00 ", result.stdout, re.MULTILINE)

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--window-size=1400,1800", f"--user-data-dir={tmp_path / 'chrome-profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(30)
        driver.get((out / "index.html").as_uri())
        assert driver.execute_script("return document.readyState") == "complete"
        assert driver.title == "agentgym leaderboard"
        policies = driver.execute_script(
            "return [...document.querySelectorAll('table.leaderboard tbody tr')].map(r => r.dataset.policy)")
        assert sorted(policies) == ["expert", "random"]
        images = driver.execute_script(
            "return [...document.images].map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
        assert len(images) == 3 and all(done and width > 0 for _, done, width in images), images
        severe = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        assert severe == []
        shot = tmp_path / "leaderboard.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    finally:
        driver.quit()
    artifacts = REPO / "artifacts"
    artifacts.mkdir(exist_ok=True)
    shutil.copy(shot, artifacts / "leaderboard-report.png")


def test_two_definitions_sharing_a_version_are_reported_apart(tmp_path):
    for tasks, store in ((1, "a"), (2, "b")):
        suite = write_suite(tmp_path / f"{store}.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": tasks}], name="same")
        run_bench(suite, "expert", tmp_path / f"{store}.sqlite", BenchOptions(progress=False))
    suites = collect([tmp_path / "a.sqlite", tmp_path / "b.sqlite"])
    assert len(suites) == 2 and all(s.title.startswith("same v1 [") for s in suites)
    assert sorted(s.runs[0].episodes for s in suites) == [1, 2]
