"""Rollouts on Ray (trainer/run/ray_rollout.py): ``rollout.backend=ray`` collects the same trajectories as local.

The CLI test starts (and must shut down) its own loopback cluster; the others share the module's ``ray_local``.
"""

from __future__ import annotations

import sys

import pytest
import ray
from ray_support import ray_local  # noqa: F401  (the module's local cluster)

from agentgym_envs.cli.main import main
from trainer.config import load_config
from trainer.errors import ConfigError
from trainer import Trainer
from trainer.run.ray_rollout import ray_options, vector_mode

SMALL = ["rollout.tasks_per_step=2", "rollout.group_size=2", "env.max_turns=3", "rollout.max_new_tokens=8",
         "rollout.max_context_tokens=768", "checkpoint_every=0", "eval.num_tasks=1", "rollout.temperature=1.0"]


def test_the_config_keys_and_their_errors():
    config = load_config(None, ["rollout.backend=ray", "ray.address=127.0.0.1:6379", "ray.envs_per_actor=4",
                                "ray.actor_cpus=0.25"])
    assert (config.rollout.backend, config.ray.address, config.ray.num_cpus) == ("ray", "127.0.0.1:6379", 0)
    assert ray_options(config) == {"envs_per_actor": 4, "num_cpus": 0.25}
    assert ray_options(load_config(None, [])) is None
    assert load_config(None, []).rollout.backend == "local"
    with pytest.raises(ConfigError, match="rollout.backend must be 'local' or 'ray', got 'slurm'"):
        load_config(None, ["rollout.backend=slurm"])
    with pytest.raises(ConfigError, match="expected ray.num_cpus=0, got 2"):
        load_config(None, ["ray.address=auto", "ray.num_cpus=2"])


def test_the_local_backend_needs_no_ray(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    assert vector_mode(load_config(None, ["rollout.mode=process"])) == "process"


def test_train_one_step_on_a_cluster_it_starts_and_stops(tiny_overrides, tmp_path, capsys):
    if ray.is_initialized():
        ray.shutdown()
    code = main(["train", "-", *tiny_overrides, *SMALL, "steps=1", "rollout.backend=ray", "ray.num_cpus=2",
                 "ray.envs_per_actor=2", "ray.actor_cpus=0.5",
                 f"out_dir={tmp_path}"])
    assert code == 0, capsys.readouterr().out[-2000:]
    assert (tmp_path / "checkpoints" / "latest").exists()
    assert not ray.is_initialized()  # the cluster the trainer started went down with it


def test_the_trainer_joins_a_running_cluster_and_leaves_it_running(tiny_overrides, tmp_path):
    from agentgym_envs.vector.ray_cluster import local_cluster

    if ray.is_initialized():
        ray.shutdown()
    with local_cluster(nodes=1, cpus_per_node=2) as cluster:
        ray.shutdown()  # this process is now a fresh driver; the cluster runs on
        trainer = Trainer(load_config(None, tiny_overrides + SMALL + ["rollout.backend=ray", f"out_dir={tmp_path}",
                                                                      f"ray.address={cluster.address}"]))
        try:
            trajectories, _ = trainer.collect()
            assert len(trajectories) == 4 and all(t.infra_error is None for t in trajectories)
            assert ray.get_runtime_context().gcs_address == cluster.address  # joined, not a cluster of its own
        finally:
            trainer.close()
        assert ray.is_initialized() and any(node["Alive"] for node in ray.nodes())  # left running


def test_ray_rollouts_are_the_local_ones(ray_local, tiny_overrides, tmp_path):
    def collect(backend: str) -> list[tuple]:
        trainer = Trainer(load_config(None, tiny_overrides + SMALL + [f"rollout.backend={backend}",
                                                                      f"out_dir={tmp_path / backend}"]))
        try:
            trajectories, _ = trainer.collect()
            assert trainer._worker.venv.mode == ("ray" if backend == "ray" else "thread")
        finally:
            trainer.close()
        return [(t.task_index, t.group, t.token_ids, t.loss_mask, t.rewards, t.replies, t.finish, t.infra_error)
                for t in trajectories]

    local, on_ray = collect("local"), collect("ray")
    assert len(local) == 4 and all(row[-1] is None for row in local)
    assert on_ray == local
    assert ray.is_initialized()  # a cluster the trainer joined is left running


def test_a_lost_env_actor_gives_infra_error_trajectories_and_training_goes_on(ray_local, tiny_overrides, tmp_path):
    trainer = Trainer(load_config(None, tiny_overrides + SMALL + ["rollout.backend=ray", "ray.envs_per_actor=2",
                                                                  "ray.actor_cpus=0.5", f"out_dir={tmp_path}"]))
    try:
        trainer.collect()
        ray.kill(trainer._worker.venv._fleet.slots[0].actor)  # the actor of group 0 (envs 0 and 1) dies
        trajectories, metrics = trainer.collect()
        assert len(trajectories) == 4 and metrics["infra_errors"] == 2  # none lost, none duplicated
        assert [t.infra_error is not None for t in trajectories] == [True, True, False, False]
        assert "Ray actor hosting envs [0, 1] was lost" in trajectories[0].infra_error
        assert trainer.train_step()["step"] == 1  # the update goes on with the others
        assert all(t.infra_error is None for t in trainer.collect()[0])  # a replacement actor took over
    finally:
        trainer.close()
