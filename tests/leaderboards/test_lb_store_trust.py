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
