"""The config tree: :class:`TrainConfig` assembles each room's settings, loads YAML, applies ``key=value``.

Every section is a small dataclass that lives beside what it configures and checks its own fields:

* ``policy`` (``lora``, ``vllm``, ``tiny``): :mod:`trainer.models.policy`, :mod:`trainer.models.tiny`
* ``env``, ``eval``: :mod:`trainer.collect.episodes`; ``rollout``: :mod:`trainer.collect.rollout`;
  ``asynchronous``: :mod:`trainer.collect.staleness`
* ``algorithm``: :mod:`trainer.learn.algorithms`; ``loss``: :mod:`trainer.learn.loss`; ``optim``:
  :mod:`trainer.learn.update`; ``bc``: :mod:`trainer.learn.bc`
* ``gateway``: :mod:`trainer.serve.gateway.config`
* ``distributed``: :mod:`trainer.run.distributed`; ``ray``: :mod:`trainer.run.ray_rollout`; ``wandb``:
  :mod:`trainer.run.wandb_log`

This module only assembles them under :class:`TrainConfig` (with the run's own top-level keys), loads YAML and
applies overrides. Users import it as :mod:`trainer.config`.

>>> config = load_config(None, ["rollout.group_size=4", "loss.kl_coef=0.01"])
>>> config.rollout.group_size, config.loss.kl_coef
(4, 0.01)
>>> load_config(None, ["rollout.group_sise=4"])
Traceback (most recent call last):
...
trainer.errors.ConfigError: unknown config key 'rollout.group_sise'. Did you mean 'rollout.group_size'?
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..collect.episodes import EnvConfig, EvalConfig
from ..collect.rollout import RolloutConfig
from ..collect.staleness import AsyncConfig
from ..errors import ConfigError, require
from ..learn.algorithms import AlgorithmConfig
from ..learn.bc import BCConfig
from ..learn.loss import LossConfig
from ..learn.update import OptimConfig
from ..models.policy import LoraSettings, PolicyConfig, VLLMSettings
from ..models.tiny import TinyConfig
from ..serve.gateway.config import GatewayConfig
from .distributed import DistributedConfig
from .ray_rollout import RaySettings
from .wandb_log import WandbConfig

__all__ = ["AlgorithmConfig", "AsyncConfig", "BCConfig", "DistributedConfig", "EnvConfig", "EvalConfig", "GatewayConfig",
           "LoraSettings", "LossConfig", "OptimConfig", "PolicyConfig", "RaySettings", "RolloutConfig", "TinyConfig",
           "TrainConfig", "VLLMSettings", "WandbConfig", "apply_override", "from_dict", "load_config", "to_dict"]


@dataclass
class TrainConfig:
    """The whole run."""

    seed: int = 0
    steps: int = 20
    out_dir: str = "runs/default"
    checkpoint_every: int = 10
    """Write a checkpoint every this many updates (0: none on the way; see ``checkpoint_last``)."""
    checkpoint_last: bool = True
    """Also write one after the last update (and after the warm-up): what ``checkpoint:`` policies and a later
    resume read. ``false`` writes none at the end (a 135 M model's is 1.6 GB with its optimiser state)."""
    progress: bool = True
    """Show a rich progress bar on a terminal."""
    tensorboard: bool = False
    """Also write every logged number as TensorBoard scalars under ``<out_dir>/tensorboard``."""
    resume: bool = False
    """Resume the checkpoint in ``out_dir`` even if its config differs (``agentgym train --resume``); the
    differing keys are logged. Without it a resume under a changed config is refused (docs/trainer.md)."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    bc: BCConfig = field(default_factory=BCConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    ray: RaySettings = field(default_factory=RaySettings)
    wandb: WandbConfig = field(default_factory=WandbConfig)
    """Mirror the metrics into an offline Weights & Biases run (:mod:`trainer.run.wandb_log`; off by default)."""
    asynchronous: AsyncConfig = field(default_factory=AsyncConfig)
    """Collection overlapped with updates under bounded staleness (trainer/collect/staleness.py, docs/trainer.md)."""
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    """The trajectory-capturing gateway of ``rollout.source=gateway`` (trainer/serve/gateway/config.py, docs/trainer.md)."""

    def __post_init__(self) -> None:
        require(self.steps >= 0, f"steps must be >= 0, got {self.steps}")
        require(self.checkpoint_every >= 0, f"checkpoint_every must be >= 0 (0: only the last), got {self.checkpoint_every}")


# ----------------------------------------------------------------------------- loading
def from_dict(cls: type, data: dict[str, Any], prefix: str = "") -> Any:
    """Build dataclass ``cls`` from nested dicts, rejecting unknown keys with a suggestion."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in data.items():
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" Did you mean '{prefix}{close[0]}'?" if close else f" Known keys: {', '.join(sorted(names))}."
            raise ConfigError(f"unknown config key '{prefix}{key}'.{hint}")
        kind = hints[key]
        if dataclasses.is_dataclass(kind) and isinstance(value, dict):
            value = from_dict(kind, value, f"{prefix}{key}.")
        kwargs[key] = value
    return cls(**kwargs)


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Set ``a.b.c=value`` in nested dict ``data``; the value is parsed as YAML (``4``, ``true``, ``[1, 2]``)."""
    import yaml

    if "=" not in assignment:
        raise ConfigError(f"expected an override of the form key=value (e.g. rollout.group_size=8), got {assignment!r}")
    key, raw = assignment.split("=", 1)
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"config key {key!r}: {part!r} is a value, not a section")
    node[parts[-1]] = _number_if_numeric(yaml.safe_load(raw))


def _number_if_numeric(value: Any) -> Any:
    """YAML 1.1 reads ``1e-4`` (exponent, no dot) as a string; everyone means the number."""
    import re

    if isinstance(value, str) and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+", value):
        return float(value)
    return value


def load_config(path: str | Path | None, overrides: list[str] = ()) -> TrainConfig:
    """Defaults, updated by the YAML file at ``path`` (if any), then by each ``key=value`` override."""
    import yaml

    data: dict[str, Any] = {}
    if path is not None:
        text = Path(path).read_text()
        data = yaml.safe_load(text) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"expected a YAML mapping at the top of {path}, got {type(data).__name__}")
    for assignment in overrides:
        apply_override(data, assignment)
    return _typed(TrainConfig, data)


def _typed(cls: type, data: dict[str, Any]) -> TrainConfig:
    try:
        return from_dict(cls, data)
    except TypeError as e:  # a value of the wrong shape reached a constructor
        raise ConfigError(f"invalid config: {e}") from e
