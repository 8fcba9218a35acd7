"""TextVectorEnv(mode="ray") on a two-node local Ray cluster (4 + 4 CPUs): envs spread over both nodes, and
removing a node mid-run cuts exactly its envs' episodes as infra_error while the run completes on the other
node, with spare CPUs there (a replacement actor) or without (the lost envs join the surviving actors)."""

from __future__ import annotations

from collections import Counter

import pytest

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.vector import TextVectorEnv
from agentgym_envs.vector.ray_cluster import add_node, import_ray, local_cluster

MAZE = "agentgym/Maze-Easy-v0"
CPUS_PER_NODE = 4


@pytest.fixture(scope="module")
def cluster():
    ray = import_ray()
    if ray.is_initialized():
        ray.shutdown()
    with local_cluster(nodes=2, cpus_per_node=CPUS_PER_NODE) as c:
        yield c


def _two_nodes(cluster) -> str:
    """Put a worker node back if an earlier test removed it; returns the head node's id."""
    if not cluster.worker_nodes:
        add_node(cluster, CPUS_PER_NODE)
        cluster.wait_for_nodes()
    return cluster.head_node.node_id


def _tally(infos: list[dict], terminated, truncated, ends: Counter, restarts: Counter, cuts: Counter) -> None:
    """Count, per env, episodes that ended on this step, episodes that started, and infra cuts."""
    for i, info in enumerate(infos):
        if (terminated[i] or truncated[i]) and not (info.get("waiting_for_group") or info.get("episode_over")):
            ends[i] += 1
        restarts[i] += "final_obs" in info
        cuts[i] += bool(info.get("infra_error"))


def test_envs_spread_over_nodes_and_a_removed_node_cuts_only_its_episodes(cluster):
    head = _two_nodes(cluster)
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


def test_losing_a_node_without_spare_capacity_moves_its_envs_onto_the_surviving_actors(cluster):
    """8 envs on 8 actors of 1 CPU fill both nodes: when the worker node goes, no replacement actor can
    start anywhere, so its 4 envs are rebuilt on the 4 surviving actors and the run goes on."""
    head = _two_nodes(cluster)
    with TextVectorEnv(env_id=MAZE, num_envs=8, mode="ray") as venv:  # default ray_options: 1 CPU per actor
        nodes = [w.node_id for w in venv._workers]
        assert len(venv._fleet.slots) == 8 and nodes.count(head) == 4  # the cluster is full
        lost = [i for i, node in enumerate(nodes) if node != head]
        ends, restarts, cuts = Counter(), Counter(), Counter()
        venv.reset(seed=2)
        for _ in range(2):
            _, _, terminated, truncated, infos = venv.step(["look"] * 8)
            _tally(infos, terminated, truncated, ends, restarts, cuts)
        assert not ends
        cluster.remove_node(next(n for n in cluster.worker_nodes if n.node_id != head))
        after = Counter()  # episodes each env finished on its own after the cut
        for _ in range(30):
            _, _, terminated, truncated, infos = venv.step(venv.call("expert_action"))
            _tally(infos, terminated, truncated, ends, restarts, cuts)
            for i, info in enumerate(infos):
                after[i] += bool(terminated[i]) and not (info.get("waiting_for_group") or info.get("episode_over"))
        assert {i for i in range(8) if cuts[i]} == set(lost) and all(cuts[i] == 1 for i in lost)  # once each
        assert all(ends[i] == restarts[i] for i in range(8))  # every cut or finished episode restarted once
        assert all(after[i] >= 2 for i in range(8)), after  # every env, moved or not, kept playing whole episodes
        assert {w.node_id for w in venv._workers} == {head}
        hosts = Counter(id(w.slot.actor) for w in venv._workers)
        assert sorted(hosts.values()) == [2, 2, 2, 2]  # each surviving actor took one lost env
