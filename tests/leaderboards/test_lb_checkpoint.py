"""A checkpoint written the trainer's way is evaluated with its own weights through the HF backend."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from lb_helpers import episode_rows, write_suite

from leaderboards.policies import parse_spec
from leaderboards.runner import BenchOptions, run_bench
from trainer.run.checkpoint import save_checkpoint
from trainer.config import load_config, to_dict
from trainer.models.tiny import build_tiny


def test_checkpoint_policy_loads_saved_weights_and_plays(tmp_path):
    model, _ = build_tiny()
    generator = torch.Generator().manual_seed(0)
    state = {k: v + 0.01 * torch.randn(v.shape, generator=generator) if v.is_floating_point() else v
             for k, v in model.state_dict().items()}
    save_checkpoint(tmp_path / "run", 7, {"model": state, "config": to_dict(load_config(None)), "step": 7})

    policy = parse_spec(f"checkpoint:{tmp_path / 'run'}").build()
    name = next(k for k in state if ".layers.0." in k and k.endswith("weight"))  # not tied to another tensor
    assert torch.equal(policy.model.state_dict()[name].cpu(), state[name])

    suite = write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Household-PickPlace-v0", "split": "valid_seen",
                                               "tasks": 1, "max_steps": 2}],
                        sampling={"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 4})
    summary = run_bench(suite, f"checkpoint:{tmp_path / 'run' / 'checkpoints'}", tmp_path / "r.sqlite",
                        BenchOptions(progress=False))
    assert summary.played == 1
    (row,) = episode_rows(tmp_path / "r.sqlite")
    assert row["prompt_tokens"] > 0 and 0 < row["completion_tokens"] <= 4 * row["steps"]
