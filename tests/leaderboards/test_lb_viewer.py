"""The episode viewer in headless Chromium: real stored runs turn by turn, filters, hostile text, 10k episodes.

One Chromium serves the whole module (started once, quit at the end); every page is opened from disk
(``file://``) except the served one, which listens on 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from lb_helpers import REPO, agentgym, write_suite
from selenium.webdriver.support.ui import Select, WebDriverWait

from leaderboards.publish import write_report
from leaderboards.records import EpisodeRecord, StepRecord
from leaderboards.runner import BenchOptions, run_bench
from leaderboards.store import open_store
from leaderboards.suite import load_suite
from leaderboards.viewer import write_viewer
from leaderboards.viewer_server import ViewerError, ViewerServer

HOSTILE = '</script><img src=x onerror="document.title=\'pwned\'"><script>window.pwned=1</script>' + "</script x <!--<script>"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Expert and random on a text env and a tool env, two tasks each."""
    root = tmp_path_factory.mktemp("viewer")
    suite = write_suite(root / "suite.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 2},
                                              {"env": "agentgym/GuessNumber-v0", "tasks": 2}], name="mini")
    for policy in ("random", "expert"):
        run_bench(suite, policy, root / "results.sqlite", BenchOptions(progress=False))
    return root / "results.sqlite"


def _js(driver, script: str):
    return driver.execute_script(script)


def _rows(driver) -> list[dict]:
    return _js(driver, "return [...document.querySelectorAll('#episodes tbody tr')].map(r => ({...r.dataset}))")


def _open_row(driver, index: int) -> None:
    driver.find_element("css selector", f'#episodes tbody tr[data-index="{index}"]').click()


def _turns(driver) -> list[dict]:
    return _js(driver, """return [...document.querySelectorAll('#episode .turn')].map(t => {
        const f = {}; t.querySelectorAll('.field').forEach(x => { f[x.dataset.field] = x.querySelector('pre').textContent; });
        return f; })""")


def _severe(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def _stored(store: Path, run: str, entry: str, index: int) -> list[sqlite3.Row]:
    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    try:
        return list(db.execute("SELECT s.* FROM steps s JOIN episodes e ON e.id = s.episode_id JOIN runs r ON "
                               "r.id = e.run_id WHERE r.name = ? AND e.entry = ? AND e.episode_index = ? ORDER BY t",
                               (run, entry, index)))
    finally:
        db.close()


def test_the_page_shows_a_stored_run_turn_by_turn(store, driver, tmp_path):
    page, index = write_viewer([store], tmp_path / "episodes.html", starts=True)
    driver.get(page.as_uri())
    rows = _rows(driver)
    assert len(rows) == len(index.rows) == 8 and {r["run"] for r in rows} == {"mini-v1/expert", "mini-v1/random"}
    maze = next(r for r in rows if r["run"] == "mini-v1/expert" and r["env"] == "agentgym/Maze-Easy-v0")
    _open_row(driver, int(maze["index"]))
    stored = _stored(store, "expert", "agentgym/Maze-Easy-v0", 0)
    turns = _turns(driver)
    assert len(turns) == len(stored) > 1
    assert [t["observation"] for t in turns] == [s["observation"] for s in stored]
    assert [t["reply"] for t in turns] == [s["reply"] for s in stored]
    start = _js(driver, "return document.querySelector('#episode .start').textContent")
    assert "first observation" in start and "Find the exit" in start  # replayed from the seed
    guess = next(r for r in rows if r["run"] == "mini-v1/expert" and r["env"] == "agentgym/GuessNumber-v0")
    _open_row(driver, int(guess["index"]))
    assert _turns(driver)[0]["tool call"] == "guess(number=50)"
    assert _severe(driver) == []


def test_filters_search_and_links_change_the_visible_rows(store, driver, tmp_path):
    published = write_report([store], tmp_path / "site", plots=False)
    driver.get((tmp_path / "site" / "index.html").as_uri())
    driver.find_element("link text", "expert").click()  # the leaderboard row links to that run's episodes
    WebDriverWait(driver, 10).until(lambda d: d.current_url.endswith("episodes.html#run=mini-v1%2Fexpert"))
    assert published.viewer is not None and {r["run"] for r in _rows(driver)} == {"mini-v1/expert"}
    assert len(_rows(driver)) == 4
    Select(driver.find_element("id", "f-run")).select_by_value("")
    Select(driver.find_element("id", "f-outcome")).select_by_value("won")
    won = _rows(driver)
    assert len(won) == 4 and {r["outcome"] for r in won} == {"won"} and {r["run"] for r in won} == {"mini-v1/expert"}
    Select(driver.find_element("id", "f-outcome")).select_by_value("")
    Select(driver.find_element("id", "f-env")).select_by_value("agentgym/GuessNumber-v0")
    assert {r["env"] for r in _rows(driver)} == {"agentgym/GuessNumber-v0"} and len(_rows(driver)) == 4
    Select(driver.find_element("id", "f-policy")).select_by_value("random")
    assert [r["outcome"] for r in _rows(driver)] == ["truncated", "truncated"]
    search = driver.find_element("id", "f-q")
    search.send_keys("seed 1")
    assert len(_rows(driver)) == 1
    assert _js(driver, "return document.getElementById('count').textContent") == "1 of 8 episodes"
    assert "q=seed+1" in driver.current_url  # the filters live in the URL: a view can be shared
    search.clear()
    _js(driver, "document.getElementById('f-policy').value=''; document.getElementById('f-policy').dispatchEvent(new Event('change'))")
    search.send_keys("too low")  # text of the env's observations: matches nothing until asked to look in turns
    assert _rows(driver) == []
    driver.find_element("id", "f-text").click()
    assert {r["run"] for r in _rows(driver)} == {"mini-v1/expert"} and len(_rows(driver)) == 2


def _hostile_store(path: Path) -> Path:
    suite = load_suite(write_suite(path.parent / "hostile.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 1}]))
    steps = [StepRecord(t=0, reply=HOSTILE, action="<b>go</b>", observation="<!-- \u2028 & ]]> " + HOSTILE, reward=0.0,
                        terminated=False, truncated=False, action_valid=False, parse_error="<i>" + HOSTILE, finish_reason="stop",
                        prompt_tokens=None, completion_tokens=None, prompt_chars=1, latency_s=0.0, env_s=0.0),
             StepRecord(t=1, reply="x" * 50_000, action=None, observation="ok", reward=float("inf"), terminated=True,
                        truncated=False, action_valid=True, parse_error=None, finish_reason="length",
                        prompt_tokens=None, completion_tokens=None, prompt_chars=1, latency_s=0.0, env_s=0.0)]
    episode = EpisodeRecord(entry="agentgym/Maze-Easy-v0", env_id="agentgym/Maze-Easy-v0", family="examples",
                            episode_index=0, task=0, repeat=0, seed=0, task_index=None, won=False, score=0.0,
                            ret=0.0, terminated=True, truncated=False, wall_s=0.0, steps=steps)
    with open_store(path) as store:
        store.record_episode(store.run(HOSTILE, "random", suite, {}), episode)
        with store.db:  # bytes that are not UTF-8, as another tool could write them
            store.db.execute("UPDATE steps SET finish_reason = CAST(X'ff41' AS TEXT) WHERE t = 1")
            store.db.execute("UPDATE episodes SET entry = entry || CAST(X'fe' AS TEXT)")
    return path


def test_hostile_episode_text_is_shown_as_text_and_runs_nothing(driver, tmp_path):
    store = _hostile_store(tmp_path / "hostile.sqlite")
    page, _ = write_viewer([store], tmp_path / "episodes.html")
    assert "</script><img" not in page.read_text()
    driver.get(page.as_uri())
    _open_row(driver, 0)
    turns = _turns(driver)
    assert turns[0]["reply"] == HOSTILE and turns[0]["action"] == "<b>go</b>"
    assert turns[0]["observation"] == "<!-- \u2028 & ]]> " + HOSTILE and turns[0]["parse error"] == "<i>" + HOSTILE
    assert turns[1]["reply"] == "x" * 20_000  # cut, and the page says so
    assert "cut at 20000 of 50000 characters" in _js(driver, "return document.getElementById('episode').textContent")
    assert _js(driver, "return [document.title, window.pwned, document.images.length, "
                       "document.querySelectorAll('#episode b, #episode i, #episode script').length]") == [
        "agentgym episodes", None, 0, 0]
    assert HOSTILE in _js(driver, "return document.querySelector('#episodes tbody tr').textContent")  # the run name
    assert "\ufffdA" in _js(driver, "return document.querySelectorAll('#episode .turn')[1].textContent")


def test_the_served_viewer_fetches_turns_and_answers_only_loopback(store, driver):
    with pytest.raises(ViewerError, match="expected a loopback"):
        ViewerServer([store], host="0.0.0.0")
    server = ViewerServer([store], port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        driver.get(server.url)
        row = next(r for r in _rows(driver) if r["run"] == "mini-v1/expert")
        _open_row(driver, int(row["index"]))
        WebDriverWait(driver, 10).until(lambda d: _turns(d))
        assert _turns(driver)[0]["observation"] == _stored(store, "expert", row["env"], 0)[0]["observation"]
        assert "first observation" in _js(driver, "return document.querySelector('#episode .start').textContent")
        driver.find_element("id", "f-q").send_keys("too low")  # in the turns: the server searches its stores
        driver.find_element("id", "f-text").click()
        WebDriverWait(driver, 10).until(lambda d: len(_rows(d)) == 2)
        assert {(r["run"], r["env"]) for r in _rows(driver)} == {("mini-v1/expert", "agentgym/GuessNumber-v0")}
        _open_row(driver, int(_rows(driver)[0]["index"]))
        WebDriverWait(driver, 10).until(lambda d: _turns(d))
        first = _js(driver, "return document.querySelector('#episode h2').textContent")
        driver.find_element("tag name", "body").send_keys("j")  # the next listed episode
        WebDriverWait(driver, 10).until(lambda d: _js(d, "return document.querySelector('#episode h2').textContent") != first)
        assert "episode 1" in _js(driver, "return document.querySelector('#episode h2').textContent")
        for path, headers, status in (("episodes/99/steps.json", {}, 404), ("../results.sqlite", {}, 404),
                                      ("", {"Host": "evil.example:80"}, 403)):
            with pytest.raises(urllib.error.HTTPError) as error:
                urllib.request.urlopen(urllib.request.Request(server.url + path, headers=headers), timeout=10)
            assert error.value.code == status
    finally:
        server.shutdown()
        server.close()
        thread.join(5)


def _benchmark():
    spec = importlib.util.spec_from_file_location("viewer_open", REPO / "benchmarks" / "viewer_open.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_10k_episode_store_opens_within_two_seconds(driver, tmp_path):
    store = _benchmark().synthetic_store(tmp_path / "big.sqlite", 10_000, 6)
    page, index = write_viewer([store], tmp_path / "episodes.html")
    assert len(index.rows) == 10_000
    start = time.perf_counter()
    driver.get(page.as_uri())
    loaded = time.perf_counter() - start
    drawn_ms = _js(driver, "return window.viewerReady")
    assert _js(driver, "return document.getElementById('count').textContent") == "10000 of 10000 episodes"
    assert len(_rows(driver)) == 100  # one page of rows drawn, not 10,000
    assert drawn_ms < 2000 and loaded < 6.0, (drawn_ms, loaded)  # the list within 2 s; the whole 40 MB parsed later
    _open_row(driver, int(_rows(driver)[-1]["index"]))
    assert len(_turns(driver)) == 6


def test_view_cli_writes_the_page_serves_it_and_refuses_a_non_store(store, tmp_path):
    out = agentgym("view", str(store), "--out", str(tmp_path / "v.html"), "--max-chars", "100", "--starts")
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "v.html").read_text()
    assert "8 episodes of 2 runs" in out.stdout and page.count('"first_observation":"') == 8
    served = subprocess.Popen([sys.executable, "-m", "agentgym_envs.cli.main", "view", str(store), "--port", "0"],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = served.stdout.readline()
        assert line.startswith("serving 8 episodes on http://127.0.0.1:"), line + served.stderr.read()
        url = line.split(" on ")[1].split()[0]
        with urllib.request.urlopen(url + "episodes/0/steps.json", timeout=30) as answer:
            assert answer.status == 200 and b'"turns"' in answer.read()
    finally:
        served.terminate()
        served.wait(10)
        served.stdout.close()
        served.stderr.close()
    (tmp_path / "notes.txt").write_text("not a store")
    bad = agentgym("view", str(tmp_path / "notes.txt"), "--out", str(tmp_path / "w.html"))
    assert bad.returncode == 2 and "not an SQLite file" in bad.stderr and not (tmp_path / "w.html").exists()


def test_the_served_viewer_drops_idle_clients_and_caps_its_threads(store):
    """Issue 31 §4: the viewer was a plain ThreadingHTTPServer (a thread per silent socket, no deadlines)."""
    import socket

    from agentgym_envs.core.httpd import ServerLimits

    limits = ServerLimits(max_handler_threads=2, read_timeout_s=1.0, idle_timeout_s=1.0)
    server = ViewerServer([store], port=0, limits=limits)
    server.serve_in_thread("viewer-test")
    address = server.server_address[:2]
    try:
        slow = [socket.create_connection(address, timeout=5) for _ in range(5)]
        for s in slow:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        time.sleep(0.5)
        assert server.active_handlers == 2
        with pytest.raises(urllib.error.HTTPError) as busy:
            urllib.request.urlopen(server.url + "episodes/0/steps.json", timeout=5)
        assert busy.value.code == 503
        silent = socket.create_connection(address, timeout=5)
        time.sleep(2.5)  # the slow requests pass read_timeout_s, the silent socket idle_timeout_s
        assert server.active_handlers == 0 and silent.recv(10) == b""
        with urllib.request.urlopen(server.url + "episodes/0/steps.json", timeout=30) as answer:
            assert answer.status == 200 and answer.headers["X-Content-Type-Options"] == "nosniff"
        for s in slow + [silent]:
            s.close()
    finally:
        server.close()
