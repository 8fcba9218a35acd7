"""What people look at, in headless Chromium: the episode viewer, a leaderboard page and a training dashboard.

Each page is opened as a user would (``agentgym leaderboard`` writes the viewer and the report; ``agentgym plot``
writes the dashboard), screenshotted, and checked for the defects issue 34 §5 names: ids, run names and seeds
whole in the episode list (no cell narrower than its text), a draw labelled a draw (not "lost" in red), the
stored start shown without ``--starts``, and a KL panel that moves on a run whose logged KL moves. The
screenshots are kept in the test's tmp folder for a person to look at.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agentgym_envs.cli.main import main


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """``agentgym bench`` (expert) on a game whose expert draws the scripted opponent and a long-named env, then
    ``agentgym leaderboard``: the report and the episode viewer it links to."""
    import yaml

    root = tmp_path_factory.mktemp("screens")
    suite = root / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "screens", "version": 1, "entries": [
        {"env": "agentgym/TicTacToe-VsScripted-v0", "tasks": 2},
        {"env": "agentgym/GuessNumber-v0", "tasks": 2, "seed": 2_000_000_011}]}))
    store = root / "results.sqlite"
    assert main(["bench", "--suite", str(suite), "--policy", "expert", "--store", str(store), "--quiet"]) == 0
    assert main(["leaderboard", "--store", str(store), "--out", str(root / "site"), "--no-plots"]) == 0
    return root / "site"


def _severe(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def _cut_cells(driver, selector: str) -> list[str]:
    """Texts of the cells under ``selector`` whose content is wider than the cell (cut or ellipsised)."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].filter(c => c.scrollWidth > c.clientWidth + 1)"
        ".map(c => c.textContent)", selector)


def test_the_viewer_shows_whole_ids_labels_draws_and_shows_stored_starts(site, driver, tmp_path):
    driver.get((site / "episodes.html").as_uri())
    rows = driver.execute_script("return [...document.querySelectorAll('#episodes tbody tr')].map(r => "
                                 "[...r.cells].map(c => [c.textContent, c.className, getComputedStyle(c).color]))")
    assert len(rows) == 4
    assert _cut_cells(driver, "#episodes td") == []  # no "agentgym/GuessNu…", no seed "1…"
    assert {r[1][0] for r in rows} == {"agentgym/TicTacToe-VsScripted-v0", "agentgym/GuessNumber-v0"}
    tic = [r for r in rows if r[1][0] == "agentgym/TicTacToe-VsScripted-v0"]
    assert [r[4][:2] for r in tic] == [["draw", "draw"]] * 2  # perfect play both sides: a draw, not "lost"
    lost_red = "rgb(155, 28, 28)"
    assert all(r[4][2] != lost_red for r in tic)
    driver.find_element("css selector", '#episodes tbody tr[data-env="agentgym/TicTacToe-VsScripted-v0"]').click()
    start = driver.execute_script("return document.querySelector('#episode .start').textContent")
    assert "first observation" in start and "--starts" not in start  # the stored start, no flag needed
    head = driver.execute_script("return document.querySelector('#episode h2 span').className")
    assert head == "draw"
    shot = tmp_path / "viewer.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    assert _severe(driver) == []


def test_the_leaderboard_page_shows_whole_ids_and_links_to_the_viewer(site, driver, tmp_path):
    driver.get((site / "index.html").as_uri())
    assert driver.title == "agentgym leaderboard"
    cells = driver.execute_script("return [...document.querySelectorAll('table td')].map(c => c.textContent)")
    assert any("TicTacToe-VsScripted" in c for c in cells)
    assert _cut_cells(driver, "table td") == []
    links = driver.execute_script("return [...document.querySelectorAll('a')].map(a => a.getAttribute('href'))")
    assert any(link and link.startswith("episodes.html") for link in links)
    shot = tmp_path / "leaderboard.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    assert _severe(driver) == []


def _vertical_extent(png: bytes, box: tuple[int, int, int, int], rgb: tuple[int, int, int]) -> int:
    """Rows spanned by pixels of colour ``rgb`` (±12 per channel) inside ``box`` (x, y, w, h) of a screenshot."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    x, y, w, h = box
    crop = image.crop((x, y, x + w, y + h))
    rows = {j for j in range(crop.height) for i in range(0, crop.width)
            if all(abs(a - b) <= 12 for a, b in zip(crop.getpixel((i, j)), rgb))}
    return (max(rows) - min(rows) + 1) if rows else 0


def test_the_dashboard_kl_panel_moves_when_the_logged_kl_moves(driver, tmp_path):
    """Four gradient steps per update: the first step's KL and clip fraction are 0 by construction, the last
    step's (logged as *_last) grow; the KL figure as the page shows it is a rising line, not a flat one."""
    run = tmp_path / "run"
    run.mkdir()
    records = [{"step": s, "reward": 0.05 * s, "approx_kl_old": 0.0, "approx_kl_old_last": 0.001 * s * s,
                "clip_fraction": 0.0, "clip_fraction_last": 0.02 * s, "gradient_steps": 4.0} for s in range(1, 9)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["plot", str(run)]) == 0
    driver.get((run / "dashboard" / "index.html").as_uri())
    png = driver.get_screenshot_as_png()
    (tmp_path / "dashboard.png").write_bytes(png)
    figures = {}
    for name in ("kl", "clip_fraction"):
        driver.execute_script("document.getElementById(arguments[0]).scrollIntoView()", name)
        rect = driver.execute_script("const r = document.querySelector('#' + arguments[0] + ' img')"
                                     ".getBoundingClientRect(); return [r.x, r.y, r.width, r.height]", name)
        shot = driver.get_screenshot_as_png()
        (tmp_path / f"dashboard-{name}.png").write_bytes(shot)
        figures[name] = _vertical_extent(shot, tuple(int(v) for v in rect), (0x1F, 0x77, 0xB4))  # matplotlib's C0
    assert figures["kl"] > 100 and figures["clip_fraction"] > 100, figures  # a flat 0 line spans a few rows
