"""Issue 15 on the terminal env: nothing an agent does is an ``infra_error``, and no verifier can be fooled.

Every case is an attack that worked before the fix: an agent turned its episode into ``infra_error`` (filling
``/tmp`` and then sending a long command, flooding the shell driver's status pipe until the supervisor's
memory ran out, deeply nested JSON), or rigged a check's verdict (a planted ``json.py`` in the work
directory, a forged checksum in ``/tmp``, a module that exits 0 or reads the expected value from the
check's command line). Each runs on both real backends.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from terminal_backends import REAL_BACKENDS, require_backend

from agentgym_envs.core.errors import InvalidAction
from agentgym_envs.terminal.env import TerminalEnv
from agentgym_envs.terminal.render import parse_action
from agentgym_envs.terminal.tasks import ALL_TASKS

TASKS = {t.id: t for t in ALL_TASKS}
FILL_DISKS = "for d in /work /tmp /home/agent /dev/shm; do head -c 400M /dev/zero > $d/fill 2>/dev/null; done; df /tmp"
#: Ways to break the shell, the session or the sandbox from inside; none may end as infra_error.
SABOTAGE = {
    "fork bomb": [":(){ :|:& };:", "echo alive"],
    "process table full, then exit": ["for i in $(seq 400); do setsid sleep 1000 & done 2>/dev/null", "exit", "echo alive"],
    "kill the shell": ["kill -9 $$", "kill -STOP $$", "echo alive"],
    "close the shell's pipes": ["exec 0<&- 1>&- 2>&-", "for f in /proc/$$/fd/*; do eval \"exec ${f##*/}>&-\"; done",
                                "echo alive"],
    "shell limits": ["ulimit -n 4", "ls", "ulimit -u 1; ls", "ulimit -v 20000; ls", "exit", "echo alive"],
    "flood the status pipe": ["for n in 9 10 11 12; do (timeout 4 yes >&$n) 2>/dev/null & done; wait",
                              "grep VmHWM /proc/1/status"],
    "huge output": ["yes | head -c 50M", "head -c 20M /dev/urandom", "echo alive"],
    "fill every disk": [FILL_DISKS, "echo " + "x" * 70_000 + " | wc -c", "echo alive"],
    "delete the work directory": ["cd / && rm -rf /work/* /work/.[!.]* && rmdir /work; ls /work", "echo alive"],
    "lock the work directory": ["chmod 000 /work /tmp /home/agent", "cd /; ls /work", "echo alive"],
    "busy processes": ["for i in $(seq 32); do (timeout 20 sh -c 'while :; do :; done' &) ; done", "echo alive"],
}


def play(env: TerminalEnv, task_id: str, actions: list[str]) -> list[tuple]:
    """Reset to ``task_id``, take ``actions`` then ``submit``; every step's (obs, reward, term, trunc, info)."""
    env.reset(seed=0, options={"task_index": [t.id for t in env.tasks].index(task_id)})
    steps = []
    for action in [*actions, "submit"]:
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    return steps


@pytest.fixture(scope="module")
def envs():
    made: dict[str, TerminalEnv] = {}
    yield made
    for env in made.values():
        env.close()


def env_for(envs, backend: str) -> TerminalEnv:
    require_backend(backend)
    if backend not in envs:
        envs[backend] = TerminalEnv(backend=backend, command_timeout=5.0)
    return envs[backend]


@pytest.mark.parametrize("text", [
    '{"name": "bash", "arguments": {"command": ' + "[" * 100_000 + "]" * 100_000 + "}}",
    '{"name": "bash", "arguments": "' + "[" * 100_000 + "]" * 100_000 + '"}',
    '{"name": "bash", "arguments": {"command": ' + "9" * 5_000 + "}}",
    "bash(" + "[" * 100_000 + ")",
])
def test_deep_or_huge_json_is_an_observation_not_an_exception(text):
    try:
        kind, command = parse_action(text)
    except InvalidAction as e:
        assert "Invalid" in e.reason
    else:
        assert kind == "bash" and command == text  # not a call we can read: bash gets it as typed


@pytest.mark.parametrize("backend", REAL_BACKENDS)
@pytest.mark.parametrize("name", list(SABOTAGE))
def test_sabotage_is_the_agents_outcome_never_infra_error(envs, backend, name):
    env = env_for(envs, backend)
    steps = play(env, "data/csv-to-json", SABOTAGE[name])
    for obs, reward, terminated, truncated, info in steps:
        assert info["infra_error"] is None and not truncated, (name, obs[-300:])
    obs, reward, terminated, _, info = steps[-1]
    assert terminated and obs.startswith("Submitted.") and reward == 0.0 and not info["won"]
    assert env.reset(seed=0, options={"task_index": 0})[1]["infra_error"] is None
    assert env.step("echo fresh")[0].startswith("fresh\n")  # the next episode has a working sandbox


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_long_commands_run_with_every_disk_full(envs, backend):
    env = env_for(envs, backend)
    payload = "x'y\"z$☕ " * 40_000  # 360,000 characters, quotes and multibyte ones, far past 64 KiB
    quoted = "'" + payload.replace("'", "'\\''") + "'"
    steps = play(env, "data/csv-to-json", [FILL_DISKS, f"printf %s {quoted} | wc -m", "echo $__agentgym_long | wc -c"])
    assert [s[4]["infra_error"] for s in steps] == [None] * 4
    assert "100%" in steps[0][0]
    assert steps[1][0].startswith(f"{len(payload)}\n[exit code 0]"), steps[1][0][-300:]
    assert steps[2][0].startswith("1\n")  # the pieces' variable is gone once the command ran


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_status_flood_does_not_grow_the_supervisor(envs, backend):
    env = env_for(envs, backend)
    steps = play(env, "data/csv-to-json", SABOTAGE["flood the status pipe"])
    peak_kb = int(re.search(r"VmHWM:\s+(\d+) kB", steps[1][0]).group(1))
    assert peak_kb < 50_000, steps[1][0]  # unbounded before: 124-170 MB after 4 s here, and growing (a container OOM-kills it)


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_fifo_or_locked_file_where_the_check_reads_is_a_loss(backend):
    require_backend(backend)
    task = dataclasses.replace(TASKS["data/csv-to-json"], timeout_s=2.0)
    env = TerminalEnv(tasks=[task], backend=backend)
    try:
        for attack in ("mkfifo products.json", "echo '[]' > products.json && chmod 000 products.json"):
            steps = play(env, task.id, [attack])
            obs, reward, terminated, truncated, info = steps[-1]
            assert terminated and not truncated and info["infra_error"] is None and reward == 0.0, obs
    finally:
        env.close()


USER_SITE = "d=$(python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p $d && "
EXIT_0 = "import os; os._exit(0)"
FAKE_JSON = ("touch products.json; printf 'def load(f):\\n    return [{\"id\": 1, \"name\": \"pen\", \"price\": 1.5}, "
             "{\"id\": 2, \"name\": \"notebook\", \"price\": 4.25}, {\"id\": 3, \"name\": \"bag\", \"price\": 30}]\\n'"
             " > json.py")
#: A module that finds the value a check expects on some process's command line, prints it and exits.
READ_EXPECTED = r"""cat > inventory.py <<'EOF'
import glob, os, re
for path in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        args = open(path).read().split(chr(0))
    except OSError:
        continue
    for arg in args:
        found = re.search(r"(?:== |\" = '?)(\d+)'?(?: \])?$", arg)
        if found:
            print(found.group(1))
            os._exit(0)
EOF"""
WRAPPER = "printf '#!/bin/sh\\nexit 0\\n' > {0} && chmod +x {0}"
#: (task, the agent's commands): each attack scored 1.0 before, without doing the task.
VERIFIER_ATTACKS = {
    "planted json.py": ("data/csv-to-json", [FAKE_JSON]),
    "sitecustomize and usercustomize": ("data/csv-to-json", [
        "touch products.json", f"echo '{EXIT_0}' | tee sitecustomize.py usercustomize.py",
        USER_SITE + f"echo '{EXIT_0}' | tee $d/usercustomize.py $d/sitecustomize.py && echo 'import os' > $d/x.pth"]),
    "env vars exported by the shell": ("data/csv-to-json", [
        FAKE_JSON, "mkdir -p lib && mv json.py lib/",
        "export PYTHONPATH=/work/lib PYTHONSTARTUP=/work/lib/json.py PYTHONHOME=/work BASH_ENV=/work/env.sh",
        "echo 'diff() { return 0; }; python3() { return 0; }' > env.sh"]),
    "wrappers on an exported PATH": ("data/csv-filter", [
        "mkdir -p ~/.local/bin ~/bin", WRAPPER.format("diff"), WRAPPER.format("~/.local/bin/diff"),
        WRAPPER.format("/tmp/diff"), "cp diff ~/bin/ && export PATH=/work:~/.local/bin:~/bin:/tmp:$PATH",
        "alias diff=true; diff() { return 0; }; export -f diff"]),
    "python3 wrapper": ("data/json-merge", [
        "mkdir -p ~/.local/bin", WRAPPER.format("python3"), WRAPPER.format("~/.local/bin/python3"),
        "touch config.json && export PATH=/work:~/.local/bin:$PATH"]),
    "forged checksum in /tmp": ("build/python-import", [
        "echo 'print(\"total: 42.50\")' > main.py && sha256sum main.py | tee /tmp/main.sum /tmp/tests.sum"]),
    "module under test exits 0": ("python/fix-total", [f"echo '{EXIT_0}' > inventory.py"]),
    "module reads the expected value from a command line": ("python/fix-total", [READ_EXPECTED]),
    "pytest shadowed, conftest rewrites outcomes": ("build/fix-unit-tests", [
        f"echo '{EXIT_0}' > pytest.py",
        "printf 'import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n"
        "    out = yield\\n    out.get_result().outcome = \"passed\"\\n' > conftest.py",
        "printf '[pytest]\\naddopts = -p conftest\\n' > pytest.ini"]),
    "mathx exits 0 inside pytest": ("build/fix-unit-tests", [f"echo '{EXIT_0}' > mathx.py"]),
}

#: What an attack still scores: the checks that pass honestly ("main.py runs" does, with a forged main.py
#: that "main.py unchanged" then catches; the tests file is unchanged; mathx, running inside pytest, can end
#: pytest's process with status 0, which only the check made outside pytest sees through).
HONEST_SCORE = {"forged checksum in /tmp": 1 / 2, "pytest shadowed, conftest rewrites outcomes": 1 / 3,
                "mathx exits 0 inside pytest": 2 / 3}


@pytest.mark.parametrize("backend", REAL_BACKENDS)
@pytest.mark.parametrize("name", list(VERIFIER_ATTACKS))
def test_verifier_attacks_do_not_pay(envs, backend, name):
    env = env_for(envs, backend)
    task_id, actions = VERIFIER_ATTACKS[name]
    steps = play(env, task_id, actions)
    obs, reward, terminated, truncated, info = steps[-1]
    assert terminated and info["infra_error"] is None and not info["won"], obs
    assert reward == pytest.approx(HONEST_SCORE.get(name, 0.0)), obs
