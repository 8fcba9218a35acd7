"""Training with ``policy.backend=vllm``: the engine samples, the trainer's weights are synced into it after
every update (and after a resume), and the logged sampler-vs-trainer log-prob gap stays at float precision.

``optim.lr=1e-2`` and an entropy bonus make every update move every weight, so a missed sync would show
as a gap of ~1e-2 or more (``test_vllm_backend.py`` shows the stale-weights gap directly). Runs in
``.venv-vllm``; deselected where vllm is not installed.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.vllm

TOL = 1e-4
SMALL_RUN = ["policy.backend=vllm", "rollout.tasks_per_step=2", "rollout.group_size=2", "env.max_turns=2",
             "rollout.max_new_tokens=8", "optim.lr=1e-2", "loss.entropy_coef=0.1",
             "algorithm.filter_zero_variance=false", "env.dense_reward=true", "eval.num_tasks=2", "checkpoint_every=0"]


def _trainer(overrides):
    from trainer.config import load_config
    from trainer import Trainer

    return Trainer(load_config(None, overrides))


def test_updates_are_synced_into_the_engine_and_the_gap_metric_shows_it(tmp_path, tiny_overrides):
    from trainer.models.backends.vllm import VLLMPolicy
    from trainer import fit

    trainer = _trainer(tiny_overrides + SMALL_RUN + [f"out_dir={tmp_path}", "steps=3"])
    try:
        assert isinstance(trainer.rollout_policy, VLLMPolicy) and trainer.rollout_policy is not trainer.policy
        records = fit(trainer, echo=None)
        steps = [r for r in records if "reward" in r]
        assert [r["step"] for r in steps] == [1, 2, 3] and all(r["updated"] == 1.0 for r in steps)
        for r in steps:
            assert r["logprob_gap_max"] < TOL, r
            assert "weight_sync_s" in r
        assert trainer.rollout_policy.weight_version == 1 + 2  # the start, then before collections 2 and 3
        evaluation = trainer.evaluate()  # through the engine, after syncing the third update
        assert evaluation["eval_episodes"] == 2 and trainer.rollout_policy.weight_version == 4
    finally:
        trainer.close()
    assert trainer.rollout_policy.llm is None  # close() shut the engine down
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    print("logprob gap per update (vLLM-CPU sampler vs trainer):",
          [(r["logprob_gap_mean"], r["logprob_gap_max"]) for r in logged if "logprob_gap_max" in r])
    assert all(r["logprob_gap_max"] < TOL for r in logged if "logprob_gap_max" in r)


def test_a_resumed_run_syncs_the_checkpoint_weights(tmp_path, tiny_overrides):
    from trainer import fit

    first = _trainer(tiny_overrides + SMALL_RUN + [f"out_dir={tmp_path}", "steps=2"])
    try:
        fit(first, echo=None)
    finally:
        first.close()
    resumed = _trainer(tiny_overrides + SMALL_RUN + [f"out_dir={tmp_path}", "steps=3"])  # fresh weights, then resume
    try:
        (record,) = fit(resumed, echo=None)
    finally:
        resumed.close()
    assert record["step"] == 3 and record["logprob_gap_max"] < TOL


def test_lora_training_with_the_trainers_chat_template_samples_on_policy_through_the_engine(tmp_path, tiny_overrides,
                                                                                            tiny_model_and_tokenizer):
    """policy.chat_template (a file) and policy.chat_template_kwargs reach the engine's rendering, and a LoRA
    policy is synced merged after BC and every update: the logged gap stays at float precision."""
    from trainer import fit

    _, tokenizer = tiny_model_and_tokenizer
    template = tmp_path / "persona.jinja"
    template.write_text("{% if persona %}[{{ persona }}]{% endif %}" + tokenizer.chat_template)
    trainer = _trainer(tiny_overrides + SMALL_RUN + [f"out_dir={tmp_path / 'run'}", "steps=2", "policy.lora.rank=4",
                                                      f"policy.chat_template={template}",
                                                      "policy.chat_template_kwargs={persona: pirate}", "bc.episodes=2",
                                                      "env.max_turns=8"])  # BC keeps only episodes the expert wins
    try:
        messages = [{"role": "user", "content": "Your task is to: put a pen in desk."}]
        rendered = trainer.rollout_policy.render_chat(messages)
        assert rendered.startswith("[pirate]") and rendered == trainer.policy.render_chat(messages)
        logged = fit(trainer, echo=None)
    finally:
        trainer.close()
    assert logged[0]["phase"] == "bc" and logged[0]["bc_trajectories"] == 2
    records = [r for r in logged if "reward" in r]
    assert [r["step"] for r in records] == [1, 2] and all(r["updated"] == 1.0 for r in records)
    assert all(r["logprob_gap_max"] < TOL for r in records), records  # collection 1 sampled the BC'd weights
    assert trainer.rollout_policy.weight_version == 1 + 2  # the start, then the syncs before collections 1 and 2
