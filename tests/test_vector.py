"""TextVectorEnv: parity with independent envs, auto-reset, groups, skips, and surviving broken workers."""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import signal
import subprocess
import sys
import time

import gymnasium
import numpy as np
import pytest

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.core import Step, TextEnv, UnknownEnvError
from agentgym_envs.examples.maze import MazeEnv
from agentgym_envs.vector import TextVectorEnv, VectorEnvError, derive_seed

MAZE = "agentgym/Maze-Easy-v0"
MODES = ["thread", "process"]


class ScriptedEnv(TextEnv):
    """Echo env for fault tests: ``crash_word`` raises, ``sleep`` hangs, the rest end the worker."""

    def __init__(self, crash_word: str = "crash"):
        super().__init__()
        self.crash_word = crash_word
        self.tag, self.count = 0, 0

    def _reset(self, options):
        if options.get("fail"):
            raise RuntimeError("cannot start")
        self.tag, self.count = int(self.np_random.integers(1_000_000)), 0
        return f"start {self.tag}", {"instruction": "Say anything."}

    def _step(self, action):
        if action == self.crash_word:
            raise RuntimeError("boom")
        if action == "sleep":
            time.sleep(30)
        if action == "exit":
            os._exit(3)
        if action == "segfault":
            ctypes.string_at(0)
        if action == "quit":
            sys.exit(4)
        if action == "spawn":
            child = subprocess.Popen(["sleep", "30"], stdin=subprocess.DEVNULL)
            return Step(f"spawned {child.pid}")
        self.count += 1
        return Step(f"{self.tag} step {self.count}: {action}", reward=0.5, terminated=action == "done")


class MazeWithoutSnapshots(MazeEnv):
    """A maze that cannot snapshot: groups must fall back to resetting every member with one seed."""

    get_state = None  # type: ignore[assignment]
    set_state = None  # type: ignore[assignment]


class MazeRefusingSnapshots(MazeEnv):
    """A maze whose get_state() refuses with SnapshotError, as the contract allows (state outside Python)."""

    def _get_state(self):
        from agentgym_envs.core.errors import SnapshotError

        raise SnapshotError("this maze's state lives elsewhere")


def make_small_maze() -> gymnasium.Env:
    return gymnasium.make(MAZE)


def mixed_action(env: gymnasium.Env, t: int, i: int) -> str:
    """Mostly the expert, sometimes a look or an invalid move, so trajectories differ between envs."""
    kind = (t + i) % 5
    if kind == 3:
        return "look"
    if kind == 4:
        return "fly away"
    return env.unwrapped.expert_action()


def reference_step(env: gymnasium.Env, action: str):
    """What the vector env must return for one env: same-step auto-reset without a seed."""
    obs, reward, terminated, truncated, info = env.step(action)
    if terminated or truncated:
        new_obs, new_info = env.reset()
        return new_obs, reward, terminated, truncated, {**new_info, "final_obs": obs, "final_info": info}
    return obs, reward, terminated, truncated, info


# ----------------------------------------------------------------------------- parity and auto-reset
@pytest.mark.parametrize("mode", MODES)
def test_matches_independent_envs_with_autoreset(mode):
    n, seed = 3, 11
    refs = [gymnasium.make(MAZE) for _ in range(n)]
    ref_starts = [env.reset(seed=seed + i) for i, env in enumerate(refs)]
    episodes_ended = 0
    with TextVectorEnv(env_id=MAZE, num_envs=n, mode=mode) as venv:
        obs, infos = venv.reset(seed=seed)
        assert obs == [o for o, _ in ref_starts] and infos == [i for _, i in ref_starts]
        for t in range(30):
            actions = [mixed_action(env, t, i) for i, env in enumerate(refs)]
            assert venv.call("expert_action") == [env.unwrapped.expert_action() for env in refs]
            obs, rewards, terminated, truncated, infos = venv.step(actions)
            expected = [reference_step(env, a) for env, a in zip(refs, actions)]
            assert obs == [e[0] for e in expected]
            np.testing.assert_array_equal(rewards, [e[1] for e in expected])
            np.testing.assert_array_equal(terminated, [e[2] for e in expected])
            np.testing.assert_array_equal(truncated, [e[3] for e in expected])
            assert infos == [e[4] for e in expected]
            episodes_ended += int(terminated.sum() + truncated.sum())
    assert episodes_ended >= 3  # auto-reset was exercised, several times


def test_autoreset_reports_final_obs_and_info():
    with TextVectorEnv(env_id=MAZE, num_envs=2, mode="thread") as venv:
        venv.reset(seed=3)
        for _ in range(20):
            before = venv.call("last_observation")
            obs, rewards, terminated, truncated, infos = venv.step(venv.call("expert_action"))
            if terminated.any():
                break
        i = int(np.flatnonzero(terminated)[0])
        assert rewards[i] == 1.0
        assert "escaped" in infos[i]["final_obs"] and infos[i]["final_obs"] != before[i]
        assert infos[i]["final_info"]["won"] is True
        assert infos[i]["won"] is False and "instruction" in infos[i]  # the new episode's reset info
        assert obs[i] == venv.call("last_observation")[i] and "Find the exit" in obs[i]


def test_without_autoreset_finished_envs_stay_finished():
    with TextVectorEnv(env_id=MAZE, num_envs=2, mode="thread", autoreset=False) as venv:
        venv.reset(seed=3)
        while True:
            obs, rewards, terminated, _, infos = venv.step(venv.call("expert_action"))
            if terminated.any():
                break
        i = int(np.flatnonzero(terminated)[0])
        assert "final_obs" not in infos[i] and "escaped" in obs[i]
        actions = venv.call("expert_action")
        actions[i] = "go north"
        obs2, rewards2, terminated2, _, infos2 = venv.step(actions)
        assert obs2[i] == obs[i] and rewards2[i] == 0.0 and terminated2[i]
        assert infos2[i] == {"episode_over": True}
        obs3, _ = venv.reset(seed=3)
        assert "Find the exit" in obs3[i]


def test_none_actions_leave_envs_alone():
    ref = gymnasium.make(MAZE)
    ref.reset(seed=1)  # env 1 of a venv reset with seed 0
    with TextVectorEnv(env_id=MAZE, num_envs=2, mode="thread") as venv:
        obs, _ = venv.reset(seed=0)
        held = obs[1]
        for _ in range(3):
            obs, rewards, terminated, truncated, infos = venv.step([venv.call("expert_action")[0], None])
            assert obs[1] == held and rewards[1] == 0.0 and not terminated[1] and not truncated[1]
            assert infos[1] == {"skipped": True}
        action = ref.unwrapped.expert_action()
        assert venv.step([None, action])[0][1] == ref.step(action)[0]  # as if the skips never happened


# ----------------------------------------------------------------------------- groups
@pytest.mark.parametrize("mode", MODES)
def test_group_members_start_identical_and_groups_differ(mode):
    with TextVectorEnv(env_id="agentgym/Maze-v0", num_envs=6, group_size=3, mode=mode) as venv:
        assert (venv.num_envs, venv.group_size, venv.num_groups) == (6, 3, 2)
        obs, infos = venv.reset(seed=5)
        assert [info["group"] for info in infos] == [0, 0, 0, 1, 1, 1]
        keys = venv.call("state_key")
        assert obs[0] == obs[1] == obs[2] and obs[3] == obs[4] == obs[5]
        assert keys[0] == keys[1] == keys[2] and keys[3] == keys[4] == keys[5] and keys[0] != keys[3]
        ref = gymnasium.make("agentgym/Maze-v0")
        assert ref.reset(seed=6)[0] == obs[3]  # group g gets seed + g
        actions = ["look", "go east", "go south"] * 2
        actions[3:] = [venv.call("expert_action")[3]] * 3
        obs, rewards, _, _, infos = venv.step(actions)
        assert obs[3] == obs[4] == obs[5] and infos[3] == infos[4] == infos[5]  # same state, same step


def test_group_waits_until_all_members_finish():
    with TextVectorEnv(env_id=MAZE, num_envs=2, group_size=2, mode="thread") as venv:
        venv.reset(seed=2)
        while True:  # member 0 plays to the exit, member 1 only looks
            obs, rewards, terminated, _, infos = venv.step([venv.call("expert_action")[0], "look"])
            if terminated[0]:
                break
        final0 = obs[0]
        assert "escaped" in final0 and "final_obs" not in infos[0] and not terminated[1]
        obs, rewards, terminated, _, infos = venv.step(["go north", "look"])
        assert obs[0] == final0 and rewards[0] == 0.0 and terminated[0]
        assert infos[0] == {"waiting_for_group": True, "group": 0}
        while True:
            obs, rewards, terminated, _, infos = venv.step(["go north", venv.call("expert_action")[1]])
            if terminated[1]:
                break
            assert infos[0]["waiting_for_group"]
        assert rewards.tolist() == [0.0, 1.0] and infos[0]["waiting_for_group"] and "waiting_for_group" not in infos[1]
        assert infos[0]["final_obs"] == final0 and "escaped" in infos[1]["final_obs"]
        assert obs[0] == obs[1] and "Find the exit" in obs[0]  # the group restarted together
        assert venv.call("state_key")[0] == venv.call("state_key")[1]


def test_group_without_snapshots_resets_members_with_one_seed():
    fns = [functools.partial(MazeWithoutSnapshots, size=4)] * 4
    runs = []
    for _ in range(2):
        with TextVectorEnv(fns, group_size=2, mode="thread") as venv:
            obs, _ = venv.reset(seed=8)
            assert obs[0] == obs[1] and obs[2] == obs[3] and obs[0] != obs[2]
            for _ in range(12):
                obs, _, terminated, _, _ = venv.step(venv.call("expert_action"))
                assert obs[0] == obs[1] and obs[2] == obs[3]  # identical members stay in lockstep
            runs.append(obs)
    assert runs[0] == runs[1]  # derived group seeds keep auto-resets reproducible


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_group_whose_env_refuses_snapshots_falls_back_to_one_seed(mode):
    fns = [functools.partial(MazeRefusingSnapshots, size=4)] * 4
    with TextVectorEnv(fns, group_size=2, mode=mode) as venv:
        for _ in range(2):  # the refusal is remembered: the second reset seeds the groups directly
            obs, infos = venv.reset()
            assert obs[0] == obs[1] and obs[2] == obs[3] and obs[0] != obs[2]
            assert not any(info.get("infra_error") for info in infos)


# ----------------------------------------------------------------------------- fault tolerance
def test_killed_worker_is_restarted_and_only_its_env_is_cut():
    n, seed = 3, 4
    refs = [gymnasium.make(MAZE) for _ in range(n)]
    for i, env in enumerate(refs):
        env.reset(seed=seed + i)
    with TextVectorEnv(env_id=MAZE, num_envs=n, mode="process") as venv:
        venv.reset(seed=seed)
        first = venv.step(["look"] * n)[0]
        for env in refs:
            env.step("look")
        pids = venv.worker_pids()
        os.kill(pids[1], signal.SIGKILL)
        actions = [env.unwrapped.expert_action() for env in refs]
        obs, rewards, terminated, truncated, infos = venv.step(actions)
        assert "SIGKILL" in infos[1]["infra_error"] and "during step" in infos[1]["infra_error"]
        assert truncated.tolist() == [False, True, False] and rewards[1] == 0.0
        assert infos[1]["final_obs"] == first[1] and infos[1]["final_info"]["infra_error"] == infos[1]["infra_error"]
        restarted = gymnasium.make(MAZE)
        assert obs[1] == restarted.reset(seed=derive_seed(seed, 0, 1, 1))[0]  # reproducible fresh start
        assert infos[0]["infra_error"] is None and obs[0] == refs[0].step(actions[0])[0]
        assert infos[2]["infra_error"] is None and obs[2] == refs[2].step(actions[2])[0]
        new_pids = venv.worker_pids()
        assert new_pids[1] != pids[1] and new_pids[0] == pids[0] and new_pids[2] == pids[2]
        for _ in range(15):  # the run goes on, restarted env included
            obs, rewards, terminated, truncated, infos = venv.step(venv.call("expert_action"))
            assert all(info["infra_error"] is None for info in infos)


@pytest.mark.parametrize("mode", MODES)
def test_env_that_raises_in_step_gives_infra_error(mode):
    fns = [functools.partial(ScriptedEnv, crash_word="explode")] * 2
    with TextVectorEnv(fns, mode=mode) as venv:
        venv.reset(seed=0)
        obs, _, _, _, _ = venv.step(["a", "b"])
        obs2, rewards, terminated, truncated, infos = venv.step(["explode", "c"])
        assert "RuntimeError: boom" in infos[0]["infra_error"] and "during step" in infos[0]["infra_error"]
        assert truncated.tolist() == [True, False] and rewards.tolist() == [0.0, 0.5] and not terminated.any()
        assert infos[0]["final_obs"] == obs[0] and obs2[0].startswith("start ")
        assert infos[1]["infra_error"] is None and obs2[1].endswith("step 2: c")
        obs3, _, _, truncated, infos = venv.step(["d", "e"])
        assert obs3[0].endswith("step 1: d") and not truncated.any() and infos[0]["infra_error"] is None


@pytest.mark.parametrize("mode", MODES)
def test_step_timeout_kills_the_hung_env(mode):
    with TextVectorEnv([ScriptedEnv] * 2, mode=mode, step_timeout=1.0) as venv:
        venv.reset(seed=0)
        start = time.monotonic()
        obs, _, _, truncated, infos = venv.step(["sleep", "ok"])
        assert time.monotonic() - start < 5
        assert "step_timeout=1.0" in infos[0]["infra_error"] and truncated.tolist() == [True, False]
        assert infos[1]["infra_error"] is None and obs[1].endswith("step 1: ok")
        obs, _, _, truncated, _ = venv.step(["fine", "ok"])
        assert obs[0].endswith("step 1: fine") and not truncated.any()


def test_timeout_also_kills_what_the_env_started():
    with TextVectorEnv([ScriptedEnv], mode="process", step_timeout=1.0) as venv:
        venv.reset(seed=0)
        grandchild = int(venv.step(["spawn"])[0][0].split()[1])
        assert _alive(grandchild)
        assert "step_timeout" in venv.step(["sleep"])[4][0]["infra_error"]
        assert _wait_gone([grandchild])


@pytest.mark.parametrize("mode, expected", [("thread", "thread exited on SystemExit: 4"), ("process", "exit code 4")])
def test_env_that_exits_its_worker_gives_infra_error(mode, expected):
    with TextVectorEnv([ScriptedEnv] * 2, mode=mode) as venv:
        venv.reset(seed=0)
        _, _, _, truncated, infos = venv.step(["x", "quit"])
        assert expected in infos[1]["infra_error"] and truncated.tolist() == [False, True]
        obs, _, _, truncated, _ = venv.step(["x", "y"])
        assert obs[1].endswith("step 1: y") and not truncated.any()


def test_worker_exit_between_steps_is_reported_once():
    with TextVectorEnv([ScriptedEnv] * 2, mode="process") as venv:
        venv.reset(seed=0)
        _, _, _, truncated, infos = venv.step(["exit", "x"])
        assert "exit code 3" in infos[0]["infra_error"] and truncated.tolist() == [True, False]
        _, _, _, truncated, infos = venv.step(["x", "segfault"])
        assert "SIGSEGV" in infos[1]["infra_error"] and truncated.tolist() == [False, True]
        os.kill(venv.worker_pids()[1], signal.SIGKILL)
        assert venv.call("count") == [1, None]  # the dead worker is found, restarted ...
        _, _, _, truncated, infos = venv.step([None, None])  # ... and its lost episode reported next step
        assert truncated.tolist() == [False, True] and "SIGKILL" in infos[1]["infra_error"]
        _, _, _, truncated, infos = venv.step(["x", "y"])
        assert not truncated.any() and infos[1]["infra_error"] is None
        os.kill(venv.worker_pids()[0], signal.SIGKILL)
        assert venv.call("count")[0] is None
        venv.reset(seed=1)  # a new episode: the lost one is no longer worth reporting
        _, _, _, truncated, infos = venv.step(["x", "y"])
        assert not truncated.any() and infos[0]["infra_error"] is None


def test_worker_lost_before_reset_is_rebuilt_with_a_derived_seed():
    with TextVectorEnv([ScriptedEnv] * 2, mode="process") as venv:
        venv.reset(seed=0)
        os.kill(venv.worker_pids()[0], signal.SIGKILL)
        obs, infos = venv.reset(seed=9)
        assert "during reset" in infos[0]["infra_error"] and infos[1]["infra_error"] is None
        assert obs[0] == ScriptedEnv().reset(seed=derive_seed(9, 0, 0, 1))[0]
        assert obs[1] == ScriptedEnv().reset(seed=10)[0]


def test_env_that_never_resets_stops_the_run_with_a_clear_error():
    with TextVectorEnv([ScriptedEnv] * 2, mode="thread") as venv:
        with pytest.raises(VectorEnvError, match=r"envs \[1\] failed 3 times in a row on reset.*cannot start"):
            venv.reset(seed=0, options=[{}, {"fail": True}])


@pytest.mark.parametrize("group_size, autoreset", [(1, False), (2, True)])
def test_cut_env_that_cannot_restart_yet_keeps_its_final_obs(group_size, autoreset):
    with TextVectorEnv([ScriptedEnv] * 2, mode="thread", group_size=group_size, autoreset=autoreset) as venv:
        venv.reset(seed=0)
        obs, _, _, _, _ = venv.step(["a", "b"])
        obs2, _, _, truncated, infos = venv.step(["crash", "c"])
        assert truncated.tolist() == [True, False] and obs2[0] == obs[0]
        assert infos[0]["final_obs"] == obs[0] and "boom" in infos[0]["infra_error"]
        obs3, rewards, _, truncated, infos = venv.step(["d", "e"])
        assert obs3[0] == obs[0] and rewards[0] == 0.0 and truncated[0]
        assert infos[0].get("waiting_for_group" if autoreset else "episode_over") is True


def test_call_errors_raise_with_the_env_named():
    with TextVectorEnv([ScriptedEnv] * 2, mode="thread") as venv:
        venv.reset(seed=0)
        with pytest.raises(VectorEnvError, match=r"env 0: AttributeError: .*no_such_method"):
            venv.call("no_such_method")


# ----------------------------------------------------------------------------- construction and cleanup
def test_bad_arguments_are_explained():
    with pytest.raises(ValueError, match="multiple of group_size"):
        TextVectorEnv(env_id=MAZE, num_envs=3, group_size=2, mode="thread")
    with pytest.raises(ValueError, match="mode must be"):
        TextVectorEnv(env_id=MAZE, num_envs=1, mode="fork")
    with pytest.raises(UnknownEnvError, match="Did you mean agentgym/Maze-Easy-v0"):
        TextVectorEnv(env_id="agentgym/Maze-Eazy-v0", num_envs=1)
    with pytest.raises(VectorEnvError, match="env 0 could not be built.*size must be between"):
        TextVectorEnv([functools.partial(MazeEnv, size=1)], mode="thread")
    with TextVectorEnv(env_id=MAZE, num_envs=2, mode="thread") as venv:
        venv.reset(seed=0)
        with pytest.raises(ValueError, match="expected 2 actions"):
            venv.step(["look"])
        with pytest.raises(ValueError, match="list of 2"):
            venv.reset(options=[{}])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # an unreaped zombie has exited
    except FileNotFoundError:
        return not os.path.isdir("/proc")


def _wait_gone(pids: list[int], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def test_workers_are_cleaned_up_on_close_and_garbage_collection():
    venv = TextVectorEnv([make_small_maze] * 2, mode="process")
    pids = venv.worker_pids()
    venv.close()
    assert _wait_gone(pids)
    with pytest.raises(VectorEnvError, match="closed"):
        venv.reset(seed=0)
    venv = TextVectorEnv([lambda: gymnasium.make(MAZE)], mode="process")  # cloudpickle ships lambdas
    pids = venv.worker_pids()
    del venv
    gc.collect()
    assert _wait_gone(pids)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to see a process's stdin")
def test_workers_do_not_hold_stdin_and_die_with_the_interpreter():
    code = ("import os\nfrom agentgym_envs.vector import TextVectorEnv\n"
            "venv = TextVectorEnv(env_id='agentgym/Maze-Easy-v0', num_envs=1)\npid = venv.worker_pids()[0]\n"
            "print(pid, os.readlink(f'/proc/{pid}/fd/0'), os.readlink('/proc/self/fd/0'))\n")
    # stdin is a pipe here, so a worker that kept its inherited stdin would show a pipe, not /dev/null
    result = subprocess.run([sys.executable, "-c", code], stdin=subprocess.PIPE, capture_output=True, text=True, timeout=60)
    pid, worker_stdin, host_stdin = result.stdout.split()
    assert host_stdin.startswith("pipe:") and worker_stdin == os.devnull
    assert _wait_gone([int(pid)])  # the script never closed its vector env
