"""Checkpoints load with ``weights_only=True``: a crafted ``state.pt`` (whose unpickling writes a marker
file) never runs, through ``load_checkpoint``, ``Trainer.resume`` or ``agentgym bench --policy
checkpoint:DIR``; bad, foreign and corrupt checkpoint dirs give a CheckpointError / a clean CLI error.
Genuine checkpoints keep the NumPy RNG state exactly, and format-1 files (pickled NumPy state) still load.
"""

from __future__ import annotations

import os
import random
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from trainer.run.checkpoint import FORMAT, load_checkpoint, save_checkpoint
from trainer.errors import CheckpointError
from trainer.seeding import capture_rng

ROOT = Path(__file__).resolve().parents[2]


class WritesMarker:
    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(self.marker)}",)


def write_run(run: Path, state: object) -> Path:
    """A run directory laid out as `agentgym train` writes it, with ``state`` as its latest state.pt."""
    step = run / "checkpoints" / "step_00000001"
    step.mkdir(parents=True)
    torch.save(state, step / "state.pt")
    (run / "checkpoints" / "latest").write_text(step.name)
    return step


def evil_states(marker: Path) -> dict[str, object]:
    return {
        "payload as the whole file": WritesMarker(marker),
        "payload inside the model": {"model": {"w": WritesMarker(marker)}, "config": {}, "format": FORMAT},
        "payload as the config": {"model": {}, "config": WritesMarker(marker)},
    }


def test_the_payload_is_live(tmp_path):
    marker = tmp_path / "pwned"
    step = write_run(tmp_path / "run", WritesMarker(marker))
    torch.load(step / "state.pt", weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("case", ["payload as the whole file", "payload inside the model", "payload as the config"])
def test_crafted_checkpoints_never_run(case, tmp_path):
    marker = tmp_path / "pwned"
    step = write_run(tmp_path / "run", evil_states(marker)[case])
    with pytest.raises(CheckpointError, match=r"cannot be loaded safely \(UnpicklingError: it needs .*posix\.system"):
        load_checkpoint(step)
    assert not marker.exists()


def test_bad_checkpoint_dirs_raise_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="expected a checkpoint file at"):
        load_checkpoint(tmp_path)
    cases = {
        "corrupt": b"\x00not a zip and not a pickle",
        "truncated": None,
    }
    good = save_checkpoint(tmp_path / "good", 1, {"model": {"w": torch.ones(3)}, "config": {}})
    cases["truncated"] = (good / "state.pt").read_bytes()[:-40]
    for name, data in cases.items():
        step = tmp_path / name
        step.mkdir()
        (step / "state.pt").write_bytes(data)
        with pytest.raises(CheckpointError, match="cannot be loaded safely"):
            load_checkpoint(step)
    for name, state, match in [("list", [1, 2], "checkpoint dict, got list"),
                               ("no-config", {"model": {}}, "config as a dict, got config \\(NoneType\\)"),
                               ("newer", {"model": {}, "config": {}, "format": 99}, "newer agentgym")]:
        step = write_run(tmp_path / name, state)
        with pytest.raises(CheckpointError, match=match):
            load_checkpoint(step)


def test_rng_state_round_trips_exactly_and_the_file_needs_no_globals(tmp_path):
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    np.random.random(7)  # move the numpy state off its seed position
    np.random.normal()  # and cache a gaussian
    rng = capture_rng()
    step = save_checkpoint(tmp_path, 3, {"model": {"w": torch.arange(4.0)}, "config": {"a": 1}, "rng": rng,
                                         "scalar": np.float32(0.5)})
    assert torch.serialization.get_unsafe_globals_in_checkpoint(str(step / "state.pt")) == []
    loaded = load_checkpoint(step)
    assert loaded["rng"]["python"] == rng["python"]
    kind, keys, pos, has_gauss, gauss = loaded["rng"]["numpy"]
    assert keys.dtype == np.uint32 and np.array_equal(keys, rng["numpy"][1])
    assert (kind, pos, has_gauss, gauss) == (rng["numpy"][0], *rng["numpy"][2:])
    assert torch.equal(loaded["rng"]["torch"], rng["torch"]) and loaded["scalar"] == 0.5
    np.random.set_state(loaded["rng"]["numpy"])
    after = np.random.random(3)
    np.random.set_state(rng["numpy"])
    assert np.array_equal(after, np.random.random(3))


def test_format_1_checkpoints_with_pickled_numpy_state_still_load(tmp_path):
    legacy = {"model": {"w": torch.ones(2)}, "config": {}, "rng": {"numpy": np.random.get_state()}, "step": 4}
    step = write_run(tmp_path / "run", legacy)
    loaded = load_checkpoint(step)
    assert loaded["step"] == 4 and np.array_equal(loaded["rng"]["numpy"][1], legacy["rng"]["numpy"][1])


def test_bench_with_a_crafted_checkpoint_fails_cleanly(tmp_path):
    marker = tmp_path / "pwned"
    cases = {"evil": WritesMarker(marker), "config is a string": {"model": {}, "config": "x"},
             "model is not a state dict": {"model": {"w": 3}, "config": {}}}
    for name, state in cases.items():
        run = tmp_path / name
        write_run(run, state)
        done = subprocess.run([sys.executable, "-m", "agentgym_envs.cli.main", "bench", "--suite", "smoke", "--policy",
                               f"checkpoint:{run}", "--store", str(tmp_path / "r.sqlite"), "--quiet"],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode != 0 and "Traceback" not in done.stderr, (name, done.stderr[-1500:])
        assert f"checkpoint:{run}:" in done.stderr, (name, done.stderr[-1500:])
        assert not marker.exists()
