"""Trajectory export (``agentgym export``): round trips, resume after SIGKILL, hostile text, SFT templates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from lb_helpers import REPO, agentgym, write_suite

from leaderboards.export import (ExportError, RecordsSource, export, load_trajectories, make_record, write_hf,
                                 write_jsonl, write_parquet)
from leaderboards.export_sources import EnvSource, StoreSource, TrainRunSource
from leaderboards.records import EpisodeRecord, StepRecord
from leaderboards.runner import BenchOptions, run_bench
from leaderboards.store import open_store
from leaderboards.suite import load_suite

ENTRIES = [{"env": "agentgym/Maze-Easy-v0", "tasks": 2, "protocol": "tool_calls"},
           {"env": "agentgym/GuessNumber-v0", "tasks": 2, "protocol": "tool_calls", "max_steps": 8},
           {"env": "agentgym/Wordle-Easy-v0", "tasks": 2, "max_steps": 6}]
ALL = ("jsonl", "parquet", "hf")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A store holding the expert's episodes of three entries (two with tool calls) and random's of one."""
    tmp = tmp_path_factory.mktemp("export-store")
    path = tmp / "results.sqlite"
    suite = write_suite(tmp / "s.yaml", ENTRIES, name="exportsuite")
    run_bench(suite, "expert", path, BenchOptions(progress=False))
    run_bench(write_suite(tmp / "r.yaml", ENTRIES[2:], name="randomsuite"), "random", path, BenchOptions(progress=False))
    return path


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_store_export_round_trips_byte_identically_in_every_form(store, tmp_path):
    written = export(StoreSource(store), tmp_path / "a", ALL)
    assert [p.name for p in written] == ["trajectories.jsonl", "trajectories.parquet", "hf"]
    records = load_trajectories(tmp_path / "a")
    assert len(records) == 8 and len({r["id"] for r in records}) == 8
    # JSONL, Parquet and datasets hold the same records
    assert load_trajectories(tmp_path / "a" / "trajectories.parquet") == records
    assert load_trajectories(tmp_path / "a" / "hf") == records
    # loaded records re-export to the same bytes, in every form; a second export of the store too
    export(RecordsSource(records), tmp_path / "b", ALL)
    export(StoreSource(store), tmp_path / "c", ALL)
    assert _files(tmp_path / "a") == _files(tmp_path / "b") == _files(tmp_path / "c")
    # running the same export again is a no-op; another source into the same directory is refused
    export(StoreSource(store), tmp_path / "a")
    with pytest.raises(ExportError, match="holds other episodes"):
        export(StoreSource(store, ["random"]), tmp_path / "a")


def test_records_say_what_happened(store, tmp_path):
    records = {r["id"]: r for r in load_trajectories(export(StoreSource(store), tmp_path)[0])}
    maze = records["store:expert/exportsuite/v1/agentgym/Maze-Easy-v0/1"]
    assert (maze["env_id"], maze["policy"], maze["seed"], maze["source"]) == ("agentgym/Maze-Easy-v0", "expert", 1, "store")
    assert maze["outcome"]["won"] and maze["outcome"]["steps"] == len(maze["rewards"]) == len(maze["turns"])
    assert sum(maze["rewards"]) == pytest.approx(maze["outcome"]["return"])
    calls = [m for m in maze["messages"] if m["role"] == "assistant"]
    assert all(m["tool_calls"][0]["function"]["name"] == "act" for m in calls)
    actions = [json.loads(m["tool_calls"][0]["function"]["arguments"])["action"] for m in calls]
    assert actions == [t["action"] for t in maze["turns"]] and [t["tool_call_id"] for t in maze["messages"]
                                                                 if t["role"] == "tool"] == [c["tool_calls"][0]["id"] for c in calls]
    assert [t["function"]["name"] for t in maze["tools"]] == ["act"]
    # the first user message is what the env showed at that seed; the store's steps are the rest
    import agentgym_envs

    env = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="tool_calls")
    first, info = env.reset(seed=1)
    assert maze["messages"][1]["content"].endswith(first) and maze["messages"][0]["content"] == info["system_prompt"]
    with open_store(store, create=False) as s:
        run = next(r for r in s.runs() if r.name == "expert")
        row = next(r for r in s.episode_rows(run) if r["entry"] == "agentgym/Maze-Easy-v0" and r["episode_index"] == 1)
        stored = s.steps(row["id"])
    assert [t["reply"] for t in maze["turns"]] == [st["reply"] for st in stored]
    assert [m["content"] for m in maze["messages"] if m["role"] == "tool"] == [st["observation"] for st in stored]
    wordle = records["store:random/randomsuite/v1/agentgym/Wordle-Easy-v0/0"]
    assert wordle["tools"] is None and {m["role"] for m in wordle["messages"]} == {"system", "user", "assistant"}
    assert all(t["reply"] is None for t in wordle["turns"])  # the reply is the assistant content itself


def test_env_source_plays_what_the_store_holds(store, tmp_path):
    """An env played for the export gives the very chat the leaderboard stored for the same entry."""
    played = load_trajectories(export(EnvSource("agentgym/Maze-Easy-v0", "expert", episodes=2, protocol="tool_calls"),
                                      tmp_path)[0])
    stored = [r for r in load_trajectories(export(StoreSource(store, ["expert"]), tmp_path / "s")[0])
              if r["env_id"] == "agentgym/Maze-Easy-v0"]
    assert [p["messages"] for p in played] == [s["messages"] for s in stored]
    assert [p["rewards"] for p in played] == [s["rewards"] for s in stored] and played[0]["source"] == "env"


KILLER = """
import os, signal, sys
from leaderboards.export import write_jsonl
from leaderboards.export_sources import EnvSource

def progress(done, total):
    if done == 3:
        os.kill(os.getpid(), signal.SIGKILL)

write_jsonl(EnvSource("agentgym/Wordle-Easy-v0", "random", episodes=6, max_steps=4), sys.argv[1], progress=progress)
"""


def test_killed_export_resumes_to_the_same_bytes(tmp_path):
    out = tmp_path / "killed.jsonl"
    killed = subprocess.run([sys.executable, "-c", KILLER, str(out)], cwd=REPO, capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL and not out.exists()
    part = out.with_name(out.name + ".part")
    assert part.read_bytes().count(b"\n") == 3
    with open(part, "ab") as f:  # a kill in the middle of a line leaves it torn
        f.write(b'{"format":"agentgym.trajectory/1","id":"env:agentgym/Wordle-Ea')
    seen: list[int] = []
    write_jsonl(EnvSource("agentgym/Wordle-Easy-v0", "random", episodes=6, max_steps=4), out,
                progress=lambda done, total: seen.append(done))
    assert seen[0] == 3 and seen[-1] == 6 and not part.exists()  # the first three were not played again
    whole = write_jsonl(EnvSource("agentgym/Wordle-Easy-v0", "random", episodes=6, max_steps=4), tmp_path / "whole.jsonl")
    assert out.read_bytes() == whole.read_bytes() and out.read_bytes().count(b"\n") == 6
    # a partial export of other inputs is refused, not mixed
    other = tmp_path / "other.jsonl"
    other.with_name("other.jsonl.part").write_bytes(whole.read_bytes().split(b"\n")[0] + b"\n")
    with pytest.raises(ExportError, match="partial export of other inputs"):
        write_jsonl(EnvSource("agentgym/Wordle-Easy-v0", "random", episodes=6, seed=7, max_steps=4), other)


HOSTILE = ["x" * (3 << 20), "nul\x00 esc\x1b del\x7f c1\x85 ls\u2028 ps\u2029 end", "lone \ud800 high", "lone \udfff low",
           "pair \ud83d\ude00 as surrogates", "😀 ünïcödé", '"}\n{"id": "forged"}', ""]


def _hostile_record(k: int, reply: str) -> dict:
    turns = [{"reply": reply, "observation": f"obs {reply[:50]}", "reward": 0.5, "action": reply[:10],
              "action_valid": False, "parse_error": reply[:20]}]
    return make_record(id=f"hostile/{k}", source="env", env_id="agentgym/Maze-Easy-v0", policy="random", seed=k,
                       task_index=None, system_prompt="sys \ud800", first_observation="start", tools=None, turns=turns,
                       outcome={"won": False, "score": float("nan"), "return": 0.5, "terminated": True,
                                "truncated": False}, meta={"k": k})


def test_hostile_replies_survive_or_are_escaped_deterministically(tmp_path):
    records = [_hostile_record(k, reply) for k, reply in enumerate(HOSTILE)]
    path = write_jsonl(RecordsSource(records), tmp_path / "h.jsonl")
    data = path.read_bytes()
    data.decode("utf-8")  # valid UTF-8 throughout
    assert data.count(b"\n") == len(HOSTILE) and b"\xe2\x80\xa8" not in data and b"\xc2\x85" not in data
    loaded = load_trajectories(path)
    replies = [r["messages"][2]["content"] for r in loaded]
    assert replies[0] == HOSTILE[0] and replies[1] == HOSTILE[1] and replies[6] == HOSTILE[6]
    assert replies[2] == "lone \ufffd high" and replies[3] == "lone \ufffd low"  # not encodable: U+FFFD
    assert replies[4] == "pair 😀 as surrogates" and loaded[0]["messages"][0]["content"] == "sys \ufffd"
    assert loaded[0]["outcome"]["score"] is None and [r["id"] for r in loaded] == [f"hostile/{k}" for k in range(8)]
    assert write_jsonl(RecordsSource(loaded), tmp_path / "again.jsonl").read_bytes() == data
    parquet = write_parquet(path, tmp_path / "h.parquet")
    assert load_trajectories(parquet) == loaded
    assert load_trajectories(write_hf(parquet, tmp_path / "hf")) == loaded


def test_hostile_stored_episode_exports(tmp_path):
    """Control characters, a forged JSON line and a megabyte reply stored by the leaderboard come out intact; a
    lone surrogate (an endpoint's JSON can carry one) is stored as U+FFFD instead of failing the whole run."""
    suite = load_suite(write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 1}], name="h"))
    entry = suite.entries[0]
    replies = ["\x00\x1b[2J" + "y" * (1 << 20), '"}\n{"id": "forged"}\u2028', "go \ud800east"]
    steps = [StepRecord(t, r, None, f"obs{t}\x7f", 0.0, False, False, False, "no action", "stop", None, None, 0, 0.0, 0.0)
             for t, r in enumerate(replies)]
    with open_store(tmp_path / "r.sqlite") as s:
        run = s.run("hostile", "random", suite, {})
        s.record_episode(run, EpisodeRecord(entry.key, entry.env_id, entry.family, 0, 0, 0, 0, None, False, 0.0, 0.0,
                                            False, True, 0.1, steps=steps))
    record = load_trajectories(export(StoreSource(tmp_path / "r.sqlite"), tmp_path / "out", ALL)[0])[0]
    assert [m["content"] for m in record["messages"] if m["role"] == "assistant"] == [*replies[:2], "go \ufffdeast"]
    assert record["messages"][-1]["content"] == "obs2\x7f"
    assert load_trajectories(tmp_path / "out" / "hf") == [record]


def test_messages_render_with_the_tiny_policys_chat_template(store, tmp_path):
    """SFT sanity: every exported chat goes through ``apply_chat_template`` of the tiny policy (tools included),
    and a tool call rendered from ``tool_calls`` is the reply the expert wrote."""
    from trainer.config import load_config
    from trainer.models.tiny import build_tiny

    config = load_config(None, ["policy.tiny.corpus_episodes=40", "policy.tiny.model.hidden_size=64",
                                "policy.tiny.model.num_layers=1", "policy.tiny.model.num_heads=1",
                                "policy.tiny.model.intermediate_size=128"])
    _, tokenizer = build_tiny(config.policy.tiny, str(tmp_path / "tiny"))
    records = load_trajectories(export(StoreSource(store), tmp_path / "out")[0])
    for record in records:
        text = tokenizer.apply_chat_template(record["messages"], tools=record["tools"], tokenize=False)
        ids = tokenizer.apply_chat_template(record["messages"], tools=record["tools"], tokenize=True,
                                            return_dict=True)["input_ids"]
        assert len(ids) > len(record["messages"]) and tokenizer.decode(ids) == text
        for message, turn in zip([m for m in record["messages"] if m["role"] == "assistant"], record["turns"]):
            assert (turn["reply"] or message["content"]) in text  # the raw reply, as the template writes it back
        for message in record["messages"]:
            assert message["content"] in text


def test_training_rollouts_dump_and_export(tmp_path):
    """``rollout.dump=true`` writes each step's rollouts; the export holds them as chats with the trained rewards."""
    from trainer.config import load_config
    from trainer import Trainer, fit

    overrides = ["policy.tiny.corpus_episodes=40", "policy.tiny.model.hidden_size=64", "policy.tiny.model.num_heads=1",
                 "policy.tiny.model.num_layers=1", "policy.tiny.model.intermediate_size=128", "progress=false",
                 f"policy.cache_dir={tmp_path / 'tiny'}", "rollout.tasks_per_step=2", "rollout.group_size=2",
                 "rollout.max_new_tokens=8", "env.max_turns=2", "steps=2", "bc.episodes=0",
                 "env.env_id=agentgym/GuessNumber-v0", "rollout.dump=true", f"out_dir={tmp_path / 'run'}"]
    trainer = Trainer(load_config(None, overrides))
    log = fit(trainer, echo=None)
    trainer.close()
    assert sorted(p.name for p in (tmp_path / "run" / "rollouts").iterdir()) == ["step_000001.jsonl", "step_000002.jsonl"]
    records = load_trajectories(export(TrainRunSource(tmp_path / "run"), tmp_path / "out", ALL)[0])
    assert len(records) == 8 and records[0]["id"] == "train:run/step_1/0" and records[0]["source"] == "train"
    assert [t["function"]["name"] for t in records[0]["tools"]] == ["give_up", "guess"]
    for step in (1, 2):
        mean = sum(r["outcome"]["return"] for r in records if r["meta"]["step"] == step) / 4
        assert mean == pytest.approx(log[step - 1]["reward"])
    for r in records:
        assert len([m for m in r["messages"] if m["role"] == "assistant"]) == len(r["rewards"]) == r["outcome"]["steps"]
        assert r["messages"][0]["role"] == "system" and "integer between 1 and 100" in r["messages"][1]["content"]
    seeds = {(r["meta"]["step"], r["meta"]["group"]): r["seed"] for r in records}  # a group shares its start
    assert all(r["seed"] == seeds[r["meta"]["step"], r["meta"]["group"]] for r in records) and len(set(seeds.values())) == 4
    assert load_trajectories(tmp_path / "out" / "hf") == records
    with pytest.raises(ExportError, match="rollout.dump=true"):
        TrainRunSource(tmp_path / "out")


def test_cli_exports_and_reports_errors(store, tmp_path):
    out = agentgym("export", "--store", str(store), "--run", "random", "--out", str(tmp_path / "x"), "--format", "all",
                   "--quiet")
    assert out.returncode == 0, out.stderr
    assert len(load_trajectories(tmp_path / "x" / "hf")) == 2 and "trajectories.parquet" in out.stderr
    bad = agentgym("export", "--store", str(store), "--run", "nobody", "--out", str(tmp_path / "y"))
    assert bad.returncode == 2 and "no run named nobody" in bad.stderr and "random" in bad.stderr
    env = agentgym("export", "--env", "agentgym/Maze-Easy-v0", "--episodes", "1", "--out", str(tmp_path / "z"),
                   "--kwargs", "[1]")
    assert env.returncode == 2 and "--kwargs expects a JSON object" in env.stderr
    assert not os.path.exists(tmp_path / "y") and not os.path.exists(tmp_path / "z")


def test_an_export_reads_the_store_as_it_was_when_opened(tmp_path):
    """A runner still writing the store adds nothing to an export under way (ids are a snapshot)."""
    suite = load_suite(write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 2}], name="live"))
    entry = suite.entries[0]

    def episode(index: int) -> EpisodeRecord:
        step = StepRecord(0, "go east", "go east", "ok", 1.0, True, False, True, None, "stop", None, None, 0, 0.0, 0.0)
        return EpisodeRecord(entry.key, entry.env_id, entry.family, index, index, 0, index, None, True, 1.0, 1.0, True,
                             False, 0.1, steps=[step])

    with open_store(tmp_path / "r.sqlite") as s:
        run = s.run("live", "expert", suite, {})
        s.record_episode(run, episode(0))
        source = StoreSource(tmp_path / "r.sqlite")
        s.record_episode(run, episode(1))  # stored after the export opened the store
    path = write_jsonl(source, tmp_path / "out.jsonl")
    source.close()
    assert [r["id"] for r in load_trajectories(path)] == ["store:live/live/v1/agentgym/Maze-Easy-v0/0"]
    later = StoreSource(tmp_path / "r.sqlite")
    assert len(later.ids()) == 2
    later.close()


def test_env_source_retries_infrastructure_failures_then_stops_with_a_message():
    from leaderboards.episode import InfraFailed

    source = EnvSource("agentgym/Maze-Easy-v0", "expert", episodes=1)
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise InfraFailed("policy", "EndpointError: connection refused")
        return "played"

    assert source._play(0, flaky) == "played" and len(calls) == 3

    def down():
        raise InfraFailed("env", "the browser died")

    with pytest.raises(ExportError, match="failed 3 times for infrastructure reasons .*rerun to resume"):
        source._play(0, down)
    with pytest.raises(ExportError, match="expert failed \\(KeyError"):
        source._play(0, lambda: {}["missing"])
    source.close()
