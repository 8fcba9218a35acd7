"""``algorithm.positive_only`` (self-imitation): advantages are clipped below at 0, the rest unchanged."""

from trainer.config import load_config
from trainer.loop import Trainer

RUN = ["env.max_turns=3", "rollout.tasks_per_step=2", "rollout.group_size=3", "rollout.max_new_tokens=6",
       "algorithm.filter_zero_variance=false", "rollout.invalid_penalty=0.1"]


def test_positive_only_clips_negative_advantages(tiny_overrides, tmp_path):
    per_run = {}
    for positive_only in (False, True):
        trainer = Trainer(load_config(None, tiny_overrides + RUN + [f"algorithm.positive_only={positive_only}",
                                                                    f"out_dir={tmp_path / str(positive_only)}"]))
        try:
            trajectories, _ = trainer.collect()
            trajectories[0].rewards[0] += 1.0  # one clearly better rollout per run, same in both
            per_run[positive_only] = trainer.advantages(trajectories)[1]
        finally:
            trainer.close()
    plain, clipped = per_run[False], per_run[True]
    assert any(a < 0 for turns in plain for a in turns) and any(a > 0 for turns in plain for a in turns)
    assert clipped == [[max(a, 0.0) for a in turns] for turns in plain]
