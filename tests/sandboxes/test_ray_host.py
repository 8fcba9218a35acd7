"""Sandboxes on Ray (sandboxes/ray_host.py): a host actor per node, proxies that keep the sandbox contract.

One local Ray per module (``ray_local``); the two-node test starts its own ``local_cluster``.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import gymnasium
import pytest
import ray
from ray_support import ray_local  # noqa: F401  (the module's local cluster)

import agentgym_envs  # noqa: F401  (registers the ids)
import sandboxes
from sandboxes import PythonRunner, SandboxDied, SandboxError, SandboxUnavailable, ray_client, ray_host


def test_without_ray_or_before_init_the_error_says_what_to_do(monkeypatch):
    if ray.is_initialized():
        ray.shutdown()
    with pytest.raises(SandboxUnavailable, match="init_ray"):
        sandboxes.make("bwrap", ray_node="local")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(SandboxUnavailable, match=r"pip install 'agentgym\[ray\]'"):
        sandboxes.make("bwrap", ray_node="any")


def test_the_proxy_keeps_the_sandbox_contract(ray_local):
    with sandboxes.make("bwrap", ray_node="local", memory_mb=256, output_bytes=4096) as box:
        assert isinstance(box, ray_client.RemoteSandbox)
        assert box.node_id == ray.get_runtime_context().get_node_id()
        assert (box.limits.memory_mb, box.limits.output_bytes) == (256, 4096)  # the host's limits come back
        result = box.run("echo hi; echo err >&2; exit 3", timeout=10)
        assert (result.stdout, result.stderr, result.exit_code, result.timed_out) == (b"hi\n", b"err\n", 3, False)
        flood = box.run("head -c 100000 /dev/zero", timeout=10)  # the output bound holds through the proxy
        assert len(flood.stdout) < 4200 and flood.truncated_bytes > 90_000
        box.write_file("a.txt", b"data")
        assert box.read_file("/work/a.txt") == b"data"
        shell = box.open_shell(cwd="/work")
        shell.run("cd /tmp && x=5", timeout=10)
        assert shell.run("echo $x; pwd", timeout=10).stdout == b"5\n/tmp\n"
        with pytest.raises(SandboxError, match="No such file") as refused:
            box.read_file("/nope")
        assert not isinstance(refused.value, SandboxDied)  # the supervisor answered: not our machinery failing
        with pytest.raises(ValueError, match="timeout must be a positive number"):
            box.run("true", timeout=-1)
        box.reset()
        assert box.run("cat /work/a.txt", timeout=10).exit_code == 1  # pristine again
        assert box.alive
    assert not box.alive
    with pytest.raises(SandboxError, match="closed"):
        box.run("true", timeout=5)


def test_python_runner_runs_generated_code_on_the_host(ray_local, monkeypatch):
    monkeypatch.setenv(ray_host.NODE_ENV, "local")  # how generated envs (meta-envs) get Ray sandboxes
    box = sandboxes.make("bwrap", memory_mb=256)
    try:
        assert isinstance(box, ray_client.RemoteSandbox)
        runner = PythonRunner(box, "def add(a, b):\n    return a + b\n")
        assert runner.call("add", 2, 3) == 5
        host = ray_host.host_on(box.node_id)
        assert ray.get(host.stats.remote())["leased"] >= 1
    finally:
        box.close()


def test_a_generated_env_plays_the_same_on_a_ray_sandbox(ray_local, monkeypatch):
    from meta_envs.design.contract import example_module
    from meta_envs.design.sandboxed import SandboxedModuleEnv, play

    def episode() -> tuple:
        with SandboxedModuleEnv(example_module("lamps"), difficulty=0.0) as env:
            remote = isinstance(env.sandbox, ray_client.RemoteSandbox)
            return remote, env.reset(3), play(env, lambda obs, legal: env.expert_action(), 3)

    local = episode()
    monkeypatch.setenv(ray_host.NODE_ENV, "any")  # how generated envs (meta-envs) get Ray sandboxes
    on_ray = episode()
    assert (local[0], on_ray[0]) == (False, True)
    assert on_ray[1:] == local[1:] and local[2] == (1.0, 4)


def test_terminal_env_on_ray_sandboxes_matches_local_ones(ray_local):
    def episode(**options):
        env = gymnasium.make("agentgym_envs:agentgym/Terminal-v0", **options)
        try:
            obs, info = env.reset(seed=5, options={"task_index": 0})
            trace = [obs]
            for _ in range(20):
                obs, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
                trace.append((obs, reward, terminated, truncated, info.get("tests")))
                if terminated or truncated:
                    return trace
        finally:
            env.close()
        raise AssertionError("the expert did not finish in 20 steps")

    local, remote = episode(), episode(ray_node="local")
    assert remote == local and local[-1][1] == 1.0


def test_terminal_envs_in_ray_env_actors_lease_their_nodes_sandboxes(ray_local):
    from agentgym_envs.vector import TextVectorEnv

    venv = TextVectorEnv(env_id="agentgym/Terminal-v0", env_kwargs={"ray_node": "local"}, num_envs=2, mode="ray",
                         autoreset=False, ray_options={"envs_per_actor": 1, "num_cpus": 0.5})
    try:
        venv.reset(seed=3, options=[{"task_index": 0}] * 2)
        obs, *_ = venv.step(["echo from-an-actor && hostname -s >/dev/null"] * 2)
        assert all(o.startswith("from-an-actor\n") for o in obs)
        host = ray_host.host_on(ray.get_runtime_context().get_node_id())
        assert _leased(host, 2) == 2  # both actors' sandboxes live in the node's host
        ray.kill(venv._fleet.slots[0].actor)  # an env actor dies without closing its env
        assert _leased(host, 1) == 1  # the host saw its owner die and took the sandbox back
    finally:
        venv.close()
    assert _leased(host, 0) == 0


def _leased(host, expected: int, within: float = 25.0) -> int:
    """The host's leased count once it is ``expected`` (or whatever it is after ``within`` seconds)."""
    deadline = time.monotonic() + within
    while (leased := ray.get(host.stats.remote())["leased"]) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return leased


def _wait_dead(actor, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ray.get(actor.stats.remote(), timeout=10)
        except ray.exceptions.RayActorError:  # ActorDiedError is one
            return
        time.sleep(0.1)
    raise AssertionError("the killed host actor still answers")


def test_a_dead_host_is_infra_error_and_the_next_reset_works(ray_local):
    env = gymnasium.make("agentgym_envs:agentgym/Terminal-v0", ray_node="local")
    try:
        env.reset(seed=1, options={"task_index": 0})
        host_pid = ray.get(ray_host.host_on(env.unwrapped._box.node_id).stats.remote())["pid"]
        host = ray_host.host_on(env.unwrapped._box.node_id)
        ray.kill(host)  # the host actor dies mid-episode
        _wait_dead(host)  # ray.kill returns before the actor is gone: under load a step could still reach it
        _, reward, terminated, truncated, info = env.step("echo still there")
        assert info.get("infra_error") and truncated and not terminated and reward == 0
        obs, info = env.reset(seed=2, options={"task_index": 0})  # a new host, a fresh sandbox
        assert info["infra_error"] is None
        obs, *_ = env.step("echo back")
        assert obs.startswith("back\n")
        assert ray.get(ray_host.host_on(env.unwrapped._box.node_id).stats.remote())["pid"] != host_pid
    finally:
        env.close()


def test_a_hung_host_is_found_by_the_deadline(ray_local, monkeypatch):
    monkeypatch.setattr(ray_host, "GRACE_S", 0.0)  # deadline = the command's timeout + the margin: 2 s here
    monkeypatch.setattr(ray_host, "RPC_MARGIN_S", 1.0)
    box = sandboxes.make("bwrap", ray_node="local")
    pid = ray.get(ray_host.host_on(box.node_id).stats.remote())["pid"]
    os.kill(pid, signal.SIGSTOP)  # the host stops answering (alive to Ray, but hung)
    try:
        start = time.monotonic()
        with pytest.raises(SandboxDied, match="did not answer run within 2 s"):
            box.run("echo hi", timeout=1)
        assert time.monotonic() - start < 10 and not box.alive
    finally:
        os.kill(pid, signal.SIGCONT)
    try:
        box.reset()  # a fresh sandbox from the host, which answers again
        assert box.run("echo back", timeout=5).stdout == b"back\n"
    finally:
        box.close()


def test_the_agent_killing_everything_is_its_own_outcome(ray_local):
    with sandboxes.make("bwrap", ray_node="local") as box:
        result = box.run("kill -9 -1; sleep 1; echo after", timeout=10)
        assert result.exit_code != 0 or b"after" in result.stdout  # an answer, never SandboxDied
        assert box.run("echo alive", timeout=10).stdout == b"alive\n"


def test_a_lease_without_calls_returns_the_sandbox_to_the_pool(ray_local):
    host = ray_host.SandboxHost(pool_size=2, lease_s=1.0)  # the host's logic, in this process
    try:
        answer = host.open("bwrap", None, {"memory_mb": 256}, 60.0)
        handle = answer["handle"]
        assert host.call(handle, "run", ("echo x",), {"timeout": 5})["ok"].stdout == b"x\n"
        assert host.call(handle, "__class__", (), {})["error"] == "value"  # only the protocol's operations
        deadline = time.monotonic() + 15
        while host.stats()["leased"] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert host.stats()["leased"] == 0
        gone = host.call(handle, "run", ("echo x",), {"timeout": 5})
        assert gone["error"] == "died" and "lease" in gone["message"]
    finally:
        host.shutdown()


def test_sandboxes_spread_over_nodes_and_a_lost_node_is_sandbox_died():
    from agentgym_envs.vector.ray_cluster import local_cluster

    if ray.is_initialized():
        ray.shutdown()
    with local_cluster(nodes=2, cpus_per_node=1) as cluster:
        boxes = [sandboxes.make("bwrap", ray_node="any", memory_mb=256) for _ in range(2)]
        try:
            assert len({box.node_id for box in boxes}) == 2  # the least-leased node each time
            for box in boxes:
                assert box.run("echo on-node", timeout=10).stdout == b"on-node\n"
            head = ray.get_runtime_context().get_node_id()
            remote = next(box for box in boxes if box.node_id != head)
            worker = next(node for node in cluster.list_all_nodes() if node.node_id == remote.node_id)
            cluster.remove_node(worker)
            with pytest.raises(SandboxDied, match="is gone|did not answer"):
                remote.run("echo lost", timeout=5)
            remote.reset()  # a fresh sandbox on a node that is alive
            assert remote.node_id == head and remote.run("echo again", timeout=10).stdout == b"again\n"
        finally:
            for box in boxes:
                box.close()
            ray_host.shutdown_hosts()
