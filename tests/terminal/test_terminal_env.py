"""The terminal env's contract: actions and tool calls, observations, fuzzing, infra failures, snapshots."""

from __future__ import annotations

import gymnasium
import pytest
from terminal_backends import REAL_BACKENDS, require_backend

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.core.errors import InvalidAction
from agentgym_envs.fuzz import hostile_actions
from agentgym_envs.terminal.env import TerminalEnv
from agentgym_envs.terminal.render import clip, parse_action, render_result
from agentgym_envs.terminal.tasks import ALL_TASKS
from sandboxes import ShellResult

GIT_TASK = next(i for i, t in enumerate(ALL_TASKS) if t.id == "git/resolve-conflict")
SHELL_FUZZ = [
    "exit", "exit 3", "kill -9 $$", "exec bash", "exec 1>/dev/null", "set -e; false", "logout", "break",
    "\x01\x02\x7f\x1b[31m junk", bytes(range(1, 256)).decode("latin-1"), "echo " + "x" * (1 << 20),
    ": " + "☕" * 200_000, "cat", "read line", "yes", "bash -i", "sudo su", "rm -rf / --no-preserve-root",
    "'unterminated", "$(", "{ echo hi; }", '{"name": "python", "arguments": {}}', "bash(", "submit(now)",
]


def test_parse_action():
    assert parse_action("ls -la") == ("bash", "ls -la")
    assert parse_action('bash(command="cd /tmp && ls")') == ("bash", "cd /tmp && ls")
    assert parse_action('{"name": "bash", "arguments": {"command": "pwd"}}') == ("bash", "pwd")
    assert parse_action('{"name": "bash", "arguments": "{\\"command\\": \\"id\\"}"}') == ("bash", "id")
    assert parse_action("SUBMIT") == parse_action("submit()") == parse_action('{"name": "submit"}') == ("submit", "")
    assert parse_action("{ echo hi; }") == ("bash", "{ echo hi; }")
    for bad, match in [('{"name": "python"}', "Unknown tool"), ("bash(command='')", "non-empty"), ("a\x00b", "NUL")]:
        with pytest.raises(InvalidAction, match=match):
            parse_action(bad)


def test_render_result_and_clip():
    result = ShellResult(b"out\n", b"err\n", 2, "/work/x", True, 0.1, 0, "stuck")
    text = render_result(result, 30)
    assert text.startswith("out\n[stderr]\nerr\n[the command ran past 30 s")
    assert "shell itself was stuck" in text and text.endswith("[exit code 2] /work/x$")
    long = "a" * 50 + "b" * 50
    assert clip(long, 20) == "a" * 10 + "\n…[80 characters truncated]…\n" + "b" * 10


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_episode_commands_tools_and_submit(backend):
    require_backend(backend)
    env = gymnasium.make("agentgym_envs:agentgym/Terminal-v0", backend=backend)
    try:
        assert env.spec.max_episode_steps == 50
        obs, info = env.reset(seed=3, options={"task_index": 0})
        assert info["instruction"] in obs and info["task_id"] == ALL_TASKS[0].id
        assert [t["function"]["name"] for t in info["tools"]] == ["bash", "submit"]
        obs, reward, terminated, _, info = env.step("mkdir d && cd d && echo hi")
        assert obs == "hi\n[exit code 0] /work/d$" and reward == 0 and not terminated
        assert (info["exit_code"], info["cwd"]) == (0, "/work/d")
        obs, *_ = env.step('bash(command="pwd; ls /nope")')
        assert obs.startswith("/work/d\n[stderr]\nls: cannot access") and obs.endswith("[exit code 2] /work/d$")
        obs, *_, info = env.step("seq 1 200000")
        assert "characters truncated" in obs and len(obs) < 20_000
        obs, reward, terminated, _, info = env.step('{"name": "submit", "arguments": {}}')
        assert terminated and obs.startswith("Submitted.\nTests passed: 0/2") and reward == 0.0
    finally:
        env.close()


def test_command_timeout_keeps_the_episode_going():
    require_backend("bwrap")
    env = TerminalEnv(command_timeout=0.5)
    try:
        env.reset(seed=0, options={"task_index": 0})
        obs, _, terminated, truncated, info = env.step("X=1; sleep 10")
        assert "ran past 0.5 s" in obs and not (terminated or truncated) and info["infra_error"] is None
        assert env.step("echo $X")[0].startswith("1\n")
    finally:
        env.close()


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_fuzzed_commands_never_crash_the_env(backend):
    require_backend(backend)
    env = TerminalEnv(backend=backend, command_timeout=1.0)
    try:
        env.reset(seed=0, options={"task_index": 0})
        for action in [*SHELL_FUZZ, *hostile_actions()]:
            obs, reward, terminated, truncated, info = env.step(action)
            assert isinstance(obs, str) and 0.0 <= reward <= 1.0 and info["infra_error"] is None, repr(action)[:80]
            if terminated or truncated:
                env.reset(seed=0, options={"task_index": 0})
        assert env.step("echo still fine")[0].startswith("still fine\n")
    finally:
        env.close()


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_broken_sandbox_gives_infra_error_and_reset_recovers(backend):
    require_backend(backend)
    env = TerminalEnv(backend=backend)
    try:
        env.reset(seed=0, options={"task_index": 0})
        env._box._terminate()  # the sandbox dies under the env (OOM kill, vanished container)
        obs, reward, terminated, truncated, info = env.step("ls")
        assert truncated and not terminated and reward == 0.0 and "not your fault" in obs
        assert info["infra_error"] and "sandbox failed" in info["infra_error"]
        assert env.step("ls")[4]["infra_error"]  # still over until reset
        obs, info = env.reset(seed=0, options={"task_index": 0})
        assert info["infra_error"] is None
        while True:
            obs, reward, terminated, truncated, info = env.step(env.expert_action())
            if terminated or truncated:
                break
        assert info["won"] and reward == 1.0
    finally:
        env.close()


def test_unavailable_sandbox_is_an_infra_error_not_a_crash():
    require_backend("docker")
    env = TerminalEnv(backend="docker", image="agentgym/no-such-image:0")
    obs, info = env.reset(seed=0)
    assert info["infra_error"] and "no-such-image" in info["infra_error"] and "not your fault" in obs
    assert env.step("ls")[3] is True
    env.close()


def test_snapshots_replay_the_command_history():
    require_backend("bwrap")
    env, other = TerminalEnv(), TerminalEnv()
    try:
        env.reset(seed=0, options={"task_index": GIT_TASK})
        env.step(env.expert_action())  # the merge that conflicts
        snapshot = env.get_state()
        rest = [env.step(env.expert_action()) for _ in range(2)]
        other.reset(seed=5, options={"task_index": 0})
        other.set_state(snapshot)
        assert other.task.id == "git/resolve-conflict"
        replayed = [other.step(other.expert_action()) for _ in range(2)]
        assert [r[0] for r in replayed] == [r[0] for r in rest] and replayed[-1][4]["won"]
    finally:
        env.close()
        other.close()


def test_make_kwargs_select_tasks():
    env = gymnasium.make("agentgym/Terminal-v0", split="test", difficulty="easy")
    try:
        tasks = env.unwrapped.tasks
        assert tasks and all(t.difficulty == "easy" for t in tasks) and env.unwrapped.num_tasks == len(tasks)
    finally:
        env.close()
    for backend in ("vm", "unsafe"):
        with pytest.raises(ValueError, match="backend must be one of"):
            TerminalEnv(backend=backend)


def test_state_key_tells_silent_commands_apart():
    require_backend("bwrap")
    env = TerminalEnv()
    try:
        _, first = env.reset(seed=0, options={"task_index": 0})
        obs_a, *_, after_a = env.step("touch a")
        env.reset(seed=0, options={"task_index": 0})
        obs_b, *_, after_b = env.step("touch b")
        assert obs_a == obs_b and after_a["state_key"] != after_b["state_key"] != first["state_key"]
        env.reset(seed=0, options={"task_index": 0})
        assert env.step("touch a")[4]["state_key"] == after_a["state_key"]
    finally:
        env.close()
