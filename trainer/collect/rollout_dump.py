"""Rollout dumps: every training step's episodes as chat data, for ``agentgym export --train-run`` (opt-in).

With ``rollout.dump: true`` the loop writes the rollouts it collected for step ``n`` (the ``step`` of that
update's ``metrics.jsonl`` record) to ``out_dir/rollouts/step_<n>.jsonl``, one JSON line per episode, in the
order the rollout returned them: the chat the policy saw (system prompt, first observation, each reply as
sampled and the observation after it, the final one included), the tools of a tool-calling protocol, per-turn
rewards as trained on (``rollout.invalid_penalty`` applied), per-turn validity where recorded, the outcome and
where it came from (task index, reset seed, group). Tokens and log-probs are not written: the export is chat
data for SFT and offline RL, not a replay buffer.

Each file is written whole and then renamed, so a killed run leaves complete files only, and a resumed run
rewrites the steps it replays with the same bytes (CPU runs are deterministic). Under ``torchrun`` rank 0
writes its own share. Turning the dump on or off does not change what trains (a resume may change it).
:mod:`leaderboards.export_sources` turns these lines into trajectory records.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from agentgym_envs.chat import chat_tools

from .episodes import PlaySpec
from .trajectory import Trajectory

DUMP_DIR = "rollouts"
#: The dump line's version: ``agentgym export`` refuses lines of a version it does not know.
DUMP_VERSION = 1


def dump_path(out_dir: str | Path, step: int) -> Path:
    """Where the rollouts of update ``step`` go."""
    return Path(out_dir) / DUMP_DIR / f"step_{step:06d}.jsonl"


def dump_line(trajectory: Trajectory, *, step: int, index: int, spec: PlaySpec, run: str) -> dict[str, Any]:
    """One episode's dump record (see the module docstring)."""
    chat = list(trajectory.chat or [])
    tools = chat_tools(trajectory.chat or [])
    return {"dump_version": DUMP_VERSION, "run": run, "step": step, "index": index, "env_id": spec.env_id,
            "kwargs": spec.kwargs, "protocol": spec.protocol, "task_index": trajectory.task_index,
            "reset_seed": trajectory.reset_seed, "group": trajectory.group, "messages": [dict(m) for m in chat],
            "tools": tools, "replies": list(trajectory.replies), "rewards": list(trajectory.rewards),
            "turn_valid": list(trajectory.turn_valid) or None, "won": trajectory.won, "finish": trajectory.finish,
            "infra_error": trajectory.infra_error}


def dump_rollouts(out_dir: str | Path, step: int, trajectories: Sequence[Trajectory], spec: PlaySpec) -> Path:
    """Write step ``step``'s trajectories atomically: infra errors included (the export leaves them out), those
    without a chat left out (``rollout.source=gateway``: the external harness holds the chat)."""
    path = dump_path(out_dir, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    run = Path(out_dir).name
    lines = [json.dumps(dump_line(t, step=step, index=i, spec=spec, run=run), sort_keys=True, allow_nan=True) + "\n"
             for i, t in enumerate(trajectories) if t.chat is not None]
    tmp = path.with_name(path.name + ".part")
    tmp.write_text("".join(lines), encoding="ascii")  # json's default ensure_ascii: any reply text survives
    os.replace(tmp, path)
    return path
