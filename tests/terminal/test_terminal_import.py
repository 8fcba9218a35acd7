"""Terminal-Bench and Harbor task directories (fixtures written here in those formats), end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from terminal_backends import REAL_BACKENDS, require_backend

from agentgym_envs.terminal import PytestSummary, RewardFile, TaskRefused, load_task_dir, load_task_dirs
from agentgym_envs.terminal.env import TerminalEnv
from agentgym_envs.terminal.importers import _plan_dockerfile

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
    assert built.image is not None and built.image.reason == "uses RUN"
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
    with pytest.raises(TaskRefused, match=r"harbor/line-count cannot run on the bwrap backend: .*uses RUN.*docker"):
        TerminalEnv(tasks=[task], backend="bwrap")
    env = TerminalEnv(tasks=[task, load_task_dir(HARBOR)], backend="bwrap", skip_unavailable=True)
    assert [t.id for t in env.tasks] == ["harbor/word-count"] and env.refused[0][0] == "harbor/line-count"
    env.close()


def test_foreign_base_image_is_refused_with_the_reason(tmp_path):
    require_backend("docker")
    task_dir = tmp_path / "needs-registry"
    (task_dir / "tests").mkdir(parents=True)
    (task_dir / "task.yaml").write_text("instruction: nothing\ndifficulty: hard\n")
    (task_dir / "Dockerfile").write_text("FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest\nWORKDIR /app\n")
    (task_dir / "run-tests.sh").write_text("true\n")
    task = load_task_dir(task_dir)
    assert task.image.reason.startswith("starts FROM ghcr.io/")
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
    plan = _plan_dockerfile(tmp_path / "Dockerfile")
    assert plan.build_reason is None and plan.workdir == "/srv/app"
    assert plan.env == {"A": "1", "B": "two words", "C": "3"}
    assert sorted(p for p, _ in plan.files) == ["/srv/app/data/a.csv", "/srv/app/data/sub/b.csv",
                                                "/srv/flat/a.csv", "/tool/run.sh"]
    (tmp_path / "Dockerfile").write_text("FROM agentgym/base:1\nCOPY run.sh /usr/local/bin/run\n")
    assert _plan_dockerfile(tmp_path / "Dockerfile").build_reason == "copies files into system directories"
    (tmp_path / "Dockerfile").write_text("FROM agentgym/base:1\nCOPY ../secret /app/\n")
    with pytest.raises(ValueError, match="outside the build context"):
        _plan_dockerfile(tmp_path / "Dockerfile")
