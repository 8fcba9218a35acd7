"""Learning regression: on an easy household problem (two train tasks), BC + GRPO takes the tiny policy from
no success to most episodes won. Fixed seeds; a CPU run of about a minute (marked slow)."""

import pytest

from trainer.config import load_config
from trainer.loop import Trainer, fit

EASY = ["env.system_prompt=''", "env.train_tasks=2", "env.dense_reward=true", "env.eval_split=train",
        "eval.num_tasks=2", "eval.temperature=1.0", "eval.repeats=8", "env.max_turns=6",
        "rollout.tasks_per_step=2", "rollout.group_size=8", "rollout.max_new_tokens=12", "progress=false",
        "checkpoint_every=0", "bc.episodes=2", "bc.epochs=45", "bc.batch_size=2", "steps=10", "optim.lr=0.0005"]


@pytest.mark.slow
def test_success_rises_after_bc_and_rl(tmp_path, tiny_cache):
    trainer = Trainer(load_config(None, EASY + [f"policy.cache_dir={tiny_cache}", f"out_dir={tmp_path}"]))
    try:
        untrained = trainer.evaluate()["eval_success"]
        trainer.warm_up()
        records = fit(trainer, echo=None)
        trained = trainer.evaluate()["eval_success"]
    finally:
        trainer.close()
    assert untrained == 0.0
    assert trained >= 0.4, f"success after BC + RL was {trained} (untrained: {untrained})"
    assert len(records) == 10 and all(r["logprob_gap_max"] < 1e-3 for r in records if "logprob_gap_max" in r)
