"""Checkpoints: everything a killed run needs to go on exactly as if it had never stopped.

A checkpoint is one ``state.pt`` in ``<out_dir>/checkpoints/step_<n>/``: model and reference weights,
optimiser and scheduler state, global RNG states, the task sampler's cursor, the step and the config.
It is written to a temporary directory and renamed, so a kill mid-write leaves the previous checkpoint
intact; ``latest`` names the newest complete one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import torch

from .errors import CheckpointError


def checkpoint_dir(out_dir: str | Path) -> Path:
    return Path(out_dir) / "checkpoints"


def save_checkpoint(out_dir: str | Path, step: int, state: dict[str, Any], keep: int = 2) -> Path:
    """Write ``state`` for ``step`` atomically, point ``latest`` at it, and keep the newest ``keep`` (>= 1)."""
    keep = max(keep, 1)
    root = checkpoint_dir(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step:08d}"
    tmp = root / f".tmp_step_{step:08d}_{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    torch.save(state, tmp / "state.pt")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    (root / "latest.tmp").write_text(final.name)
    (root / "latest.tmp").replace(root / "latest")
    older = sorted(p for p in root.glob("step_*") if p.name < final.name)
    for old in older[:max(len(older) - (keep - 1), 0)]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(out_dir: str | Path) -> Path | None:
    pointer = checkpoint_dir(out_dir) / "latest"
    if not pointer.exists():
        return None
    path = checkpoint_dir(out_dir) / pointer.read_text().strip()
    if not (path / "state.pt").exists():
        raise CheckpointError(f"{pointer} names {path.name}, which has no state.pt; delete the pointer to start over")
    return path


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    return torch.load(Path(path) / "state.pt", map_location="cpu", weights_only=False)
