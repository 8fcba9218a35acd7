"""Snapshots never unpickle bytes this process tree did not seal: crafted pickles, foreign or tampered
snapshots are refused with a clear SnapshotError and their payload (which writes a marker file) never runs.

Every entry point is attacked: ``set_state`` on env families (plain, task, tool, household, games,
self-play, web, search, tutoring, textworld) directly and through wrappers, and the vector env's workers
(``call("set_state")`` and group snapshots). Genuine snapshots still round-trip, also across processes
that share the key.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium
import pytest

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.core import SnapshotError, snapshots
from agentgym_envs.protocols.wrapper import ActionProtocolWrapper
from agentgym_envs.vector import TextVectorEnv, VectorEnvError

ROOT = Path(__file__).resolve().parents[1]


class WritesMarker:
    """Unpickling this runs ``touch <marker>``: the shape of a real attack (``os.system``)."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(self.marker)}",)


def evil_pickle(marker: Path) -> bytes:
    return pickle.dumps({"version": 1, "cls": "agentgym_envs.examples.maze.MazeEnv", "state": WritesMarker(marker)})


def crafted_snapshots(marker: Path, genuine: bytes) -> dict[str, bytes]:
    """Each way an attacker could hand us a snapshot, all carrying the marker payload."""
    evil = evil_pickle(marker)
    other_key = b"k" * 32
    magic, tag_end = snapshots.MAGIC, len(snapshots.MAGIC) + snapshots.TAG_BYTES
    return {
        "bare pickle (the old format)": evil,
        "magic and a zero tag": magic + bytes(snapshots.TAG_BYTES) + evil,
        "sealed with another key": magic + hmac.new(other_key, magic + evil, hashlib.sha256).digest() + evil,
        "genuine seal, evil body": genuine[:tag_end] + evil,
        "evil body appended to a genuine snapshot": genuine + evil,
    }


def refused(set_state, data: bytes, marker: Path) -> str:
    with pytest.raises(SnapshotError) as caught:
        set_state(data)
    assert not marker.exists(), "the crafted snapshot ran code"
    return str(caught.value)


def test_the_payload_is_live(tmp_path):
    """Guard for the tests below: unpickling the payload really does write the marker."""
    marker = tmp_path / "pwned"
    pickle.loads(evil_pickle(marker))
    assert marker.exists()


FAMILIES = [
    "agentgym/Maze-Easy-v0",
    "agentgym/GuessNumber-v0",
    "agentgym/Household-PickPlace-v0",
    "agentgym/Wordle-Easy-v0",
    "agentgym/TicTacToe-VsScripted-v0",
    "agentgym/KuhnPoker-VsRandom-v0",
    "agentgym/WebShop-v0",
    "agentgym/Search-1Hop-v0",
    "agentgym/Tutoring-v1",
    "agentgym/PracticeScheduling-v0",
    "agentgym/TextWorld-CoinCollector-v0",
]


@pytest.mark.parametrize("env_id", FAMILIES)
def test_crafted_snapshots_are_refused_before_unpickling(env_id, tmp_path):
    marker = tmp_path / "pwned"
    env = gymnasium.make(env_id)
    env.reset(seed=0)
    genuine = env.unwrapped.get_state()
    for name, data in crafted_snapshots(marker, genuine).items():
        message = refused(env.unwrapped.set_state, data, marker)
        if name.startswith("bare"):
            assert "expected a snapshot made by get_state() in this process tree" in message
        else:
            assert "seal does not match" in message and "AGENTGYM_SNAPSHOT_KEY" in message, name
    env.unwrapped.set_state(genuine)  # the real one still restores
    env.close()


def test_wrapped_envs_check_the_seal_too(tmp_path):
    marker = tmp_path / "pwned"
    env = ActionProtocolWrapper(gymnasium.make("agentgym/Household-PickPlace-v0"), "react")
    env.reset(seed=1)
    genuine = env.get_wrapper_attr("get_state")()
    for data in crafted_snapshots(marker, genuine).values():
        refused(env.get_wrapper_attr("set_state"), data, marker)
    env.get_wrapper_attr("set_state")(genuine)


def test_truncated_and_flipped_snapshots_are_refused(tmp_path):
    env = gymnasium.make("agentgym/Household-PickPlace-v0").unwrapped
    env.reset(seed=2)
    genuine = env.get_state()
    flipped = bytearray(genuine)
    flipped[-5] ^= 1
    for data in (genuine[:-1], genuine[: len(snapshots.MAGIC) + 10], bytes(flipped), b"", b"not a snapshot"):
        with pytest.raises(SnapshotError, match="expected a snapshot made by"):
            env.set_state(data)
    with pytest.raises(SnapshotError, match="expected the bytes of a snapshot from get_state\\(\\), got str"):
        env.set_state("a string")  # type: ignore[arg-type]


def test_snapshot_error_is_a_value_error():
    assert issubclass(SnapshotError, ValueError)


def test_a_malformed_key_variable_is_explained(monkeypatch):
    monkeypatch.setattr(snapshots, "_key", None)
    monkeypatch.setenv(snapshots.KEY_ENV, "abc")
    with pytest.raises(SnapshotError, match="at least 32 hex digits.*openssl rand -hex 32"):
        snapshots.snapshot_key()


def test_the_key_is_exported_for_child_processes(monkeypatch):
    monkeypatch.setattr(snapshots, "_key", None)
    monkeypatch.delenv(snapshots.KEY_ENV, raising=False)
    key = snapshots.snapshot_key()
    assert os.environ[snapshots.KEY_ENV] == key.hex() and len(key) == 32
    assert snapshots.snapshot_key() is key


_CHILD = textwrap.dedent("""
    import sys, gymnasium, agentgym_envs
    env = gymnasium.make("agentgym/Maze-Easy-v0").unwrapped
    env.reset(seed=5)
    env.step("go east")
    sys.stdout.write(env.get_state().hex())
""")


def _child_snapshot(env: dict[str, str]) -> bytes:
    done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120, check=True)
    return bytes.fromhex(done.stdout)


def test_child_processes_share_the_key_and_other_trees_do_not(tmp_path):
    env = gymnasium.make("agentgym/Maze-Easy-v0").unwrapped
    env.reset(seed=0)
    env.get_state()  # the key exists now, and is in os.environ for children
    ours = _child_snapshot(dict(os.environ))
    env.set_state(ours)
    same = gymnasium.make("agentgym/Maze-Easy-v0").unwrapped
    same.reset(seed=5)
    same.step("go east")
    assert (env.last_observation, env.state_key()) == (same.last_observation, same.state_key())
    foreign = _child_snapshot({**os.environ, snapshots.KEY_ENV: "ab" * 32})
    with pytest.raises(SnapshotError, match="made by another process tree"):
        env.set_state(foreign)


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_vector_workers_refuse_crafted_snapshots_and_share_genuine_ones(mode, tmp_path):
    marker = tmp_path / "pwned"
    with TextVectorEnv(env_id="agentgym/Maze-Easy-v0", num_envs=2, mode=mode, group_size=2) as venv:
        observations, _ = venv.reset(seed=3)
        assert observations[0] == observations[1]  # the group's snapshot passed from one worker to the other
        from_workers = venv.call("get_state")
        host = gymnasium.make("agentgym/Maze-Easy-v0").unwrapped
        host.reset(seed=0)
        host.set_state(from_workers[0])  # a worker's snapshot restores in the host
        assert venv.call("set_state", host.get_state()) == [None, None]  # and the host's in the workers
        for data in crafted_snapshots(marker, from_workers[0]).values():
            with pytest.raises(VectorEnvError, match="SnapshotError: expected a snapshot made by"):
                venv.call("set_state", data)
            assert not marker.exists()
        venv.step(["go east", "go east"])  # the workers survived the attack


_FORKSERVER_FIRST = textwrap.dedent("""
    import multiprocessing, os, sys
    os.environ.pop("AGENTGYM_SNAPSHOT_KEY", None)
    if __name__ == "__main__":
        ctx = multiprocessing.get_context("forkserver")
        p = ctx.Process(target=sum, args=([],)); p.start(); p.join()  # the forkserver starts before any key
        import gymnasium, agentgym_envs
        from agentgym_envs.vector import TextVectorEnv
        with TextVectorEnv(env_id="agentgym/Maze-Easy-v0", num_envs=2, mode="process", group_size=2) as venv:
            venv.reset(seed=3)
            env = gymnasium.make("agentgym/Maze-Easy-v0").unwrapped
            env.reset(seed=0)
            env.set_state(venv.call("get_state")[1])
        print("restored")
""")


def test_workers_get_the_key_even_from_a_forkserver_started_before_it(tmp_path):
    script = tmp_path / "forkserver_first.py"
    script.write_text(_FORKSERVER_FIRST)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != snapshots.KEY_ENV})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "restored"


@pytest.mark.parametrize("backend", ["bwrap", "docker", "unsafe"])
def test_code_in_a_sandbox_cannot_read_the_key(backend):
    """An agent's shell must not learn the key (it could then seal a snapshot that runs code)."""
    import sandboxes

    if backend in os.environ.get("AGENTGYM_SKIP_BACKENDS", "").split(","):  # the sandbox suite's rule
        pytest.skip(f"{backend} left out by AGENTGYM_SKIP_BACKENDS")
    key = snapshots.snapshot_key().hex()
    assert os.environ[snapshots.KEY_ENV] == key
    with sandboxes.make(backend) as box:
        result = box.run(["sh", "-c", "env; cat /proc/self/environ"], timeout=30)
    assert result.exit_code == 0 and b"PATH=" in result.stdout
    assert key.encode() not in result.stdout and snapshots.KEY_ENV.encode() not in result.stdout
