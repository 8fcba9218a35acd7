"""Run logging: one JSON object per update in ``metrics.jsonl`` (always), TensorBoard scalars and a rich
progress line (optional)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


class JsonlLogger:
    """Appends one JSON line per record; on resume, drops records past the resumed step first (and a line a
    kill cut short)."""

    def __init__(self, path: str | Path, *, resume_step: int | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume_step is not None and self.path.exists():
            kept = [line for line in self.path.read_text(errors="replace").splitlines()
                    if line.strip() and _logged_step(line) <= resume_step]
            self.path.write_text("".join(line + "\n" for line in kept))
        elif resume_step is None:
            self.path.write_text("")

    def log(self, record: dict[str, Any]) -> None:
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        with self.path.open("a") as f:
            f.write(json.dumps(clean, sort_keys=True) + "\n")


def _logged_step(line: str) -> float:
    """A logged line's ``step``; a line that is not a JSON object (cut short when a run was killed mid-write)
    has none and counts as past any step, so a resume drops it instead of failing on it."""
    try:
        record = json.loads(line)
    except ValueError:
        return math.inf
    step = record.get("step", -1) if isinstance(record, dict) else None
    return step if isinstance(step, (int, float)) else math.inf


class TensorBoardLogger:
    """Writes every finite number of a record as a TensorBoard scalar at the record's ``step``.

    On resume, events at or past the resumed step are purged (``SummaryWriter(purge_step=…)``), so the
    curves of a killed-and-resumed run match the uninterrupted one, as ``metrics.jsonl`` does.
    """

    def __init__(self, log_dir: str | Path, *, resume_step: int | None = None):
        from torch.utils.tensorboard import SummaryWriter  # needs the ``tensorboard`` package (train extra)

        self.writer = SummaryWriter(str(log_dir), purge_step=None if resume_step is None else resume_step + 1)

    def log(self, record: dict[str, Any]) -> None:
        step = int(record.get("step", 0))
        for key, value in record.items():
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                self.writer.add_scalar(key, float(value), step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def summary_line(record: dict[str, Any]) -> str:
    keys = ("step", "reward", "success", "entropy", "clip_fraction", "logprob_gap_max", "tokens_per_s")
    return "  ".join(f"{k}={record[k]:.4g}" if isinstance(record.get(k), float) else f"{k}={record.get(k)}"
                     for k in keys if k in record)
