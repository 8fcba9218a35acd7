"""Checkpoints: everything a killed run needs to go on exactly as if it had never stopped.

A checkpoint is one ``state.pt`` in ``<out_dir>/checkpoints/step_<n>/``: model and reference weights,
optimiser and scheduler state, global RNG states, the task sampler's cursor, the step and the config.
It is written to a temporary directory and renamed, so a kill mid-write leaves the previous checkpoint
intact; ``latest`` names the newest complete one.

``state.pt`` holds only tensors and plain data (dicts, lists, tuples, strings, numbers), stamped with
``format``: NumPy arrays (the global NumPy RNG state) are stored as tagged lists, so the file loads with
``torch.load(weights_only=True)``, which cannot run code. A checkpoint from somewhere else (``agentgym
bench --policy checkpoint:DIR`` takes any directory) therefore cannot execute anything when loaded; a file
that is not such a checkpoint raises :class:`~trainer.errors.CheckpointError` saying what was found.
Checkpoints of format 1 (which pickled the NumPy RNG state) still load: only the NumPy globals a numeric
array needs are allowed, and only when they are all the file asks for.

Under ``torchrun`` rank 0 writes the same file a single process would: the full (unsharded) model state dict
and the optimiser state keyed by parameter index as ``optimizer.state_dict()`` keys it (FSDP2's sharded state
is gathered first, :meth:`trainer.run.distributed.World.optimizer_state`), plus ``rng_ranks``, every rank's global
RNG states. So a checkpoint resumes at any world size and with either strategy (each rank restores its own RNG
state when the world size is unchanged, rank 0's otherwise); every rank reads it, so ``out_dir`` must be
visible to all of them (one machine, or a shared filesystem).

The resolved config is saved in every checkpoint (``state["config"]``), so a resume can tell whether it
continues the same run: :func:`config_differences` compares it with the current config, minus the keys of
:data:`RESUME_MAY_DIFFER`, which change how long a run goes or what it reports, not what it trains.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import CheckpointError

#: Version of the layout of ``state.pt``; 1 was a plain ``torch.save`` of the state (NumPy arrays pickled).
FORMAT = 2
#: Keys a checkpoint must hold for any use (the trainer's resume needs more, and checks its own).
REQUIRED = {"model": dict, "config": dict}
#: Config keys a resume may change without ``--resume``: the run's length (``steps``, to extend it), where it
#: lives (``out_dir``), how often it checkpoints and evaluates, how it splits an update into forwards (the
#: gradient is the same; ``auto`` is sized to each machine's memory), how it reports (progress bar, TensorBoard), where
#: tiny artifacts are cached, ``resume`` itself, and how the ranks run (``distributed.*``: a checkpoint is the same
#: at every world size and strategy). Every other key must match the checkpoint's.
RESUME_MAY_DIFFER = frozenset({"steps", "out_dir", "checkpoint_every", "checkpoint_last", "optim.micro_batch_tokens",
                               "optim.shared_prefix",
                               "progress", "tensorboard", "eval.every", "rollout.dump",
                               "policy.cache_dir", "resume", "distributed.strategy", "distributed.backend",
                               "distributed.timeout_minutes", "wandb.enabled", "wandb.project", "wandb.name",
                               "wandb.group"})
#: Stands for a key one side of a comparison does not have.
ABSENT = "<absent>"
_ARRAY = "__ndarray__"
#: The only pickled globals a format-1 checkpoint needs: NumPy's array reconstructor, ndarray and dtype.
_LEGACY_GLOBALS = ("numpy._core.multiarray._reconstruct", "numpy.core.multiarray._reconstruct", "numpy.ndarray",
                   "numpy.dtype", "numpy.dtypes.UInt32DType")


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
    torch.save({**_to_plain(state), "format": FORMAT}, tmp / "state.pt")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    (root / "latest.tmp").write_text(final.name)
    (root / "latest.tmp").replace(root / "latest")
    older = sorted(p for p in root.glob("step_*") if p.name < final.name)
    for old in older[:max(len(older) - (keep - 1), 0)]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def config_differences(saved: dict[str, Any], current: dict[str, Any],
                       defaults: dict[str, Any] | None = None) -> dict[str, tuple[Any, Any]]:
    """``{dotted key: (saved value, current value)}`` for every key outside :data:`RESUME_MAY_DIFFER` that differs.

    A key the saved config lacks (a checkpoint older than the field) counts as its value in ``defaults``, so
    adding a config field does not orphan existing runs; a key only one side has otherwise shows as :data:`ABSENT`.
    """
    old, new, base = _flatten(saved), _flatten(current), _flatten(defaults or {})
    diffs = {}
    for key in sorted(old.keys() | new.keys()):
        if key in RESUME_MAY_DIFFER:
            continue
        was, now = old.get(key, base.get(key, ABSENT)), new.get(key, ABSENT)
        if was != now:
            diffs[key] = (was, now)
    return diffs


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one dict of dotted keys (``{"optim": {"lr": 1}}`` -> ``{"optim.lr": 1}``)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = list(value) if isinstance(value, tuple) else value
    return flat


def latest_checkpoint(out_dir: str | Path) -> Path | None:
    pointer = checkpoint_dir(out_dir) / "latest"
    if not pointer.exists():
        return None
    path = checkpoint_dir(out_dir) / pointer.read_text().strip()
    if not (path / "state.pt").exists():
        raise CheckpointError(f"{pointer} names {path.name}, which has no state.pt; delete the pointer to start over")
    return path


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """The state saved in checkpoint directory ``path``, loaded without running any code from the file.

    Raises :class:`CheckpointError` for a missing, corrupt, foreign or code-carrying ``state.pt``.
    """
    file = Path(path) / "state.pt"
    if not file.is_file():
        raise CheckpointError(f"expected a checkpoint file at {file}, found none; point at a step_* directory "
                              "written by `agentgym train`")
    state = _load_weights_only(file)
    if not isinstance(state, dict):
        raise CheckpointError(f"expected {file} to hold a checkpoint dict, got {type(state).__name__}; it was not "
                              "written by `agentgym train`")
    if state.get("format", 1) not in (1, FORMAT):
        raise CheckpointError(f"expected a checkpoint of format 1..{FORMAT}, got format {state.get('format')!r} in "
                              f"{file}; it was written by a newer agentgym: upgrade to load it")
    wrong = [f"{key} ({type(state.get(key)).__name__})" for key, kind in REQUIRED.items()
             if not isinstance(state.get(key), kind)]
    if wrong:
        raise CheckpointError(f"expected {file} to hold {', '.join(f'{k} as a {t.__name__}' for k, t in REQUIRED.items())}"
                              f", got {', '.join(wrong)}; it is not a checkpoint written by `agentgym train`")
    return _from_plain(state)


def _load_weights_only(file: Path) -> Any:
    """``torch.load(weights_only=True)``; a format-1 file gets exactly NumPy's array globals, nothing else."""
    try:
        return torch.load(file, map_location="cpu", weights_only=True)
    except Exception as e:  # weights_only runs no code, so any failure just means "not a checkpoint we can read"
        first = e
    try:
        needed = set(torch.serialization.get_unsafe_globals_in_checkpoint(file))
    except Exception:
        needed = set()
    if needed and needed <= set(_LEGACY_GLOBALS):
        try:
            with torch.serialization.safe_globals(_numpy_array_globals()):
                return torch.load(file, map_location="cpu", weights_only=True)
        except Exception as e:
            first = e
    detail = f"it needs {', '.join(sorted(needed))}, which may run code" if needed else str(first).splitlines()[0][:300]
    raise CheckpointError(f"expected {file} to be a checkpoint of tensors and plain data as `agentgym train` writes, "
                          f"got a file that cannot be loaded safely ({type(first).__name__}: {detail}); it was not "
                          "loaded. Use a checkpoint written by `agentgym train`, or re-save a trusted one with "
                          "trainer.run.checkpoint.save_checkpoint") from None


def _numpy_array_globals() -> list[Any]:
    """What unpickling a numeric NumPy array calls: the reconstructor, ``ndarray`` and ``dtype`` (NumPy 1 or 2)."""
    core = getattr(np, "_core", None) or np.core
    dtypes = getattr(np, "dtypes", None)
    extra = [dtypes.UInt32DType] if dtypes is not None and hasattr(dtypes, "UInt32DType") else []
    return [core.multiarray._reconstruct, np.ndarray, np.dtype, *extra]


def _to_plain(value: Any) -> Any:
    """``value`` with NumPy arrays and scalars as tagged lists, so that ``weights_only`` loading accepts it."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise CheckpointError(f"expected numeric NumPy arrays in the checkpoint state, got dtype {value.dtype}")
        return {_ARRAY: value.tolist(), "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_plain(v) for v in value)
    return value


def _from_plain(value: Any) -> Any:
    if isinstance(value, dict):
        if _ARRAY in value and set(value) == {_ARRAY, "dtype", "shape"}:
            try:
                dtype = np.dtype(value["dtype"])
                if dtype.kind not in "biuf":
                    raise ValueError(f"dtype {dtype} is not numeric")
                return np.asarray(value[_ARRAY], dtype=dtype).reshape(value["shape"])
            except (TypeError, ValueError) as e:
                raise CheckpointError(f"expected a numeric array in the checkpoint, got a malformed one ({e})") from None
        return {k: _from_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_from_plain(v) for v in value)
    return value
