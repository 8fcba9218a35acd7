"""The hostile corpus (``agentgym_envs/fuzz.py``) against every registered id × every action protocol.

The rule under test (``docs/architecture.md``, Rules that hold everywhere): anything reachable from the agent's actions ends as an
observation or an agent-attributed termination — never an exception, never ``info["infra_error"]``.

Each (id, protocol) pair gets, on fresh episodes (reset with seed 0 whenever one ends):

* the short battery (``hostile_actions``) in full;
* on tool envs, the whole corpus and every hostile call to each of its own tools (``hostile_tool_calls``);
* on other envs, a deterministic third of the rest of the corpus, rotated by protocol so that each entry
  meets each id at least once over the five protocols (the whole corpus everywhere would take minutes);
* with a protocol, each string payload both as it is and written in the protocol's format
  (``in_protocol``), so that it gets past the parser and reaches the env; on tool envs also as the string
  argument of one of the env's tools (``as_tool_call``), so that it reaches the tool itself.

Terminal-v0 runs a real sandbox per command, so it gets the battery and a 1-in-5 sample of the rest, rotated by
protocol so that each entry meets it once over the five protocols.
"""

from __future__ import annotations

import math
import time

import gymnasium
import pytest

import agentgym_envs
from agentgym_envs.fuzz import (HostileAction, as_tool_call, hostile_actions, hostile_corpus, hostile_tool_calls,
                                in_protocol, one_in)
from agentgym_envs.protocols.wrapper import ActionProtocolWrapper

PROTOCOLS = ("native", "plain", "react", "tags", "tool_calls")
#: The shipped ids (the catalogue), not ids other test modules register for themselves (a leaderboard test's
#: sleeping env cost this battery ~100 s of CI when collected first).
SHIPPED = {e.id for e in agentgym_envs.registration.catalogue()}
ENV_IDS = sorted(k for k in gymnasium.registry if k in SHIPPED)
#: A step slower than this is a failure too (a regex or parser gone quadratic on a 16 KiB action).
STEP_SECONDS = 10.0
#: How much of the non-battery corpus each (id, protocol) pair gets: all of it on tool envs.
SAMPLE_ONE_IN = {"agentgym/Terminal-v0": 5}
NON_TOOL_ONE_IN = 3
#: Terminal-v0: a command bash never finishes reading (``{`` × 100,000) runs to the command timeout, which
#: is the agent's own outcome (an observation saying so); 3 s instead of 30 keeps that under STEP_SECONDS.
MAKE_KWARGS = {"agentgym/Terminal-v0": {"command_timeout": 3.0}}


def _entries(env_id: str, protocol: str, env: gymnasium.Env) -> list[HostileAction]:
    battery = [HostileAction(f"battery-{i}", a) for i, a in enumerate(hostile_actions())]
    rest = tuple(e for e in hostile_corpus() if not e.name.startswith("battery-"))
    tools = env.unwrapped.tools
    n = SAMPLE_ONE_IN.get(env_id, 1 if tools else NON_TOOL_ONE_IN)
    offset = PROTOCOLS.index(protocol)
    sampled = one_in(rest + hostile_tool_calls(tools), n, key=env_id, offset=offset)
    return [*battery, *sampled]


def _replies(entries: list[HostileAction], protocol: str, tools: list | None):
    for entry in entries:
        yield entry.name, entry.payload
        if not isinstance(entry.payload, str):
            continue
        if protocol != "native":
            yield entry.name + "/in-protocol", in_protocol(entry.payload, protocol, tool_env=tools is not None)
        if (call := as_tool_call(entry.payload, tools)) is not None:
            yield entry.name + "/as-tool-argument", in_protocol(call, protocol, tool_env=True)


#: What ``ActionProtocolWrapper`` appends when it rejects a reply before the env sees it.
REJECTED_BY_PROTOCOL = "\nReply format: "
#: At least this many replies per (id, protocol) must get past the protocol to the env (else the test
#: would only be testing the parsers).
MIN_REACHING_ENV = 30


def _check_step(env: gymnasium.Env, reply) -> tuple[str | None, bool]:
    """The step's defect (``None`` when it ended as the contract says), and whether the reply reached the env."""
    start = time.perf_counter()
    try:
        obs, reward, terminated, truncated, info = env.step(reply)
    except Exception as e:  # noqa: BLE001 — any exception is the defect being counted
        env.reset(seed=0)
        return f"raised {type(e).__name__}: {str(e)[:120]}", True
    elapsed = time.perf_counter() - start
    if terminated or truncated:
        env.reset(seed=0)
    reached = not (isinstance(obs, str) and REJECTED_BY_PROTOCOL in obs)
    if info.get("infra_error") is not None:
        return f"infra_error: {str(info['infra_error'])[:120]}", reached
    if not isinstance(obs, str) or not math.isfinite(reward):
        return f"observation {type(obs).__name__}, reward {reward!r}", reached
    if elapsed > STEP_SECONDS:
        return f"took {elapsed:.1f} s", reached
    return None, reached


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_hostile_corpus_never_raises_nor_blames_infrastructure(env_id: str, protocol: str) -> None:
    base = gymnasium.make(env_id, **MAKE_KWARGS.get(env_id, {}))
    env = base if protocol == "native" else ActionProtocolWrapper(base, protocol)
    failures, reached = [], 0
    try:
        env.reset(seed=0)
        entries = _entries(env_id, protocol, env)
        for name, reply in _replies(entries, protocol, env.unwrapped.tools):
            defect, got_there = _check_step(env, reply)
            reached += got_there
            if defect is not None:
                failures.append(f"{name}: {defect}")
    finally:
        env.close()
    assert not failures, f"{len(failures)} of {len(entries)} hostile entries broke the contract:\n" + "\n".join(failures[:15])
    assert reached >= MIN_REACHING_ENV, f"only {reached} hostile replies got past the {protocol} parser to the env"


def test_the_corpus_holds_the_attacks_of_issue_15() -> None:
    """The reproductions the corpus must keep: deep JSON, 5,000-digit integers, 1 MiB, NUL, lone surrogates."""
    payloads = [e.payload for e in hostile_corpus()]
    texts = [p for p in payloads if isinstance(p, str)]
    assert any(t.startswith('{"name": "guess", "arguments": {"number": [[[[') for t in texts)
    assert any('"number": ' + "9" * 5000 in t for t in texts)
    assert any(t.startswith("bid " + "9" * 4000) for t in texts)
    assert any(len(t) == 1 << 20 for t in texts) and "\x00" in texts and "\ud800" in texts
    assert any(t.startswith("Thought: ") and "[[[[" in t for t in texts) and any(t.startswith("<action>{0") for t in texts)
    assert len({e.name for e in hostile_corpus()}) == len(hostile_corpus()) > 500


def test_one_in_partitions_the_corpus_over_offsets() -> None:
    corpus = hostile_corpus()
    parts = [one_in(corpus, 3, key="agentgym/Maze-v0", offset=k) for k in range(3)]
    assert sorted(e.name for p in parts for e in p) == sorted(e.name for e in corpus)
    assert all(len(p) > len(corpus) // 4 for p in parts) and parts[0] == one_in(corpus, 3, key="agentgym/Maze-v0")


@pytest.mark.parametrize("call", [
    '{"name": "guess", "arguments": {"number": ' + "9" * 5000 + "}}",
    '{"name": "guess", "arguments": {"number": ' + "[" * 5000 + "]" * 5000 + "}}",
    '{"name": "guess", "arguments": "{\\"number\\": ' + "9" * 5000 + '}"}',
    '{"name": "guess", "arguments": "' + "[" * 5000 + '"}',
], ids=["huge-int", "deep-json", "huge-int-in-string", "deep-json-in-string"])
def test_tool_env_rejects_json_past_the_decoder_limits(call: str) -> None:
    """The reproduction of issue 15 §1: these used to raise ValueError/RecursionError out of ``parse_call``."""
    env = gymnasium.make("agentgym/GuessNumber-v0")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(call)
    assert info["action_valid"] is False and info["infra_error"] is None and not terminated
    assert "too many digits" in obs or "nests too deeply" in obs or "malformed JSON" in obs


def test_liars_dice_reads_a_5000_digit_bid_as_an_illegal_move() -> None:
    env = gymnasium.make("agentgym/LiarsDice-VsScripted-v0")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("bid " + "9" * 5000 + " 3")
    assert info["infra_error"] is None and info["action_valid"] is False


@pytest.mark.parametrize("env_id", agentgym_envs.multi_ids())
def test_hostile_corpus_on_multi_agent_games(env_id: str) -> None:
    """The PettingZoo games themselves (not only their single-agent seats): hostile text forfeits, never raises."""
    env = agentgym_envs.make_multi(env_id, render_mode="ansi")
    for entry in hostile_corpus():
        env.reset(seed=0)
        mover = env.agent_selection
        env.step(entry.payload)
        obs, reward, terminated, truncated, info = env.last()
        assert isinstance(obs, str) and isinstance(env.render(), str), entry.name
        legal = env.infos[mover]["action_valid"]  # a few entries are moves ("bid 1 3", "{!r}" reads as "r": rock)
        assert legal or terminated, f"{entry.name}: an illegal move did not forfeit"
