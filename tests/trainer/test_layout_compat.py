"""Issue 35 moved the trainer's modules; configs and checkpoints written before the move load unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from trainer import Trainer
from trainer.config import load_config, to_dict
from trainer.run.checkpoint import latest_checkpoint, load_checkpoint

FIXTURES = Path(__file__).parent / "fixtures"
CONFIGS = Path(__file__).resolve().parents[2] / "trainer" / "configs"
BEFORE = json.loads((FIXTURES / "configs_before_layout.json").read_text())
#: Settings added since the move, at their defaults: every config written before resolves to these.
ADDED = {"rollout": {"revisit_penalty": 0.0}, "optim": {"shared_prefix": True}}
#: Shipped settings changed on purpose since the move (issue 33: the quickstart runs on one torch thread, the
#: SmolLM2 recipe on every core).
CHANGED = {"quickstart.yaml": {"policy": {"threads": 1}}, "smollm2_maze.yaml": {"policy": {"threads": 0}}}
#: The run that wrote fixtures/pre_layout_checkpoint (besides the tiny test overrides and out_dir).
RUN = ["steps=1", "checkpoint_every=1", "rollout.tasks_per_step=2", "rollout.group_size=2", "eval.num_tasks=2", "seed=3"]


def _before(name: str) -> dict:
    """The fixture's resolved config ``name`` plus the settings :data:`ADDED` since, at their defaults, and
    those :data:`CHANGED` in that file."""
    changed = CHANGED.get(name, {})
    return {section: {**values, **ADDED.get(section, {}), **changed.get(section, {})} if isinstance(values, dict)
            else values for section, values in BEFORE[name].items()}


def test_every_shipped_config_resolves_as_before_the_move():
    assert set(BEFORE) == {""} | {path.name for path in CONFIGS.glob("*.yaml")}
    assert to_dict(load_config(None)) == _before("")
    for path in sorted(CONFIGS.glob("*.yaml")):
        assert to_dict(load_config(path)) == _before(path.name), path.name


def test_a_checkpoint_written_before_the_move_resumes(tmp_path, tiny_overrides):
    out = tmp_path / "run"
    shutil.copytree(FIXTURES / "pre_layout_checkpoint" / "checkpoints", out / "checkpoints")
    state = load_checkpoint(latest_checkpoint(out))
    config = load_config(None, tiny_overrides + RUN + [f"out_dir={out}"])
    trainer = Trainer(config)
    try:
        assert trainer.resume(force=False)  # the saved config is this one: no key differs
        assert trainer.step == 1
        weights = trainer.model.state_dict()
        assert set(weights) == set(state["model"])
        for name, saved in state["model"].items():
            assert torch.equal(weights[name], saved), name
    finally:
        trainer.close()


@pytest.mark.parametrize("changed", ["seed=4"])
def test_the_old_checkpoint_still_refuses_a_different_run(tmp_path, tiny_overrides, changed):
    """The resume really compares configs (so the test above would see a renamed or dropped key)."""
    from trainer.errors import CheckpointError

    out = tmp_path / "run"
    shutil.copytree(FIXTURES / "pre_layout_checkpoint" / "checkpoints", out / "checkpoints")
    trainer = Trainer(load_config(None, tiny_overrides + RUN + [f"out_dir={out}", changed]))
    try:
        with pytest.raises(CheckpointError, match="seed"):
            trainer.resume(force=False)
    finally:
        trainer.close()
