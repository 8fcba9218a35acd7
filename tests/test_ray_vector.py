"""TextVectorEnv(mode="ray") on a real local Ray: same trajectories as process mode, batched actor calls,
a SIGKILLed actor or a hung one cut as infra_error and replaced, and Ray's traffic kept on loopback.

Two-node behaviour (spread over nodes, node removal) is in test_ray_vector_nodes.py.
"""

from __future__ import annotations

import functools
import gc
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import gymnasium
import numpy as np
import pytest
from ray_support import ray_local  # noqa: F401  (the module's one local cluster)
from test_vector import ScriptedEnv, _wait_gone, mixed_action

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.examples.maze import MazeEnv
from agentgym_envs.vector import TextVectorEnv, VectorEnvError, derive_seed

pytestmark = pytest.mark.usefixtures("ray_local")
MAZE = "agentgym/Maze-Easy-v0"
TWO_PER_ACTOR = {"envs_per_actor": 2, "num_cpus": 0.5}


def _run(venv: TextVectorEnv, refs: list[gymnasium.Env], steps: int, seed: int) -> list:
    """Reset with ``seed``, then ``steps`` steps of mixed actions chosen by the reference envs."""
    out = [venv.reset(seed=seed)]
    for t in range(steps):
        actions = [mixed_action(env, t, i) for i, env in enumerate(refs)]
        for env, action in zip(refs, actions):  # the references only pick the actions: both modes get the same
            if any(env.step(action)[2:4]):
                env.reset()
        obs, rewards, terminated, truncated, infos = venv.step(actions)
        out.append((obs, rewards.tolist(), terminated.tolist(), truncated.tolist(), infos))
    return out


def _batches(venv: TextVectorEnv) -> list[int]:
    import ray

    return [ray.get(slot.actor.stats.remote())["batches_run"] for slot in venv._fleet.slots]


@pytest.mark.parametrize("env_id, group_size, ray_options", [
    (MAZE, 1, TWO_PER_ACTOR),
    ("agentgym/Maze-v0", 2, {"envs_per_actor": 1, "num_cpus": 0.5}),  # each group spans two actors
])
def test_same_trajectories_as_process_mode(env_id, group_size, ray_options):
    runs = {}
    for mode in ("process", "ray"):
        refs = [gymnasium.make(env_id) for _ in range(4)]
        for i, env in enumerate(refs):
            env.reset(seed=3 + i // group_size)
        kwargs = {"ray_options": ray_options} if mode == "ray" else {}
        with TextVectorEnv(env_id=env_id, num_envs=4, mode=mode, group_size=group_size, **kwargs) as venv:
            runs[mode] = _run(venv, refs, 25, seed=3)
            if mode == "ray":
                assert len(venv._fleet.slots) == 4 // ray_options["envs_per_actor"]
                before = _batches(venv)
                venv.step(["look"] * 4)
                assert [after - b for after, b in zip(_batches(venv), before)] == [1] * len(before)  # one call per actor
    assert runs["ray"] == runs["process"]
    ended = sum(sum(t[2]) + sum(t[3]) for t in runs["ray"][1:])
    assert ended >= 2  # auto-reset (and, with groups, the snapshot copy across actors) was exercised
    if group_size == 2:
        obs = runs["ray"][0][0]
        assert obs[0] == obs[1] and obs[2] == obs[3] and obs[0] != obs[2]


def test_sigkill_of_an_actor_cuts_its_envs_and_a_replacement_takes_over():
    seed, refs = 4, [gymnasium.make(MAZE) for _ in range(4)]
    for i, env in enumerate(refs):
        env.reset(seed=seed + i)
    with TextVectorEnv(env_id=MAZE, num_envs=4, mode="ray", ray_options=TWO_PER_ACTOR) as venv:
        venv.reset(seed=seed)
        first = venv.step(["look"] * 4)[0]
        for env in refs:
            env.step("look")
        pids = venv.worker_pids()
        assert pids[0] == pids[1] != pids[2] == pids[3]  # two envs per actor
        os.kill(pids[0], signal.SIGKILL)
        actions = [env.unwrapped.expert_action() for env in refs]
        obs, rewards, terminated, truncated, infos = venv.step(actions)
        for i in (0, 1):
            assert "died during step" in infos[i]["infra_error"] and "Ray actor hosting envs [0, 1]" in infos[i]["infra_error"]
            assert infos[i]["final_obs"] == first[i] and rewards[i] == 0.0
            assert obs[i] == gymnasium.make(MAZE).reset(seed=derive_seed(seed, 0, i, 1))[0]  # reproducible restart
        assert truncated.tolist() == [True, True, False, False] and not terminated[:2].any()
        for i in (2, 3):
            assert infos[i]["infra_error"] is None and obs[i] == refs[i].step(actions[i])[0]
        new = venv.worker_pids()
        assert new[0] == new[1] != pids[0] and new[2:] == pids[2:]  # one replacement actor for both envs
        obs, infos = venv.reset(seed=7)  # the next reset works, on the replacement too
        assert obs == [gymnasium.make(MAZE).reset(seed=7 + i)[0] for i in range(4)]
        assert all(info["infra_error"] is None for info in infos)
        for _ in range(5):
            assert all(info["infra_error"] is None for info in venv.step(venv.call("expert_action"))[4])


class DiesInAFreshActor(ScriptedEnv):
    """Once ``marker`` exists, exits its process when built as the first env of an actor: a replacement
    actor lost while it builds, as one that Ray placed on a dying node is."""

    hosted = 0  # envs built in this process

    def __init__(self, marker: str):
        if os.path.exists(marker) and DiesInAFreshActor.hosted == 0:
            os._exit(5)
        DiesInAFreshActor.hosted += 1
        super().__init__()


def test_a_replacement_actor_lost_while_it_builds_hands_its_envs_to_the_surviving_actor(tmp_path):
    marker = tmp_path / "armed"
    fns = [functools.partial(DiesInAFreshActor, str(marker))] * 4
    with TextVectorEnv(fns, mode="ray", ray_options=TWO_PER_ACTOR) as venv:
        venv.reset(seed=0)
        pids = venv.worker_pids()
        marker.write_text("armed")  # from now on every replacement actor dies while it builds
        os.kill(pids[0], signal.SIGKILL)
        obs, _, _, truncated, infos = venv.step(["a"] * 4)
        assert truncated.tolist() == [True, True, False, False]  # the cut, reported once
        assert all("died during step" in infos[i]["infra_error"] for i in (0, 1))
        assert venv.worker_pids() == [pids[2]] * 4  # both lost envs now live on the surviving actor
        for _ in range(3):
            obs, _, _, truncated, infos = venv.step(["b"] * 4)
            assert not truncated.any() and all(info["infra_error"] is None for info in infos)
        assert [o.split(" ", 1)[1] for o in obs] == ["step 3: b", "step 3: b", "step 4: b", "step 4: b"]


def test_actor_killed_while_a_step_is_in_flight_fails_that_step_without_retrying_it():
    with TextVectorEnv([ScriptedEnv] * 4, mode="ray", ray_options=TWO_PER_ACTOR) as venv:
        venv.reset(seed=0)
        pids = venv.worker_pids()
        killer = threading.Timer(1.0, os.kill, (pids[2], signal.SIGKILL))
        killer.start()
        start = time.monotonic()
        obs, _, _, truncated, infos = venv.step(["a", "b", "sleep", "c"])  # env 2 sleeps 30 s in its step
        killer.join()
        assert time.monotonic() - start < 15  # found by Ray's death notice, not by waiting out the sleep
        assert truncated.tolist() == [False, False, True, True]
        assert all("died during step" in infos[i]["infra_error"] for i in (2, 3))
        assert obs[0].endswith("step 1: a") and obs[3].startswith("start ")  # env 3 restarted, not re-stepped
        obs, _, _, truncated, _ = venv.step(["x"] * 4)
        assert not truncated.any() and obs[3].endswith("step 1: x")


def test_env_whose_actor_died_while_it_was_skipped_reports_it_on_its_next_step():
    with TextVectorEnv([ScriptedEnv] * 4, mode="ray", ray_options=TWO_PER_ACTOR) as venv:
        venv.reset(seed=0)
        venv.step(["a"] * 4)
        os.kill(venv.worker_pids()[0], signal.SIGKILL)
        _, _, _, truncated, infos = venv.step([None, "b", "b", "b"])
        assert truncated.tolist() == [False, True, False, False] and infos[0] == {"skipped": True}
        obs, _, _, truncated, infos = venv.step(["c", "c", "c", "c"])
        assert truncated.tolist() == [True, False, False, False] and "Ray actor" in infos[0]["infra_error"]
        assert obs[1].endswith("step 1: c") and obs[2].endswith("step 3: c")
        obs, _, _, truncated, infos = venv.step(["d"] * 4)
        assert not truncated.any() and obs[0].endswith("step 1: d")


def test_hung_actor_is_killed_by_the_deadline_and_only_its_envs_are_cut():
    with TextVectorEnv([ScriptedEnv] * 4, mode="ray", ray_options=TWO_PER_ACTOR, step_timeout=1.0) as venv:
        venv.reset(seed=0)
        pids = venv.worker_pids()
        start = time.monotonic()
        obs, _, _, truncated, infos = venv.step(["sleep", "ok", "ok", "ok"])
        assert time.monotonic() - start < 6
        assert truncated.tolist() == [True, True, False, False]  # an actor runs its envs in turn: both are cut
        assert all("step_timeout=1.0" in infos[i]["infra_error"] for i in (0, 1))
        assert infos[2]["infra_error"] is None and obs[2].endswith("step 1: ok")
        new = venv.worker_pids()
        assert new[0] != pids[0] and new[2] == pids[2]
        obs, _, _, truncated, _ = venv.step(["fine"] * 4)
        assert not truncated.any() and obs[0].endswith("step 1: fine") and obs[2].endswith("step 2: fine")


def test_env_that_raises_is_rebuilt_alone_on_its_actor():
    fns = [functools.partial(ScriptedEnv, crash_word="explode")] * 2
    with TextVectorEnv(fns, mode="ray", ray_options=TWO_PER_ACTOR) as venv:
        venv.reset(seed=0)
        pids = venv.worker_pids()
        obs = venv.step(["a", "b"])[0]
        obs2, rewards, _, truncated, infos = venv.step(["explode", "c"])
        assert "RuntimeError: boom" in infos[0]["infra_error"] and truncated.tolist() == [True, False]
        assert infos[0]["final_obs"] == obs[0] and obs2[1].endswith("step 2: c") and rewards[1] == 0.5
        assert venv.worker_pids() == pids  # the actor and its other env were kept
        with pytest.raises(VectorEnvError, match=r"env 1: AttributeError"):
            venv.call("no_such_method")


class WaitingEnv(ScriptedEnv):
    """An env whose every step waits 0.4 s, like one driving a browser or a shell."""

    def _step(self, action):
        time.sleep(0.4)
        return super()._step(action)


def test_threads_per_actor_steps_waiting_envs_side_by_side():
    options = {"envs_per_actor": 4, "num_cpus": 0.5, "threads_per_actor": 4}
    with TextVectorEnv([WaitingEnv] * 4, mode="ray", ray_options=options) as venv:
        venv.reset(seed=0)
        venv.step(["warm"] * 4)
        start = time.monotonic()
        obs = venv.step(["a", "b", "c", "d"])[0]
        assert time.monotonic() - start < 1.2  # one after another would take 1.6 s
        assert [o.rsplit(" ", 1)[1] for o in obs] == ["a", "b", "c", "d"]  # replies keep their envs' order


def test_close_and_garbage_collection_stop_the_actors():
    venv = TextVectorEnv(env_id=MAZE, num_envs=2, mode="ray", ray_options=TWO_PER_ACTOR)
    pids = venv.worker_pids()
    venv.close()
    assert _wait_gone(pids)
    with pytest.raises(VectorEnvError, match="closed"):
        venv.reset(seed=0)
    venv = TextVectorEnv([lambda: gymnasium.make(MAZE)], mode="ray", ray_options=TWO_PER_ACTOR)  # a lambda ships
    pids = venv.worker_pids()
    del venv
    gc.collect()
    assert _wait_gone(pids)  # garbage collection stops the actors too


class LeakyEnv(ScriptedEnv):
    """An env bug: the action "leak" puts an unpicklable object (a lock) into the step's info."""

    def _step(self, action):
        step = super()._step(action)
        if action == "leak":
            step.info["lock"] = threading.Lock()
        return step


def test_what_cannot_travel_fails_only_its_own_env():
    with TextVectorEnv([LeakyEnv] * 2, mode="ray", ray_options=TWO_PER_ACTOR) as venv:
        venv.reset(seed=0)
        pids = venv.worker_pids()
        _, _, _, truncated, infos = venv.step([threading.Lock(), "a"])  # the caller's action does not pickle
        assert "arguments could not be pickled" in infos[0]["infra_error"] and truncated.tolist() == [True, False]
        obs, _, _, truncated, infos = venv.step(["b", "leak"])
        assert "result could not be pickled" in infos[1]["infra_error"] and truncated.tolist() == [False, True]
        assert obs[0].endswith("step 1: b") and venv.worker_pids() == pids  # the actor and its other env stay


class MarkedEnv(ScriptedEnv):
    """Writes a file when closed: closing the vector env must let every env close itself (a browser quits,
    a terminal env hands its sandbox back) before its actor is stopped."""

    def __init__(self, marker: str):
        super().__init__()
        self.marker = marker

    def close(self):
        with open(self.marker, "w") as f:
            f.write("closed")
        super().close()


def test_close_lets_every_env_close_before_its_actor_stops(tmp_path):
    markers = [str(tmp_path / f"env{i}") for i in range(4)]
    venv = TextVectorEnv([functools.partial(MarkedEnv, m) for m in markers], mode="ray", ray_options=TWO_PER_ACTOR)
    venv.reset(seed=0)
    venv.close()
    assert [os.path.exists(m) for m in markers] == [True] * 4


def test_bad_ray_arguments_are_explained():
    with pytest.raises(ValueError, match="ray_options goes with mode='ray'"):
        TextVectorEnv(env_id=MAZE, num_envs=1, mode="thread", ray_options={})
    with pytest.raises(ValueError, match="expected ray_options keys among"):
        TextVectorEnv(env_id=MAZE, num_envs=1, mode="ray", ray_options={"actors": 2})
    with pytest.raises(VectorEnvError, match="env 0 could not be built.*size must be between"):
        TextVectorEnv([functools.partial(MazeEnv, size=1)], mode="ray", ray_options={"num_cpus": 0.5})
    with pytest.raises(ValueError, match=r"num_cpus <= 2.0 .*got 3"):  # never schedulable: refused, no hang
        TextVectorEnv(env_id=MAZE, num_envs=1, mode="ray", ray_options={"num_cpus": 3})


def test_an_actor_that_cannot_be_scheduled_stops_the_run_instead_of_hanging():
    start = time.monotonic()
    with pytest.raises(VectorEnvError, match=r"env \d could not be built.*not scheduled.*startup_timeout=8"):
        TextVectorEnv(env_id=MAZE, num_envs=3, mode="ray",  # 3 actors of 1 CPU on 2 CPUs: one never starts
                      ray_options={"envs_per_actor": 1, "num_cpus": 1, "startup_timeout": 8})
    assert time.monotonic() - start < 25


def test_without_ray_installed_ray_mode_says_how_to_install_it_and_other_modes_work():
    code = ("import sys\nsys.modules['ray'] = None  # import ray now raises ImportError\n"
            "from agentgym_envs.vector import TextVectorEnv\n"
            "from agentgym_envs.vector.ray_cluster import RayUnavailableError\n"
            "with TextVectorEnv(env_id='agentgym/Maze-Easy-v0', num_envs=1, mode='thread') as venv:\n"
            "    venv.reset(seed=0)\n"
            "try:\n    TextVectorEnv(env_id='agentgym/Maze-Easy-v0', num_envs=1, mode='ray')\n"
            "except RayUnavailableError as e:\n    print('refused:', e)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "refused:" in result.stdout and "pip install 'agentgym[ray]'" in result.stdout, result.stderr[-2000:]


_TRACED = """
    import socket, sys
    import agentgym_envs
    from agentgym_envs.vector import TextVectorEnv
    from agentgym_envs.vector.ray_cluster import import_ray, init_ray
    if __name__ == "__main__":
        init_ray(num_cpus=1)
        with TextVectorEnv(env_id="agentgym/Maze-Easy-v0", num_envs=2, mode="ray",
                           ray_options={"num_cpus": 0.5}) as venv:
            venv.reset(seed=0)
            venv.step(venv.call("expert_action"))
        import_ray().shutdown()
        # the control: one non-loopback connect (UDP, so nothing is sent), which the trace must show
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).connect(("203.0.113.7", 9))
        print("done")
"""
_ADDRESS = re.compile(r'(connect|bind)\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\(\d+\), .*?'
                      r'(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")')
_LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def test_ray_connects_and_binds_to_loopback_only(tmp_path):
    assert shutil.which("strace"), "strace is installed by scripts/install.sh (apt)"
    script, trace = tmp_path / "traced.py", tmp_path / "trace.txt"
    script.write_text(textwrap.dedent(_TRACED))
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    result = subprocess.run(["strace", "-f", "-qq", "-e", "trace=connect,bind", "-o", str(trace), sys.executable,
                             str(script)], capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert result.returncode == 0 and "done" in result.stdout, result.stderr[-3000:]
    text = trace.read_text()
    calls = [(m[1], m[2] or m[3]) for m in _ADDRESS.finditer(text)]
    outside = {address for _, address in calls if address not in _LOOPBACK}
    assert outside == {"203.0.113.7"}, outside  # only the control: Ray itself stayed on loopback
    assert sum(kind == "connect" and address == "127.0.0.1" for kind, address in calls) > 10  # Ray was traced
    assert "169.254.169.254" not in text and "8.8.8.8" not in text
