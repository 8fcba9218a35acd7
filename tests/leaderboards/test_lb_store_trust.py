"""A results store is untrusted data (issue 31 §1): opening one someone sent you runs no code and leaks no key.

Two hostile stores, as an attacker would ship them: one names ``agentgym/Generated-v0`` with
``{"backend": "unsafe", "archive": <a folder beside the store>}`` whose ``env.py`` writes a marker file when run;
the other names ``agentgym/SkillLibrary-v0`` with ``{"actor": "openai:http://127.0.0.1:<port>/v1#m"}``, where a
loopback listener records every connection (and whether ``$OPENAI_API_KEY`` reached it). ``agentgym view
--starts``, the served viewer and ``agentgym export --store`` must each refuse to replay both, say so, and go on.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from lb_helpers import agentgym, write_suite

from leaderboards.export import export, load_trajectories
from leaderboards.export_sources import StoreSource
from leaderboards.records import EpisodeRecord, StepRecord
from leaderboards.runner import BenchOptions, run_bench
from leaderboards.store import open_store
from leaderboards.suite import Entry, Suite
from leaderboards.viewer_server import ViewerServer

SECRET = "sk-test-never-leaves-0123456789"

MARKER_MODULE = '''
import pathlib
pathlib.Path({marker!r}).write_text("ran")


class Env:
    max_steps = 5

    def __init__(self, difficulty=0.5):
        self.instruction = "Say go."

    def reset(self, seed):
        pathlib.Path({marker!r}).write_text("ran")
        return "ready"

    def step(self, action):
        return "ok", 1.0, True

    def legal_actions(self):
        return ["go"]

    def expert_action(self):
        return "go"
'''


class Listener:
    """A loopback TCP listener that records every connection's first bytes and answers 400."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(65536))
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    self.received.append(b"")

    def close(self) -> None:
        self.sock.close()


@dataclass
class Hostile:
    store: Path
    marker: Path
    listener: Listener
    env: dict[str, str] = field(default_factory=dict)

    def assert_untouched(self) -> None:
        assert not self.marker.exists(), "the store's archive ran on the host"
        assert self.listener.received == [], f"the store's actor URL was contacted: {self.listener.received[:1]!r}"


def _store(path: Path, env_id: str, kwargs: dict, suite_name: str) -> Path:
    """A store holding one episode (no stored start, as an old store or a forged one would) of one entry."""
    entry = Entry(env_id, "design" if "Generated" in env_id else "skills", kwargs, tasks=1, max_steps=5,
                  protocol="plain")
    suite = Suite(suite_name, 1, (entry,), {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 16})
    step = StepRecord(0, "go", "go", "ok", 1.0, True, False, True, None, "stop", None, None, 10, 0.01, 0.01)
    with open_store(path) as store:
        run = store.run("sent-to-you", "random", suite, {})
        store.record_episode(run, EpisodeRecord(entry.key, env_id, entry.family, 0, 0, 0, 0, None, True, 1.0, 1.0,
                                                True, False, 0.1, steps=[step]))
    return path


@pytest.fixture(params=["unsafe-archive", "actor-url"])
def hostile(request, tmp_path, monkeypatch) -> Hostile:
    from meta_envs.design.archive import EnvArchive

    marker = tmp_path / "MARKER"
    listener = Listener()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    if request.param == "unsafe-archive":
        archive = tmp_path / "shipped-beside-the-store"
        EnvArchive(archive).add(MARKER_MODULE.format(marker=str(marker)), {"round": 0})
        store = _store(tmp_path / "generated.sqlite", "agentgym/Generated-v0",
                       {"backend": "unsafe", "archive": str(archive)}, "design")
    else:
        store = _store(tmp_path / "skills.sqlite", "agentgym/SkillLibrary-v0",
                       {"actor": f"openai:http://127.0.0.1:{listener.port}/v1#m"}, "skills")
    yield Hostile(store, marker, listener, {"OPENAI_API_KEY": SECRET})
    listener.close()


def test_view_starts_refuses_to_replay_a_hostile_store(hostile, tmp_path):
    out = agentgym("view", str(hostile.store), "--out", str(tmp_path / "page.html"), "--starts", env=hostile.env,
                   timeout=300)
    hostile.assert_untouched()
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "page.html").read_text()
    assert "refused to replay" in page and "not replayed" in out.stderr, out.stderr
    assert "1 episodes of 1 runs" in out.stdout


def test_the_served_viewer_refuses_to_replay_a_hostile_store(hostile):
    server = ViewerServer([hostile.store], port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(server.url + "episodes/0/steps.json", timeout=120) as answer:
            payload = json.loads(answer.read())
        hostile.assert_untouched()
        assert payload["turns"][0]["reply"] == "go"
        error = payload["start"].get("error", "")
        assert "refused to replay" in error and ("'backend'" in error or "'actor'" in error), payload["start"]
    finally:
        server.shutdown()
        server.close()
        thread.join(5)
    hostile.assert_untouched()


def test_export_refuses_to_replay_a_hostile_store_and_reports_it(hostile, tmp_path):
    out = agentgym("export", "--store", str(hostile.store), "--out", str(tmp_path / "out"), "--quiet",
                   env=hostile.env, timeout=300)
    hostile.assert_untouched()
    assert out.returncode == 0, out.stderr
    assert "not replayed" in out.stderr and "left out 1 episode" in out.stderr, out.stderr
    assert load_trajectories(tmp_path / "out") == []


# ----------------------------------------------------------------------------------- starts kept in the store
ENTRIES = [{"env": "agentgym/Maze-Easy-v0", "tasks": 2, "protocol": "tool_calls"},
           {"env": "agentgym/Wordle-Easy-v0", "tasks": 2, "max_steps": 4}]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("trust-store")
    path = tmp / "results.sqlite"
    run_bench(write_suite(tmp / "s.yaml", ENTRIES, name="trustsuite"), "expert", path, BenchOptions(progress=False))
    return path


def _without_starts(store: Path, copy: Path) -> Path:
    """``store`` as a store written before starts were kept (no ``starts`` table)."""
    import sqlite3

    copy.write_bytes(store.read_bytes())
    db = sqlite3.connect(copy)
    with db:
        db.execute("DROP TABLE starts")
    db.close()
    return copy


def test_the_runner_records_starts_so_export_and_view_build_no_env(recorded, tmp_path, monkeypatch):
    import sqlite3

    import agentgym_envs
    import leaderboards.episode
    from leaderboards.viewer import write_viewer

    db = sqlite3.connect(recorded)
    assert db.execute("SELECT COUNT(*) FROM starts").fetchone()[0] == 4 == db.execute(
        "SELECT COUNT(*) FROM episodes").fetchone()[0]
    db.close()
    env = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="tool_calls")
    first, info = env.reset(seed=1)

    def no_env(entry):
        raise AssertionError(f"an env was built for {entry.key}")

    monkeypatch.setattr(leaderboards.episode, "make_env", no_env)
    records = {r["id"]: r for r in load_trajectories(export(StoreSource(recorded), tmp_path / "out")[0])}
    maze = records["store:expert/trustsuite/v1/agentgym/Maze-Easy-v0/1"]
    assert maze["messages"][0]["content"] == info["system_prompt"] and maze["messages"][1]["content"].endswith(first)
    assert [t["function"]["name"] for t in maze["tools"]] == ["act"]
    _, index = write_viewer([recorded], tmp_path / "page.html", starts=True)
    assert index.unreplayed == {} and (tmp_path / "page.html").read_text().count('"first_observation":"') == 4


def test_an_old_store_replays_allowed_entries_to_the_same_records(recorded, tmp_path):
    """Without stored starts, plain entries are replayed from their seeds: the export is byte-identical."""
    old = _without_starts(recorded, tmp_path / "old.sqlite")
    source = StoreSource(old)
    assert source.refused == []
    export(source, tmp_path / "old")
    source.close()
    export(StoreSource(recorded), tmp_path / "new")
    assert (tmp_path / "old" / "trajectories.jsonl").read_bytes() == (tmp_path / "new" / "trajectories.jsonl").read_bytes()


def test_a_forged_start_is_shown_as_data(recorded, tmp_path):
    """A store's stored start is text: shown and exported as it is, malformed JSON tools count as no start."""
    import sqlite3

    forged = tmp_path / "forged.sqlite"
    forged.write_bytes(recorded.read_bytes())
    db = sqlite3.connect(forged)
    with db:
        db.execute("UPDATE starts SET first_observation = '</script><b>x</b>', tools_json = NULL")
        db.execute("UPDATE starts SET tools_json = ? WHERE episode_id = 1", ("[" * 100_000,))
    db.close()
    source = StoreSource(forged)
    records = list(source.records())
    source.close()
    assert sum(r["messages"][1]["content"] == "</script><b>x</b>" for r in records) == 3  # the 4th is replayed
    server = ViewerServer([forged], port=0)
    try:
        shown = [json.loads(server.steps_json(row))["start"]["first_observation"] for row in range(4)]
        assert shown.count("</script><b>x</b>") == 3
    finally:
        server.close()


# ----------------------------------------------------------------------------------- the trust policy
def test_replay_refusal_allows_shipped_entries_and_plain_settings_only():
    from leaderboards.replay import replay_refusal
    from leaderboards.suite import load_suite

    design = load_suite("design")
    generated = next(e for e in design.entries if e.env_id == "agentgym/Generated-v0")
    assert replay_refusal(design.name, design.version, design.fingerprint, generated) is None
    maze = Entry("agentgym/Maze-Easy-v0", "examples", {"split": "test", "dense_reward": True, "sizes": [3, 4]})
    assert replay_refusal("mine", 1, "f" * 16, maze) is None
    refused = {
        "archive": Entry("agentgym/Generated-v0", "design", {"archive": "/tmp/x"}),
        "forged fingerprint": Entry("agentgym/Generated-v0", "design", {"backend": "unsafe"}, tasks=10, repeats=2,
                                    seed=10000, max_steps=100, protocol="react"),
        "path in a word": Entry("agentgym/Maze-Easy-v0", "examples", {"split": "../../etc"}),
        "url": Entry("agentgym/Maze-Easy-v0", "examples", {"split": "http://h/x"}),
        "module import": Entry("os:Env-v0", "x", {}),
        "unregistered": Entry("agentgym/NoSuch-v0", "x", {}),
        "nested": Entry("agentgym/Maze-Easy-v0", "examples", {"sizes": [{"a": 1}]}),
        "bad protocol": Entry("agentgym/Maze-Easy-v0", "examples", {}, protocol="exec"),
        "bad seed": Entry("agentgym/Maze-Easy-v0", "examples", {}, seed="0"),
    }
    for what, entry in refused.items():
        reason = replay_refusal(design.name, design.version, design.fingerprint, entry)
        assert reason is not None and reason.startswith("refused to replay"), what


def test_a_malformed_stored_suite_is_reported_not_raised(recorded, tmp_path):
    import sqlite3

    from leaderboards.viewer import write_viewer

    broken = _without_starts(recorded, tmp_path / "broken.sqlite")
    db = sqlite3.connect(broken)
    with db:
        db.execute("UPDATE runs SET suite_json = ?", (json.dumps({"entries": [{"env_id": 1, "nope": 2}, 7]}),))
    db.close()
    _, index = write_viewer([broken], tmp_path / "page.html", starts=True)
    assert list(index.unreplayed.values()) == [4] and "not in the run's stored suite" in next(iter(index.unreplayed))
    source = StoreSource(broken)
    assert source.ids() == [] and len(source.refused) == 4
    source.close()
