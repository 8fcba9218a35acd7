"""The ``info`` tables of docs/sdk.md ("What `info` holds") agree with what every registered env reports.

The tables are parsed from the page itself, so neither the page nor an env can change without the other:
every registered id must match exactly one row, each row must match some id, and an episode of each id
(reset, then the expert to the end, two seeds) must show each key where the row says it is and nowhere
else. README.md and docs/architecture.md summarise these tables and link to them.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

import gymnasium
import pytest

import agentgym_envs

SDK = Path(__file__).resolve().parents[1] / "docs" / "sdk.md"
HEADING = "## What `info` holds"
EVERY, NEVER, SOME = "every step", "—", "some"
MAX_STEPS = 80


@dataclass(frozen=True)
class Row:
    patterns: tuple[str, ...]
    valid_actions: str  # EVERY, NEVER or SOME
    tools: str
    extras: frozenset[str]


def _tables() -> list[list[list[str]]]:
    text = SDK.read_text(encoding="utf-8")
    assert HEADING in text, f"expected a section {HEADING!r} in {SDK}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    tables, current = [], []
    for line in section.splitlines() + [""]:
        if line.startswith("|"):
            current.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif current:
            tables.append([row for row in current[2:]])  # drop the header and the --- line
            current = []
    return tables


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _mode(cell: str) -> str:
    return EVERY if cell == EVERY else NEVER if cell == NEVER else SOME


def _documented() -> tuple[set[str], set[str], list[Row]]:
    when, per_env = _tables()[:2]
    always = next(set(_names(keys)) for keys, text in when if text == "on reset and every step")
    reset_only = next(set(_names(keys)) for keys, text in when if text == "on reset only")
    rows = [Row(tuple(_names(envs)), _mode(va), _mode(tools), frozenset(_names(other)))
            for envs, va, tools, other in per_env]
    return always, reset_only, rows


ALWAYS, RESET_ONLY, ROWS = _documented()
# The package's own catalogue, not gymnasium.registry: other test modules register test-only ids there.
IDS = sorted(agentgym_envs.env_ids())


def _row(env_id: str) -> Row:
    matches = [row for row in ROWS if any(fnmatch.fnmatchcase(env_id, p) for p in row.patterns)]
    assert len(matches) == 1, f"expected {env_id} in exactly one row of the table in {SDK.name}, got {len(matches)}"
    return matches[0]


def _move(env: gymnasium.Env, info: dict) -> str:
    try:
        return env.unwrapped.expert_action()
    except Exception:  # no scripted solver for this state: any listed move, else a harmless word
        return (info.get("valid_actions") or ["look"])[0]


def _episodes(env_id: str, **make_kwargs) -> tuple[list[dict], list[dict]]:
    """The infos of reset and of every step of two expert episodes (seeds 0 and 1)."""
    env = agentgym_envs.make(env_id, **make_kwargs)
    resets, steps = [], []
    try:
        for seed in (0, 1):
            _, info = env.reset(seed=seed)
            resets.append(info)
            for _ in range(MAX_STEPS):
                _, _, terminated, truncated, info = env.step(_move(env, info))
                steps.append(info)
                if terminated or truncated:
                    break
    finally:
        env.close()
    return resets, steps


def test_the_tables_parse_and_every_row_names_a_registered_env():
    assert {"action_valid", "state_key", "infra_error", "metrics"} <= ALWAYS and {"instruction", "system_prompt"} == RESET_ONLY
    assert len(ROWS) >= 10
    for row in ROWS:
        for pattern in row.patterns:
            assert any(fnmatch.fnmatchcase(i, pattern) for i in IDS), f"{pattern} in {SDK.name} matches no registered id"


@pytest.mark.parametrize("env_id", IDS)
def test_the_env_reports_what_the_docs_say(env_id: str):
    row = _row(env_id)
    resets, steps = _episodes(env_id)
    infos = resets + steps
    for info in resets:
        assert ALWAYS | RESET_ONLY <= set(info), f"{env_id} reset lacks {sorted(ALWAYS | RESET_ONLY - set(info))}"
    for info in steps:
        assert ALWAYS <= set(info), f"{env_id} step lacks {sorted(ALWAYS - set(info))}"
        assert not RESET_ONLY & set(info), f"{env_id} reports {sorted(RESET_ONLY & set(info))} on a step; docs say reset only"
    for key, mode in (("valid_actions", row.valid_actions), ("tools", row.tools)):
        present = [key in info for info in infos]
        if mode == EVERY:
            assert all(present), f"docs say {env_id} reports {key} on every step; missing on {present.count(False)}"
        elif mode == NEVER:
            assert not any(present), f"docs say {env_id} never reports {key}; seen on {sum(present)}"
        else:
            assert any(present) and not all(present), f"docs say {env_id} reports {key} in some states; seen {sum(present)}/{len(present)}"
    seen = set().union(*infos) - ALWAYS - RESET_ONLY - {"valid_actions", "tools"}
    assert seen <= row.extras, f"{env_id} reports {sorted(seen - row.extras)}, not in its row of {SDK.name}"


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.patterns[0])
def test_behind_a_protocol_every_step_names_the_native_action_and_tool_calls_bring_tools(row: Row):
    env_id = next(i for i in IDS if any(fnmatch.fnmatchcase(i, p) for p in row.patterns))
    resets, steps = _episodes(env_id, protocol="tool_calls")
    assert all(info.get("tools") for info in resets + steps), f"{env_id} behind tool_calls lacks tools"
    assert all("native_action" in info for info in steps)
    _, plain_steps = _episodes(env_id)
    assert not any("native_action" in info for info in plain_steps), "native_action comes from the protocol wrapper"
