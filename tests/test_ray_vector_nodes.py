"""TextVectorEnv(mode="ray") on a two-node local Ray cluster: envs spread over both nodes, and removing
a node mid-run cuts exactly its envs' episodes as infra_error while the run completes on the other node."""

from __future__ import annotations

from collections import Counter

import pytest

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.vector import TextVectorEnv
from agentgym_envs.vector.ray_cluster import import_ray, local_cluster

MAZE = "agentgym/Maze-Easy-v0"


@pytest.fixture(scope="module")
def cluster():
    ray = import_ray()
    if ray.is_initialized():
        ray.shutdown()
    with local_cluster(nodes=2, cpus_per_node=1) as c:
        yield c


def _tally(infos: list[dict], terminated, truncated, ends: Counter, restarts: Counter, cuts: Counter) -> None:
    """Count, per env, episodes that ended on this step, episodes that started, and infra cuts."""
    for i, info in enumerate(infos):
        if (terminated[i] or truncated[i]) and not (info.get("waiting_for_group") or info.get("episode_over")):
            ends[i] += 1
        restarts[i] += "final_obs" in info
        cuts[i] += bool(info.get("infra_error"))


def test_envs_spread_over_nodes_and_a_removed_node_cuts_only_its_episodes(cluster):
    head = cluster.head_node.node_id
    with TextVectorEnv(env_id=MAZE, num_envs=4, mode="ray", ray_options={"num_actors": 2, "num_cpus": 0.5}) as venv:
        nodes = [w.node_id for w in venv._workers]
        assert len(set(nodes)) == 2 and nodes[0] == nodes[1] and nodes[2] == nodes[3]  # SPREAD: one actor per node
        lost = [i for i, node in enumerate(nodes) if node != head]
        ends, restarts, cuts = Counter(), Counter(), Counter()
        venv.reset(seed=1)
        for _ in range(2):  # mid-episode: nobody has escaped yet
            _, _, terminated, truncated, infos = venv.step(["look"] * 4)
            _tally(infos, terminated, truncated, ends, restarts, cuts)
        assert not ends
        cluster.remove_node(next(n for n in cluster.worker_nodes if n.node_id != head))
        for _ in range(20):
            _, _, terminated, truncated, infos = venv.step(venv.call("expert_action"))
            _tally(infos, terminated, truncated, ends, restarts, cuts)
        assert {i for i in range(4) if cuts[i]} == set(lost) and all(cuts[i] == 1 for i in lost)  # once each
        assert all(ends[i] == restarts[i] >= 2 for i in range(4))  # every ended episode restarted once, none lost
        assert {w.node_id for w in venv._workers} == {head}  # the replacement runs on the surviving node
