"""Optional Weights & Biases logging, offline only: every ``metrics.jsonl`` record mirrored into a local
W&B run under ``<out_dir>/wandb/`` (``wandb.enabled=true``; needs ``pip install 'agentgym[wandb]'``).

The run never phones home: :func:`offline_environment` pins ``WANDB_MODE=offline``, turns off W&B's error
reporting (Sentry), system and machine metadata collection, git and code capture, and the run is started
with the same settings passed to ``wandb.init`` (``mode="offline"``). Nothing leaves the machine until you
upload it yourself with ``wandb sync <out_dir>/wandb/offline-run-*``. A resumed run starts a new offline run
whose history continues at the resumed step. ``metrics.jsonl`` stays the record of truth
(:mod:`trainer.run.dashboard` plots it); W&B is a mirror for those who already use it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, TrainerError

#: Environment W&B reads before it starts its service: offline, no Sentry, no stats, no git/code capture.
OFFLINE_ENVIRONMENT = {"WANDB_MODE": "offline", "WANDB_ERROR_REPORTING": "false", "WANDB_DISABLE_GIT": "true",
                       "WANDB_DISABLE_CODE": "true", "WANDB_SILENT": "true"}


@dataclass
class WandbConfig:
    """``wandb.*`` keys: mirror the run's metrics into an offline W&B run (off by default)."""

    enabled: bool = False
    """Write an offline W&B run under ``<out_dir>/wandb/`` (needs the ``wandb`` extra)."""
    project: str = "agentgym"
    """W&B project name recorded in the run (used when you ``wandb sync`` it)."""
    name: str = ""
    """Run name (``""``: the name of ``out_dir``)."""
    group: str = ""
    """Optional W&B group, e.g. one per sweep (``""``: none)."""

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ConfigError(f"wandb.enabled must be true or false, got {self.enabled!r}")
        if not (isinstance(self.project, str) and self.project.strip()):
            raise ConfigError(f"wandb.project must be a non-empty name, got {self.project!r}")


class WandbUnavailableError(TrainerError, ImportError):
    """``wandb.enabled=true`` but the ``wandb`` package is not installed."""


def offline_environment() -> None:
    """Pin W&B offline for this process (before ``import wandb`` starts anything)."""
    os.environ.update(OFFLINE_ENVIRONMENT)


def _import_wandb() -> Any:
    offline_environment()
    try:
        import wandb
    except ImportError as e:
        raise WandbUnavailableError("wandb.enabled=true needs the wandb package: pip install 'agentgym[wandb]' "
                                    "(or set wandb.enabled=false)") from e
    return wandb


def offline_settings(wandb: Any) -> Any:
    """``wandb.Settings`` for a run that stays on this machine (the same switches as the environment)."""
    return wandb.Settings(mode="offline", silent=True, console="off", disable_git=True, save_code=False,
                          x_disable_stats=True, x_disable_meta=True, x_disable_machine_info=True)


def numeric_items(record: dict[str, Any]) -> dict[str, float]:
    """The finite numbers of a record, without ``step`` (W&B's own axis) and without booleans or text."""
    return {key: float(value) for key, value in record.items()
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)}


class WandbLogger:
    """A :mod:`trainer.run.log` logger that mirrors each record into an offline W&B run at the record's step."""

    def __init__(self, settings: WandbConfig, out_dir: str | Path, config: dict[str, Any]):
        wandb = _import_wandb()
        out = Path(out_dir).resolve()
        out.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(mode="offline", dir=str(out), project=settings.project, name=settings.name or out.name,
                              group=settings.group or None, config=config, settings=offline_settings(wandb),
                              reinit="create_new")

    def log(self, record: dict[str, Any]) -> None:
        values = numeric_items(record)
        if values:
            self.run.log(values, step=int(record.get("step", 0)))

    def close(self) -> None:
        self.run.finish()


def offline_runs(out_dir: str | Path) -> list[Path]:
    """The offline W&B run directories under ``out_dir`` (oldest first), for ``wandb sync`` or inspection."""
    return sorted((Path(out_dir) / "wandb").glob("offline-run-*"))
