"""Config tree: YAML + overrides, validation with reasons, unknown keys with suggestions."""

import pytest

from trainer.config import load_config
from trainer.errors import ConfigError


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 3\nrollout:\n  group_size: 8\nloss:\n  kl_coef: 0.1\n")
    config = load_config(path, ["rollout.group_size=4", "policy.tiny.model.num_layers=3"])
    assert (config.seed, config.rollout.group_size, config.loss.kl_coef) == (3, 4, 0.1)
    assert config.policy.tiny.model.num_layers == 3


@pytest.mark.parametrize("override,message", [
    ("rollout.group_size=1", "group_size must be >= 2"),
    ("algorithm.estimator=ppo2", "algorithm.estimator must be one of"),
    ("loss.aggregation=mean", "loss.aggregation must be one of"),
    ("rolout.group_size=4", "Did you mean 'rollout'"),
    ("rollout.max_context_tokens=8", "must exceed max_new_tokens"),
    ("seed", "key=value"),
])
def test_bad_values_are_explained(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_shipped_configs_load():
    from pathlib import Path

    configs = sorted(Path(__file__).parents[2].joinpath("configs").glob("*.yaml"))
    assert configs, "configs/*.yaml should ship with the repo"
    for path in configs:
        load_config(path)
