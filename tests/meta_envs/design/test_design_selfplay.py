"""The self-play loop (meta_envs/design/selfplay.py) and ``agentgym selfplay``: advantages, report, roles,
end-to-end rounds on EnvDesign-v0 with scripted designers, and one trainer step on each role's env."""

from __future__ import annotations

import json
import math

import pytest

from agentgym_envs.cli.main import main
from meta_envs.cli.roles import as_designer
from meta_envs.design.selfplay import (SelfPlayConfig, SelfPlayError, archive_view, difficulty_spread, group_advantages,
                                       run_selfplay, summarise)


def test_group_advantages_are_normalised_and_leave_infra_out():
    rewards = [0.8, -0.5, 0.2, None, -1.0]
    adv = group_advantages(rewards)
    assert adv[3] is None
    scored = [a for a in adv if a is not None]
    assert abs(sum(scored)) < 1e-5
    assert abs(math.sqrt(sum(a * a for a in scored) / len(scored)) - 1.0) < 1e-4
    assert adv[0] > adv[2] > adv[1] > adv[4]  # the order of the rewards is kept
    assert group_advantages([0.3, 0.3, None]) == [0.0, 0.0, None]  # no spread: no signal
    assert group_advantages([None, None]) == [None, None]


def test_difficulty_spread_bins_and_quantiles():
    spread = difficulty_spread([0.1, 0.45, 0.5, 0.55, 0.95])
    assert spread["histogram"] == [1, 0, 3, 0, 1] and spread["n"] == 5
    assert spread["min"] == 0.1 and spread["median"] == 0.5 and spread["max"] == 0.95
    assert difficulty_spread([0.6])["histogram"] == [0, 0, 0, 1, 0]  # 0.6 opens the fourth bin
    assert difficulty_spread([1.0])["histogram"] == [0, 0, 0, 0, 1]


def test_summarise_reads_the_first_failed_gate_and_the_components():
    info = {"outcome": "gate", "sha256": "ab" * 32, "S": 1.0, "B": None, "dup": 0.0, "p_hat": 0.5,
            "gates": [{"name": "parse", "passed": True}, {"name": "expert", "passed": False},
                      {"name": "baselines", "passed": False}]}
    sample = summarise(0, -0.5, info, 1)
    assert sample.failed_gate == "expert" and sample.outcome == "gate"
    assert sample.components == {"S": 1.0, "dup": 0.0, "p_hat": 0.5}  # None components are left out


@pytest.mark.parametrize("field,value,match", [("k", 4, "k must be >= 8"), ("rounds", 0, "rounds must be >= 1"),
                                               ("group_size", 0, "group_size must be >= 1")])
def test_config_refuses_what_cannot_be_scored(field, value, match, tmp_path):
    with pytest.raises(SelfPlayError, match=match):
        SelfPlayConfig(archive=str(tmp_path), **{field: value})


def test_the_command_reports_bad_roles_and_kwargs(tmp_path, capsys):
    assert main(["selfplay", "--archive", str(tmp_path), "--designer", "scripted:nope"]) == 2
    assert "unknown scripted designer 'nope'; expected one of" in capsys.readouterr().out
    assert main(["selfplay", "--archive", str(tmp_path), "--solver", "gpt-4"]) == 2
    assert "unknown policy spec 'gpt-4'" in capsys.readouterr().out
    assert main(["selfplay", "--archive", str(tmp_path), "--env-kwargs", "[1]"]) == 2
    assert "expected a JSON object" in capsys.readouterr().out
    assert main(["selfplay", "--archive", str(tmp_path), "--env", "agentgym/EnvDesing-v0"]) == 2
    assert "Did you mean agentgym/EnvDesign-v0" in capsys.readouterr().out



# --- the loop on EnvDesign-v0 with scripted designers (modules run in bubblewrap) ------------------------

class ByIndex:
    """A designer whose i-th answer to a brief is ``answers[i % len(answers)]`` (a group of mixed quality)."""

    def __init__(self, *answers: str):
        self.answers, self.calls = answers, 0

    def design(self, messages, env, seed):
        self.calls += 1
        return self.answers[(self.calls - 1) % len(self.answers)]


def without_seconds(report: dict) -> dict:
    for r in report["rounds"]:
        r.pop("seconds")
    return report


def test_the_command_runs_rounds_that_grow_the_archive_and_reports_each(tmp_path, capsys):
    archive = tmp_path / "archive"
    args = ["selfplay", "--designer", "scripted:hill-climber", "--group-size", "1", "--rounds", "3",
            "--archive", str(archive)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert all(f"round {r}: rewards" in out for r in range(3)) and "archive growth [1, 2, 3]" in out, out
    report = json.loads((archive / "selfplay_report.json").read_text())
    assert report["growth"] == [1, 2, 3] and len(report["rounds"]) == 3
    view = archive_view(archive)
    last = report["rounds"][-1]
    assert last["difficulty"]["n"] == 3 == sum(last["difficulty"]["histogram"])
    assert last["solver_success_archive"] == pytest.approx(sum(v["p_hat"] for v in view.values()) / 3, abs=1e-6)
    for r in report["rounds"]:
        (sample,) = r["samples"]
        assert sample["outcome"] == "ok" and sample["sha256"] in view and sample["advantage"] == 0.0
        advantages = r["solver_advantages"][sample["sha256"]]  # the solver's 8 plays, as one group
        wins = view[sample["sha256"]]["wins"]
        assert len(advantages) == len(wins) == 8 and abs(sum(advantages)) < 1e-5
        assert all((a > 0) == w for a, w in zip(advantages, wins)) or len(set(wins)) == 1
    knobs = {v["difficulty"] for v in view.values()}
    assert len(knobs) == 3  # the climber moved its knob every round
    assert (last["knobs"]["min"], last["knobs"]["max"]) == (min(knobs), max(knobs))
    # the same command into a fresh archive: the same report, but for wall-clock seconds
    assert main([*args[:-1], str(tmp_path / "again")]) == 0
    again = json.loads((tmp_path / "again" / "selfplay_report.json").read_text())
    assert without_seconds(again)["rounds"] == without_seconds(report)["rounds"]


def test_a_second_run_continues_the_report_and_a_different_config_is_refused(tmp_path, capsys):
    args = ["selfplay", "--group-size", "1", "--rounds", "1", "--archive", str(tmp_path)]
    assert main([*args, "--designer", "scripted:hill-climber"]) == 0 and main([*args, "--designer", "scripted:good"]) == 0
    report = json.loads((tmp_path / "selfplay_report.json").read_text())
    assert [r["round"] for r in report["rounds"]] == [0, 1] and report["growth"] == [1, 2]
    assert report["config"]["rounds"] == 2
    capsys.readouterr()
    assert main([*args, "--seed", "1"]) == 2  # not overwritten
    assert "got different seed" in capsys.readouterr().out
    assert len(json.loads((tmp_path / "selfplay_report.json").read_text())["rounds"]) == 2


def test_designer_advantages_rank_the_answers_to_one_brief(tmp_path):
    from meta_envs.design.designers import good_module, module_source

    designer = ByIndex(good_module(0.5), module_source("trivial"), "this is not python (", good_module(0.5))
    config = SelfPlayConfig(archive=str(tmp_path), rounds=1, group_size=4)
    (report,) = run_selfplay(config, designer)
    good, trivial, garbage, repeat = report.samples
    assert designer.calls == 4  # four answers to the one brief, no repair turns on a one-step env
    assert (trivial.reward, trivial.outcome) == (-0.5, "gate") and trivial.failed_gate is not None
    assert (garbage.reward, garbage.outcome) == (-1.0, "unparseable")
    assert good.outcome == "ok" and good.reward >= 0.0 and report.accepted == 1 == report.archive_size
    assert repeat.outcome == "gate" and repeat.failed_gate == "novelty"  # a copy within the group is no new env
    assert good.advantage > repeat.advantage == trivial.advantage > garbage.advantage
    assert abs(sum(s.advantage for s in report.samples)) < 1e-5


def test_a_model_spec_designer_answers_through_the_policy_contract(tmp_path, capsys):
    # `expert` is the design env's own scripted designer behind the Policy contract (bound to the env)
    assert main(["selfplay", "--designer", "expert", "--group-size", "2", "--rounds", "1",
                 "--archive", str(tmp_path)]) == 0
    (r,) = json.loads((tmp_path / "selfplay_report.json").read_text())["rounds"]
    first, second = r["samples"]
    assert first["outcome"] == "ok" and second["failed_gate"] == "novelty" and r["archive_size"] == 1
    assert first["advantage"] > 0 > second["advantage"]


class FlakyEndpoint:
    """A chat policy whose second request fails as an unreachable endpoint does; the others answer in turn."""

    def __init__(self, *answers: str):
        self.answers, self.calls = list(answers), 0

    def act(self, batch, *, sampling):
        from agentgym_envs.policies import Completion

        self.calls += 1
        if self.calls == 2:
            raise ConnectionError("connection refused by 127.0.0.1:9")
        return [Completion(self.answers.pop(0)) for _ in batch]


def test_a_designer_endpoint_failing_is_infra_and_the_round_goes_on(tmp_path):
    from agentgym_envs.policies import SamplingConfig
    from meta_envs.cli.roles import PolicyDesigner
    from meta_envs.design.designers import good_module, module_source

    designer = PolicyDesigner(FlakyEndpoint(good_module(0.5), module_source("impossible")), SamplingConfig())
    (report,) = run_selfplay(SelfPlayConfig(archive=str(tmp_path), rounds=1, group_size=3), designer)
    good, lost, impossible = report.samples
    assert lost.infra_error == "designer: ConnectionError: connection refused by 127.0.0.1:9"
    assert (lost.reward, lost.outcome, lost.advantage) == (0.0, "infra", None)
    assert impossible.reward == -0.5 and good.outcome == "ok"
    assert good.advantage > 0 > impossible.advantage and abs(good.advantage + impossible.advantage) < 1e-5


def test_the_loop_drives_task_design_too(tmp_path, capsys):
    assert main(["selfplay", "--env", "agentgym/TaskDesign-v0", "--designer", "expert", "--group-size", "1",
                 "--rounds", "2", "--archive", str(tmp_path)]) == 0
    rounds = json.loads((tmp_path / "selfplay_report.json").read_text())["rounds"]
    assert [r["samples"][0]["outcome"] for r in rounds] == ["ok", "ok"] and all(r["accepted"] == 1 for r in rounds)
    assert all(len(r["samples"][0]["sha256"]) == 64 and "p_hat" in r["samples"][0]["components"] for r in rounds)
    assert (tmp_path / "task_design.jsonl").exists()  # TaskDesign-v0 keeps its archive in the run's folder


def test_our_sandbox_missing_is_infra_and_left_out_of_the_group(tmp_path, monkeypatch):
    from meta_envs.design.designers import good_module

    monkeypatch.setenv("PATH", "/nonexistent")  # no bubblewrap: our failure, not the designer's
    (report,) = run_selfplay(SelfPlayConfig(archive=str(tmp_path), rounds=1, group_size=2),
                             ByIndex(good_module(0.3), good_module(0.7)))
    assert [s.reward for s in report.samples] == [0.0, 0.0]
    assert all(s.infra_error and s.advantage is None for s in report.samples)
    assert report.accepted == 0 == report.archive_size

# --- one trainer step on each role's env, with the tiny model -------------------------------------------

#: As tests/trainer/conftest.py's TINY_TEST_OVERRIDES (tests are not importable across folders).
TINY = ["policy.tiny.corpus_episodes=40", "policy.tiny.model.hidden_size=64", "policy.tiny.model.num_heads=1",
        "policy.tiny.model.num_layers=1", "policy.tiny.model.intermediate_size=128", "env.system_prompt=''",
        "progress=false"]
ONE_STEP = ["steps=1", "rollout.tasks_per_step=1", "rollout.group_size=2", "rollout.max_new_tokens=8",
            "bc.episodes=0", "eval.num_tasks=1", "eval.every=0", "checkpoint_every=0", "env.train_tasks=1",
            "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01"]


@pytest.fixture(scope="module")
def tiny_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("tiny-cache")


def test_a_model_designer_samples_each_answer_of_a_group_with_its_own_seed(tmp_path, tiny_cache):
    import torch

    from agentgym_envs.policies import SamplingConfig
    from meta_envs.cli.roles import PolicyDesigner
    from trainer.models.backends.hf import HFPolicy
    from trainer.config import load_config
    from trainer.models.tiny import build_tiny

    torch.set_num_threads(1)
    model, tokenizer = build_tiny(load_config(None, [*TINY, f"policy.cache_dir={tiny_cache}"]).policy.tiny,
                                  str(tiny_cache))
    designer = PolicyDesigner(HFPolicy(model, tokenizer), SamplingConfig(max_new_tokens=16, seed=0))
    runs = [run_selfplay(SelfPlayConfig(archive=str(tmp_path / name), rounds=1, group_size=3), designer)[0]
            for name in ("a", "b")]
    for report in runs:
        assert [s.outcome for s in report.samples] == ["unparseable"] * 3  # 16 tiny tokens are no module
        assert [s.reward for s in report.samples] == [-1.0] * 3 and report.archive_size == 0
    shas = [[s.sha256 for s in report.samples] for report in runs]
    assert len(set(shas[0])) == 3, shas  # three different answers to the one brief
    assert shas[0] == shas[1]  # and the same three again from the same seeds


def train_one_step(overrides: list[str], out_dir, cache) -> dict:
    """``agentgym train - … steps=1`` in-process; the one step's logged record."""
    assert main(["train", "-", *TINY, f"policy.cache_dir={cache}", *ONE_STEP, *overrides, f"out_dir={out_dir}"]) == 0
    records = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1], records
    record = records[0]
    assert math.isfinite(record["reward"]) and math.isfinite(record["loss"]), record
    assert record["infra_errors"] == 0 and record["updated"] == 1.0, record
    return record


def test_agentgym_train_trains_the_designer_on_env_design(tmp_path, tiny_cache):
    record = train_one_step(["env.env_id=agentgym/EnvDesign-v0", "env.max_turns=1",
                             "rollout.max_context_tokens=8192"], tmp_path / "designer", tiny_cache)
    assert record["reward"] == -1.0, record  # eight tiny tokens are no module: unparseable, -1


def test_agentgym_train_trains_the_solver_on_the_archive_selfplay_grew(tmp_path, monkeypatch, tiny_cache):
    import agentgym_envs
    from meta_envs.design.designers import DESIGNERS

    made, real_make = [], agentgym_envs.make
    monkeypatch.setattr(agentgym_envs, "make", lambda env_id, **kw: made.append((env_id, kw)) or real_make(env_id, **kw))

    archive = tmp_path / "archive"
    (report,) = run_selfplay(SelfPlayConfig(archive=str(archive), rounds=1, group_size=1),
                             as_designer(DESIGNERS["good"]))
    assert report.archive_size == 1
    kwargs = f"{{archive: {archive}, rule: newest}}"
    record = train_one_step(["env.env_id=agentgym/Generated-v0", "env.max_turns=2", "rollout.max_context_tokens=2048",
                             f"env.train_kwargs={kwargs}", f"env.eval_kwargs={kwargs}"],
                            tmp_path / "solver", tiny_cache)
    assert -1.0 <= record["reward"] <= 1.0, record
    assert ("agentgym/Generated-v0", str(archive)) in {(i, str(kw.get("archive"))) for i, kw in made}, made


def test_an_openai_compatible_designer_over_http_designs_an_accepted_env(tmp_path, capsys):
    """``--designer openai:<url>#<model>``: the brief goes over real HTTP (our OpenAI-compatible policy server on
    loopback, answering with a fenced module) and the reply is validated, played and archived like any other."""
    from meta_envs.design.designers import good_module
    from trainer.serve.policy_server import PolicyServer, ScriptedReplyPolicy

    server = PolicyServer(ScriptedReplyPolicy([f"Here is my env:\n```python\n{good_module(0.4)}\n```"]), model_name="designer")
    server.start()
    try:
        assert main(["selfplay", "--designer", f"openai:{server.url}#designer", "--group-size", "1", "--rounds", "1",
                     "--archive", str(tmp_path)]) == 0
    finally:
        server.shutdown()
        server.server_close()
    (r,) = json.loads((tmp_path / "selfplay_report.json").read_text())["rounds"]
    (sample,) = r["samples"]
    assert sample["outcome"] == "ok" and r["accepted"] == 1 and r["archive_size"] == 1, sample
    assert sample["reward"] > 0.3, sample  # p_hat 0.5 at knob 0.4 (test_env_design): B = 1
