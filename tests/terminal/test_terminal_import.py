"""Terminal-Bench and Harbor task directories (fixtures written here in those formats), end to end."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from terminal_backends import REAL_BACKENDS, require_backend

from agentgym_envs.terminal import PytestSummary, RewardFile, TaskRefused, load_task_dir, load_task_dirs
from agentgym_envs.terminal.env import TerminalEnv
from agentgym_envs.terminal.importers import plan_dockerfile

FIXTURES = Path(__file__).parent / "fixtures"
TBENCH = FIXTURES / "terminal-bench" / "csv-summary"
HARBOR = FIXTURES / "harbor" / "word-count"
HARBOR_BUILT = FIXTURES / "harbor" / "line-count"


def play(env: TerminalEnv, index: int, expert: bool):
    env.reset(seed=0, options={"task_index": index})
    while True:
        observation, reward, terminated, truncated, info = env.step(env.expert_action() if expert else "submit")
        assert info["infra_error"] is None, observation
        if terminated or truncated:
            return observation, reward, info


def test_terminal_bench_task_loads():
    task = load_task_dir(TBENCH)
    assert task.id == "terminal-bench/csv-summary" and task.source == "terminal-bench"
    assert task.instruction.startswith("/app/sales.csv")
    assert (task.difficulty, task.category) == ("easy", "data-processing")
    assert task.workdir == "/app" and task.image is None and "/app/sales.csv" in task.files
    assert task.env["REPORT_NAME"] == "summary" and task.timeout_s == 60
    assert isinstance(task.verifier, PytestSummary)
    assert {p for p, _ in task.verifier.files} == {"/tests/test_outputs.py", "/tests/run-tests.sh"}


def test_harbor_tasks_load():
    plain, built = load_task_dir(HARBOR), load_task_dir(HARBOR_BUILT)
    assert plain.id == "harbor/word-count" and plain.instruction.startswith("# Count the words")
    assert plain.files == {"/app/input/story.txt": b"the quick brown fox\njumps over the lazy dog\n"}
    assert isinstance(plain.verifier, RewardFile) and plain.image is None
    assert built.image is not None and built.image.reason == "copies files into system directories"
    assert [t.id for t in load_task_dirs(FIXTURES / "harbor")] == ["harbor/line-count", "harbor/word-count"]


@pytest.mark.parametrize("backend", REAL_BACKENDS)
@pytest.mark.parametrize("fixture", [TBENCH, HARBOR], ids=["terminal-bench", "harbor"])
def test_imported_task_runs_end_to_end(backend, fixture):
    require_backend(backend)
    env = TerminalEnv(tasks=[load_task_dir(fixture)], backend=backend)
    try:
        observation, reward, info = play(env, 0, expert=True)
        assert info["won"] and reward == 1.0, observation
        observation, reward, info = play(env, 0, expert=False)
        assert not info["won"] and reward < 1.0, observation
    finally:
        env.close()


def test_task_needing_its_own_image_is_built_with_docker():
    require_backend("docker")
    env = TerminalEnv(tasks=[load_task_dir(HARBOR_BUILT)], backend="docker")
    try:
        observation, reward, info = play(env, 0, expert=True)
        assert info["won"] and reward == 1.0, observation
        assert play(env, 0, expert=False)[1] == 0.0
    finally:
        env.close()


def test_task_needing_its_own_image_is_refused_elsewhere_with_the_reason():
    task = load_task_dir(HARBOR_BUILT)
    with pytest.raises(TaskRefused, match=r"harbor/line-count cannot run on the bwrap backend: .*system dir.*docker"):
        TerminalEnv(tasks=[task], backend="bwrap")
    env = TerminalEnv(tasks=[task, load_task_dir(HARBOR)], backend="bwrap", skip_unavailable=True)
    assert [t.id for t in env.tasks] == ["harbor/word-count"] and env.refused[0][0] == "harbor/line-count"
    env.close()


def test_foreign_base_image_is_refused_with_the_reason(tmp_path):
    require_backend("docker")
    task_dir = tmp_path / "needs-registry"
    (task_dir / "tests").mkdir(parents=True)
    (task_dir / "task.yaml").write_text("instruction: nothing\ndifficulty: hard\n")
    (task_dir / "Dockerfile").write_text("FROM nvidia/cuda:12.4.0-base-ubuntu22.04\nWORKDIR /app\n")
    (task_dir / "run-tests.sh").write_text("true\n")
    task = load_task_dir(task_dir)
    assert task.image.reason.startswith("starts FROM nvidia/cuda")
    with pytest.raises(TaskRefused, match="building the image for terminal-bench/needs-registry failed"):
        TerminalEnv(tasks=[task], backend="docker")


def test_unknown_directory_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="neither a Terminal-Bench task"):
        load_task_dir(tmp_path)


def test_plain_dockerfiles_are_emulated_with_dockers_copy_rules(tmp_path):
    (tmp_path / "data" / "sub").mkdir(parents=True)
    (tmp_path / "data" / "a.csv").write_text("a\n")
    (tmp_path / "data" / "sub" / "b.csv").write_text("b\n")
    (tmp_path / "run.sh").write_text("echo\n")
    (tmp_path / "Dockerfile").write_text(
        "# comment\nFROM agentgym/base:1\nWORKDIR /srv\nWORKDIR app\nENV A=1 B=\"two words\"\nENV C 3\n"
        "COPY data ./data\nCOPY run.sh \\\n  /tool/\nCOPY data/*.csv /srv/flat/\nLABEL x=y\nCMD [\"bash\"]\n")
    plan = plan_dockerfile(tmp_path / "Dockerfile")
    assert plan.build_reason is None and plan.workdir == "/srv/app"
    assert plan.env == {"A": "1", "B": "two words", "C": "3"}
    assert sorted(p for p, _ in plan.files) == ["/srv/app/data/a.csv", "/srv/app/data/sub/b.csv",
                                                "/srv/flat/a.csv", "/tool/run.sh"]
    (tmp_path / "Dockerfile").write_text("FROM agentgym/base:1\nCOPY run.sh /usr/local/bin/run\n")
    assert plan_dockerfile(tmp_path / "Dockerfile").build_reason == "copies files into system directories"
    (tmp_path / "Dockerfile").write_text("FROM agentgym/base:1\nCOPY ../secret /app/\n")
    with pytest.raises(ValueError, match="outside the build context"):
        plan_dockerfile(tmp_path / "Dockerfile")


# ----------------------------------------------------------------------------- import rules (no sandbox)
def test_env_values_expand_variables_and_from_takes_platform_flags(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        "FROM --platform=linux/amd64 python:3.13-slim AS base\nARG TOOL_HOME=/opt/tool\n"
        "ENV PATH=\"/root/.local/bin:${PATH}\" TOOL=$TOOL_HOME/bin\nENV LIB ${TOOL:-none}/lib\n"
        "ENV LITERAL=\\$HOME UNSET=${NOPE:-fallback} ALT=${TOOL:+yes}\nWORKDIR ${TOOL_HOME}/work\n")
    plan = plan_dockerfile(tmp_path / "Dockerfile")
    assert plan.build_reason is None, plan.build_reason
    assert plan.env["PATH"] == "/root/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert plan.env["TOOL"] == "/opt/tool/bin" and plan.env["LIB"] == "/opt/tool/bin/lib"
    assert (plan.env["LITERAL"], plan.env["UNSET"], plan.env["ALT"]) == ("$HOME", "fallback", "yes")
    assert plan.workdir == "/opt/tool/work"
    assert any("FROM python:3.13-slim mapped to agentgym/base:1" in n for n in plan.notes)


def test_run_steps_follow_the_offline_rules_and_are_reported(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        "FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y --no-install-recommends \\\n"
        "    curl git tmux-nonexistent-pkg && rm -rf /var/lib/apt/lists/*\n"
        "RUN pip install --no-cache-dir pytest numpy-not-here==1.0\nWORKDIR /app\n"
        "RUN mkdir -p /oracle /app/data && echo hi > /app/data/x.txt\n")
    plan = plan_dockerfile(tmp_path / "Dockerfile")
    assert plan.build_reason is None
    assert plan.setup == ["cd /app && /bin/sh -c 'mkdir -p /oracle /app/data && echo hi > /app/data/x.txt'"]
    assert {"/oracle", "/app"} <= plan.run_roots
    notes = "\n".join(plan.notes)
    assert "apt-get install of curl, git, tmux-nonexistent-pkg: not in the image: tmux-nonexistent-pkg" in notes
    assert "pip install of pytest, numpy-not-here (no package index offline): not in the image: numpy-not-here" in notes


def test_test_scripts_that_fetch_uv_fall_back_to_the_preinstalled_pytest():
    from agentgym_envs.terminal.offline import rewrite_script

    notes: list[str] = []
    script = ("#!/bin/bash\napt-get update\napt-get install -y curl\n"
              "curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh\nsource $HOME/.local/bin/env\nuv init\n"
              "uv add pytest==8.4.1\nuvx \\\n  --with pytest==8.4.1 \\\n  --with pytest-json-ctrf==0.3.5 \\\n"
              "  pytest --ctrf /logs/verifier/ctrf.json /tests/test_state.py -rA\nuv run pytest $TEST_DIR/t.py -rA\n"
              "cat > x.sh <<'EOF'\npip install inside-a-heredoc\nEOF\nif [ -f x ]; then echo ok; fi\n")
    out = rewrite_script(script, notes).splitlines()
    assert out[1:7] == ["true"] * 6
    assert out[7] == "python3 -m pytest /tests/test_state.py -rA" and out[8] == "pytest $TEST_DIR/t.py -rA"
    assert out[10] == "pip install inside-a-heredoc" and out[12] == "if [ -f x ]; then echo ok; fi"
    assert any("--ctrf" in n for n in notes) and any("astral.sh" in n for n in notes)


def test_task_without_its_test_script_is_refused_and_all_reasons_are_shown(tmp_path):
    (tmp_path / "tb" / "tests").mkdir(parents=True)
    (tmp_path / "tb" / "task.yaml").write_text("instruction: x\n")
    (tmp_path / "hb" / "tests").mkdir(parents=True)
    (tmp_path / "hb" / "task.toml").write_text("version = '1.0'\n")
    (tmp_path / "hb" / "instruction.md").write_text("x\n")
    with pytest.raises(TaskRefused, match="needs run-tests.sh"):
        load_task_dir(tmp_path / "tb")
    every = r"every task under .* was refused:\n  hb: .*tests/test.sh.*\n  tb: .*run-tests"
    with pytest.raises(TaskRefused, match=every):
        load_task_dirs(tmp_path, refused=[])
    refused: list[tuple[str, str]] = []
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "task.yaml").write_text("instruction: x\n")
    (tmp_path / "ok" / "run-tests.sh").write_text("true\n")
    assert [t.id for t in load_task_dirs(tmp_path, refused)] == ["terminal-bench/ok"]
    assert [d for d, _ in refused] == ["hb", "tb"]


def test_every_task_refused_by_the_backend_lists_the_reasons():
    task = load_task_dir(HARBOR_BUILT)
    with pytest.raises(TaskRefused, match=r"none of the 1 tasks can run on the bwrap backend:\n  harbor/line-count: "):
        TerminalEnv(tasks=[task], backend="bwrap", skip_unavailable=True)


def test_junit_report_parsing_refuses_forgeries():
    from agentgym_envs.terminal.verifiers import junit_results

    report = (b'<?xml version="1.0"?><testsuites><testsuite name="pytest">'
              b'<testcase classname="t" name="a"/><testcase classname="t" name="b"><failure message="x"/></testcase>'
              b'<testcase classname="t" name="c"><skipped/></testcase>'
              b'<testcase classname="t" name="d"/><testcase classname="t" name="d"><error/></testcase>'
              b'</testsuite></testsuites>')
    assert junit_results(report) == {"t::a": True, "t::b": False, "t::d": False}
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuites>&a;</testsuites>'
    for bad in (bomb, b"PASSED fake::t1\n", b"<html/>"):
        with pytest.raises(ValueError):
            junit_results(bad)


def test_reward_json_is_read_before_reward_txt_and_must_be_finite():
    from agentgym_envs.terminal.verifiers import _json_rewards, _text_reward

    assert _json_rewards('{"correctness": 1, "performance": 0}') == {"correctness": 1.0, "performance": 0.0}
    assert _json_rewards('{"reward": 0.25, "other": 1}') == {"reward": 0.25}
    for bad in ('{"reward": NaN}', "true", "{}", '{"reward": "1"}', "[" * 100_000):
        with pytest.raises((ValueError, RecursionError)):
            _json_rewards(bad)
    with pytest.raises(ValueError):
        _text_reward("inf")


# ----------------------------------------------------------------------------- verifier attacks (both backends)
TB_TESTS = '''import importlib.util
import shlex
from pathlib import Path


def _solution():
    spec = importlib.util.spec_from_file_location("solution", "/app/solution.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_solution_exists():
    assert Path("/app/solution.py").exists()


def test_answer_is_right():
    assert _solution().answer() == 42
'''
UV_RUN_TESTS = ("#!/bin/bash\napt-get update\napt-get install -y curl\n"
                "curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nsource $HOME/.local/bin/env\nuv init\n"
                "uv add pytest==8.4.1\nuv run pytest $TEST_DIR/test_outputs.py -rA\n")
IN_APP_RUN_TESTS = "#!/bin/bash\ncd /app\ncp $TEST_DIR/test_*.py .\npython3 -m pytest . -v --tb=short\n"
RIGHT = "def answer():\n    return 42\n"
WRONG = "def answer():\n    return 41\n"


def write_tb_task(root: Path, run_tests: str) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "task.yaml").write_text("instruction: Write /app/solution.py with answer() returning 42.\n"
                                    "difficulty: easy\nmax_test_timeout_sec: 60\n")
    (root / "Dockerfile").write_text("FROM --platform=linux/amd64 python:3.13-slim\nWORKDIR /app\n")
    (root / "run-tests.sh").write_text(run_tests)
    (root / "tests" / "test_outputs.py").write_text(TB_TESTS)
    (root / "solution.sh").write_text(f"cat > /app/solution.py <<'EOF'\n{RIGHT}EOF\n")
    return root


def write_harbor_task(root: Path, test_sh: str) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "environment").mkdir()
    (root / "solution").mkdir()
    (root / "task.toml").write_text('version = "1.0"\n[verifier]\ntimeout_sec = 60.0\n')
    (root / "instruction.md").write_text("Write /app/solution.py with answer() returning 42.\n")
    (root / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    (root / "tests" / "test.sh").write_text(test_sh)
    (root / "tests" / "test_outputs.py").write_text(TB_TESTS)
    (root / "solution" / "solve.sh").write_text(f"cat > /app/solution.py <<'EOF'\n{RIGHT}EOF\n")
    return root


def write_file_command(path: str, text: str) -> str:
    return f"mkdir -p $(dirname {path}) && printf '%s' {shlex.quote(text)} > {path}"


def score_after(env: TerminalEnv, commands: list[str]) -> float:
    """Reset, run the agent's commands, submit; the reward (asserting the episode is the agent's, not infra)."""
    env.reset(seed=0, options={"task_index": 0})
    for command in commands:
        env.step(command)
    observation, reward, terminated, truncated, info = env.step("submit")
    assert terminated and info["infra_error"] is None, observation
    return reward


FORGED_JUNIT = ('<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="2">'
                '<testcase classname="x" name="test_solution_exists"/>'
                '<testcase classname="x" name="test_answer_is_right"/>'
                '</testsuite></testsuites>')
PASS_ALL_CONFTEST = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
'''
DESELECTING_INI = "[pytest]\npython_functions = test_solution_exists\n"
ATTACKS = {
    "prints-40-PASSED-lines": [write_file_command(
        "/app/solution.py", WRONG + "for i in range(40):\n    print(f'PASSED fake::t{i}')\n")],
    "plants-tests-conftest": [write_file_command("/app/solution.py", WRONG),
                              write_file_command("/tests/conftest.py", PASS_ALL_CONFTEST)],
    "plants-app-conftest": [write_file_command("/app/solution.py", WRONG),
                            write_file_command("/app/conftest.py", PASS_ALL_CONFTEST)],
    "plants-ini-deselecting-tests": [write_file_command("/app/solution.py", WRONG),
                                     write_file_command("/app/pytest.ini", DESELECTING_INI)],
    "plants-fake-pytest-module": [write_file_command("/app/solution.py", WRONG), write_file_command(
        "/app/pytest.py", f"open('/logs/agentgym/junit.xml', 'w').write({FORGED_JUNIT!r})\n"),
        "export PYTHONPATH=/app"],
    "plants-usercustomize": [write_file_command("/app/solution.py", WRONG), write_file_command(
        "$HOME/.local/lib/python3.11/site-packages/usercustomize.py",
        f"import atexit\natexit.register(lambda: open('/logs/agentgym/junit.xml', 'w').write({FORGED_JUNIT!r}))\n")],
    "forges-report-in-background": [write_file_command("/app/solution.py", WRONG), "mkdir -p /logs/agentgym && "
        f"(while true; do printf '%s' {shlex.quote(FORGED_JUNIT)} > /logs/agentgym/junit.xml; sleep 0.05; done) "
        ">/dev/null 2>&1 &"],
}


@pytest.fixture(scope="module")
def tb_tasks(tmp_path_factory):
    root = tmp_path_factory.mktemp("tb")
    return [load_task_dir(write_tb_task(root / "uv-run", UV_RUN_TESTS)),
            load_task_dir(write_tb_task(root / "in-app", IN_APP_RUN_TESTS))]


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_terminal_bench_verdicts_cannot_be_forged(backend, tb_tasks):
    require_backend(backend)
    for task in tb_tasks:
        env = TerminalEnv(tasks=[task], backend=backend)
        try:
            assert score_after(env, [write_file_command("/app/solution.py", RIGHT)]) == 1.0, task.id
            assert score_after(env, [write_file_command("/app/solution.py", WRONG)]) == 0.5, task.id
            for name, commands in ATTACKS.items():
                assert score_after(env, commands) == 0.5, f"{task.id}: the attack {name} changed the score"
        finally:
            env.close()


HARBOR_ON_SUCCESS = "#!/bin/bash\npython3 -m pytest /tests/test_outputs.py -rA && echo 1 > /logs/verifier/reward.txt\n"
HARBOR_BOTH_FILES = ("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"
                     "python3 -m pytest /tests/test_outputs.py -rA && r=1 || r=0.25\n"
                     "echo \"{\\\"reward\\\": $r}\" > /logs/verifier/reward.json\n")


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_harbor_rewards_cannot_be_forged_and_reward_json_comes_first(backend, tmp_path):
    require_backend(backend)
    on_success = load_task_dir(write_harbor_task(tmp_path / "on-success", HARBOR_ON_SUCCESS))
    both = load_task_dir(write_harbor_task(tmp_path / "both-files", HARBOR_BOTH_FILES))
    forge = ["mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && echo '{\"reward\": 1}' > "
             "/logs/verifier/reward.json",
             "(while true; do echo 1 > /logs/verifier/reward.txt; sleep 0.05; done) >/dev/null 2>&1 &"]
    env = TerminalEnv(tasks=[on_success, both], backend=backend)
    try:
        assert score_after(env, forge) == 0.0  # a do-nothing agent that forged the reward files
        assert score_after(env, [write_file_command("/app/solution.py", RIGHT)]) == 1.0
        env.reset(seed=0, options={"task_index": 1})
        observation, reward, *_ = env.step("submit")
        assert reward == 0.25, observation  # reward.json (0.25) wins over reward.txt (1)
    finally:
        env.close()
