"""The three conditions (no skills, curated, self-generated) and ``agentgym skills eval``; the table in
docs/meta_envs.md is what the command it names prints (measured, never typed)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from agentgym_envs.cli.main import main
from meta_envs.skills import evaluate as evaluation
from meta_envs.skills.evaluate import CONDITIONS, evaluate, evaluate_family, evaluation_tasks, self_generated_library
from meta_envs.skills.library import SkillLibrary

DOCS = Path(__file__).resolve().parents[3] / "docs" / "meta_envs.md"


def test_the_three_conditions_play_the_same_held_out_tasks(monkeypatch):
    arms: list[tuple[str, tuple, tuple]] = []
    real_arm = evaluation.ProbeRunner.arm

    def spy(self, library, probes, seeds, actor):
        arms.append((library.version, tuple(probes), tuple(seeds)))
        return real_arm(self, library, probes, seeds, actor)

    monkeypatch.setattr(evaluation.ProbeRunner, "arm", spy)
    rows, generated = evaluate_family("household-heat", n=12, seed=0)
    tasks = {probes for _, probes, _ in arms[-3:]}
    assert len(tasks) == 1 and {seeds for *_, seeds in arms[-3:]} == tasks  # one task set, seeds = tasks (CRN)
    assert [r.condition for r in rows] == list(CONDITIONS)
    none, curated, generated_row = rows
    assert none.skills == () and none.delta == 0.0 and none.successes == 0
    assert curated.rate - none.rate >= 0.2 and curated.delta > curated.delta_half_width  # curated skills help
    assert generated_row.skills == tuple(generated.names()) and all(n.startswith("distilled-") for n in generated.names())
    for row in rows:
        low, high = row.interval
        assert low - 1e-12 <= row.rate <= high + 1e-12 and row.n == 12


def test_evaluation_tasks_are_outside_everything_the_reflector_saw_or_was_measured_on():
    library, used = self_generated_library("household-heat", seed=4)
    assert len(used) == 16 + 4  # SkillLibrary-v0's probes and shown tasks
    tasks = evaluation_tasks(459, used, 50, seed=4)
    assert len(set(tasks)) == 50 and not set(tasks) & set(used)
    assert evaluation_tasks(459, used, 50, seed=4) == tasks
    with pytest.raises(ValueError, match="expected at least 450 unused tasks"):
        evaluation_tasks(459, used, 450, seed=4)


def test_an_evaluation_is_deterministic():
    first = evaluate(["household-heat"], n=8, seed=3).to_dict()
    assert evaluate(["household-heat"], n=8, seed=3).to_dict() == first


def test_families_without_a_curated_library_are_refused_before_any_work(monkeypatch, tmp_path):
    (tmp_path / "household").mkdir()
    monkeypatch.setattr(evaluation, "CURATED_ROOT", tmp_path)  # a checkout whose only curated family is household
    with pytest.raises(ValueError, match=r"expected a family with a curated library \(household\), got 'webshop'"):
        evaluate(["household-heat", "webshop"], n=4)
    with pytest.raises(ValueError, match="expected a family of .*got 'nope'"):
        evaluate(["nope"], n=4)


def test_the_command_prints_the_table_writes_json_and_saves_the_self_generated_library(tmp_path, capsys):
    out, libraries = tmp_path / "eval.json", tmp_path / "libraries"
    assert main(["skills", "eval", "--families", "household-heat", "--tasks", "6", "--json", str(out),
                 "--libraries", str(libraries)]) == 0
    printed = capsys.readouterr().out
    assert "| household-heat | `agentgym/Household-Heat-v0` | curated |" in printed
    data = json.loads(out.read_text())
    assert [row["condition"] for row in data["rows"]] == list(CONDITIONS)
    assert data["command"] == "agentgym skills eval --families household-heat --tasks 6 --seed 0"
    saved = SkillLibrary.load(libraries / "household-heat")
    assert saved.version == data["rows"][2]["library_version"]
    assert main(["skills", "eval", "--families", "terminal", "--tasks", "60"]) == 2  # Terminal has 52 tasks
    assert "expected at least 60 unused tasks in agentgym/Terminal-v0, got 52" in capsys.readouterr().out
    assert main(["skills", "eval", "--families", "household-heat", "--actor", "nope:x"]) == 2
    assert "--actor: unknown policy spec 'nope:x'" in capsys.readouterr().out


def test_the_table_in_the_docs_is_what_its_command_prints(capsys):
    section = DOCS.read_text().split("\n## Skills", 1)[1]
    command = re.search(r"`(agentgym skills eval [^`]*)` \(actor: procedure\)", section)
    assert command, "docs/meta_envs.md's Skills section names the eval command that made its table"
    assert main(shlex.split(command.group(1))[1:]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 9 and "\n".join(table) in section, "rerun the command and paste its table"


class OneOperationPolicy:
    """A policy (the agentgym Policy protocol) that answers one fixed operation, then DONE; it records its chats."""

    def __init__(self, operation: str):
        self.operation, self.chats, self.seeds = operation, [], []

    def act(self, batch, *, sampling):
        from agentgym_envs.policies.base import Completion

        self.chats.append(batch[0])
        self.seeds.append(sampling.seed)
        text = self.operation if len(self.chats) == 1 else "DONE"
        return [Completion(text, [], [], "stop")]


def test_a_policy_reflector_writes_the_self_generated_library():
    heat = (Path(evaluation.CURATED_ROOT) / "household" / "heat-then-place" / "SKILL.md").read_text()
    policy = OneOperationPolicy("ADD\n" + heat)
    report = evaluate(["household-heat"], n=8, seed=0, reflector=evaluation.PolicyReflector(policy, name="one-op"))
    generated = report.row("household-heat", "self-generated")
    assert generated.skills == ("heat-then-place",) and generated.rate >= 0.5  # measured, accepted, then evaluated
    assert report.settings["reflector"] == "one-op"
    system, user = policy.chats[0]
    assert system["role"] == "system" and "## Trajectories" in user["content"]
    assert policy.seeds == [0, 1]  # one completion per operation, each with its own seed


def test_env_side_policies_are_refused_as_actor_or_reflector(capsys):
    for option in ("--actor", "--reflector"):
        assert main(["skills", "eval", "--families", "household-heat", option, "expert"]) == 2
        assert f"{option}: expected a model policy" in capsys.readouterr().out


def test_utility_is_measured_as_skills_are_shown():
    """In ``index`` mode only names and descriptions are shown; the procedure actor never calls read_skill, so
    no library changes what it does: curated skills measure exactly 0, and the reflector's gate keeps nothing."""
    report = evaluate(["household-heat"], n=8, seed=0, reflector_kwargs={"retrieval": "index"})
    curated, generated = report.row("household-heat", "curated"), report.row("household-heat", "self-generated")
    assert curated.skills and curated.delta == 0.0 and curated.delta_half_width == 0.0
    assert generated.skills == () and report.settings["reflector_kwargs"] == {"retrieval": "index"}
    shown = evaluate(["household-heat"], n=8, seed=0, reflector_kwargs={"retrieval": "bm25"})
    assert shown.row("household-heat", "curated").delta >= 0.5


def test_a_failure_of_our_machinery_is_reported_as_such_and_prints_no_table(monkeypatch, capsys):
    from agentgym_envs.core.errors import InfraError

    def broken_arm(self, library, probes, seeds, actor):
        raise InfraError("the base env's server went away")

    monkeypatch.setattr(evaluation.ProbeRunner, "arm", broken_arm)
    assert main(["skills", "eval", "--families", "household-heat", "--tasks", "4"]) == 1
    out = capsys.readouterr().out
    assert "infrastructure failure (not a result): " in out and "server went away" in out and "|" not in out
