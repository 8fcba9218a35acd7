"""Every GPU recipe in ``configs/`` runs one step on CPU with a tiny random model of its family.

The smoke test keeps the recipe as written (env, protocol, make kwargs, estimator, loss, sample unit,
checkpointing, dtype keys, KL reference) and changes only what makes it fit a CPU test: the model
directory (a ``trainer.models.build_random_model`` build of the same family, ~0.5 M parameters), the
device and dtype, and the sizes (tasks, group, turns, tokens, steps, eval off). So a recipe whose keys
are wrong, or whose selected code path is broken, fails here before anyone rents a GPU for it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import yaml

from trainer.config import load_config
from trainer import Trainer, fit
from trainer.models import family

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
#: Recipes that load a Hugging Face checkpoint (``policy.kind: hf``); the others train the tiny policy.
RECIPES = sorted(p.name for p in CONFIGS.glob("*.yaml")
                 if (yaml.safe_load(p.read_text()) or {}).get("policy", {}).get("kind") == "hf")
#: The family each recipe's model belongs to, read from its model path (Qwen2.5-* is the qwen2 family).
FAMILY_OF = {"qwen2.5": "qwen2", "qwen3": "qwen3", "llama-3": "llama3", "gemma": "gemma"}
SHRINK = ["steps=1", "checkpoint_every=0", "progress=false", "policy.device=cpu", "policy.dtype=float32",
          "rollout.tasks_per_step=2", "rollout.group_size=2", "env.max_turns=2", "rollout.max_new_tokens=8",
          "optim.micro_batch_tokens=96", "eval.every=0", "algorithm.filter_zero_variance=false"]


def family_of(recipe: str) -> str:
    path = load_config(CONFIGS / recipe).policy.path.lower()
    matches = [family for prefix, family in FAMILY_OF.items() if prefix in path]
    assert len(matches) == 1, f"expected the model path of {recipe} ({path}) to name one known family"
    return matches[0]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    from trainer.models import build_random_model

    root = tmp_path_factory.mktemp("recipe-models")
    return lambda family: str(build_random_model(family, root / family, size="tiny"))


def test_the_gpu_recipes_exist():
    assert {"gigpo_household_qwen2.5-1.5b.yaml", "gigpo_webshop_qwen2.5-1.5b.yaml",
            "search_r1_qwen2.5-3b.yaml"} <= set(RECIPES), RECIPES


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_header_names_paper_hardware_and_command(recipe):
    header = "\n".join(line for line in (CONFIGS / recipe).read_text().splitlines() if line.startswith("#"))
    assert "arXiv:" in header and "Hardware:" in header, recipe
    assert f"agentgym train configs/{recipe}" in header, "the header should say how to run the recipe"


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_runs_one_step_with_a_tiny_model_of_its_family(recipe, tiny_models, tmp_path):
    written = load_config(CONFIGS / recipe)
    config = load_config(CONFIGS / recipe, SHRINK + [f"policy.path={tiny_models(family_of(recipe))}",
                                                     f"out_dir={tmp_path}"])
    trainer = Trainer(config)
    try:
        assert type(trainer.model).__name__ == family(family_of(recipe)).architecture  # the real architecture
        assert trainer.model.is_activation_checkpointing == written.policy.gradient_checkpointing
        records = fit(trainer, echo=None)
    finally:
        trainer.close()
    (record,) = [r for r in records if "reward" in r]
    assert record["step"] == 1 and record["updated"] == 1.0, record
    assert record["micro_batches"] > 1, "96-token micro-batches: the accumulation path the recipe selects ran"
    assert record["train_tokens"] > 0 and all(math.isfinite(v) for v in record.values() if isinstance(v, float)), record
    assert (trainer.ref_model is not None) == (written.loss.kl_coef > 0)
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert logged[-1]["step"] == 1
    # what the smoke test did not shrink is the recipe's own
    assert (config.env.env_id, config.env.protocol, config.env.train_kwargs, config.env.eval_kwargs) == \
        (written.env.env_id, written.env.protocol, written.env.train_kwargs, written.env.eval_kwargs)
    assert (dataclasses.replace(config.algorithm, filter_zero_variance=written.algorithm.filter_zero_variance),
            config.loss, config.rollout.sample_unit, config.policy.gradient_checkpointing) == \
        (written.algorithm, written.loss, written.rollout.sample_unit, written.policy.gradient_checkpointing)
