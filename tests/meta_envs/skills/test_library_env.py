"""agentgym/SkillLibrary-v0 (meta_envs/skills/library_env.py, operations.py, reflector.py): operations and their
measured rewards, malformed SKILL.md, merges, determinism, code skills' own tests, and the scripted reflector."""

from __future__ import annotations

import re

import pytest

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.checker import check_env
from meta_envs.skills.library import SkillLibrary
from meta_envs.skills.library_env import SkillLibraryEnv
from meta_envs.skills.operations import OperationError, parse_operation
from meta_envs.skills.reflector import ScriptedReflector, distilled_skill
from meta_envs.skills.skill import Skill

CURATED = SkillLibrary.load("meta_envs/skills/curated/household")
HEAT = CURATED.get("heat-then-place")
WRONG_HEAT = HEAT.body.replace("go to microwave", "go to fridge").replace("heat {obj} with microwave", "cool {obj} with fridge")


def _md(name: str, body: str, description: str = "A skill for tests.") -> str:
    return Skill(name=name, description=description, body=body).to_skill_md()


def _env(family: str = "household-heat", **kwargs) -> SkillLibraryEnv:
    env = SkillLibraryEnv(family=family, **kwargs)
    env.reset(seed=0)
    return env


@pytest.mark.parametrize("action, match", [
    ("ADD\n---\nname: Heat_Skill\ndescription: Heats.\n---\n1. look\n", "name"),
    ("ADD\n---\nname: heat--skill\ndescription: Heats.\n---\n1. look\n", "name"),
    ("ADD\n---\nname: heat-skill\ndescription: ''\n---\n1. look\n", "description"),
    ("ADD\n---\nname: heat-skill\ndescription: " + "x" * 1025 + "\n---\n1. look\n", "description"),
    ("ADD\n---\nname: heat-skill\ndescription: Heats.\n---\n" + "word " * 5001, "token"),
    ("ADD\nno front matter at all", "front matter"),
    ("ADD", "SKILL.md"),
    ("FROB heat-then-place", "operation"),
    ("REMOVE no-such-skill", "name of a skill"),
    ("MERGE heat-then-place", "2 skill name"),
    ("EDIT heat-then-place\n" + _md("other-name", "1. look\n"), "keep the name"),
])
def test_a_malformed_operation_is_invalid_costs_minus_one_and_counts(action: str, match: str):
    env = _env(library=SkillLibrary([HEAT]))
    _, reward, terminated, _, info = env.step(action)
    assert info["action_valid"] is False and reward == -1.0 and match in info["parse_error"]
    assert info["library"] == ["heat-then-place"] and info["metrics"]["operations"] == 1.0 and not terminated


def test_adding_the_curated_heat_skill_is_measured_accepted_and_rewarded_by_utility():
    env = _env()
    _, reward, _, _, info = env.step("ADD\n" + HEAT.to_skill_md())
    u = info["utility"]
    assert info["accepted"] and info["library"] == ["heat-then-place"] and u["U"] >= 0.2 and u["n"] == 16
    assert reward == pytest.approx(u["U"] - 0.5 * u["regressions"] / u["n"]) and info["reward_components"]["token_term"] == 0.0
    assert info["won"] and info["score"] == u["U"]
    _, again, _, _, info = env.step("ADD\n" + HEAT.to_skill_md())  # the same name twice: EDIT it instead
    assert again == -1.0 and "use EDIT" in info["parse_error"]


def test_a_wrong_procedure_is_rejected_and_removing_it_later_earns_a_positive_reward():
    env = _env(library=SkillLibrary([HEAT]))
    _, reward, _, _, info = env.step("ADD\n" + _md("a-heat-shortcut", WRONG_HEAT))
    assert info["utility"]["U"] < 0 and reward < 0 and not info["accepted"] and info["library"] == ["heat-then-place"]
    stuck = _env(library=SkillLibrary([HEAT, Skill("a-heat-shortcut", "A shortcut.", WRONG_HEAT)]))
    _, reward, _, _, info = stuck.step("REMOVE a-heat-shortcut")
    assert reward > 0 and info["accepted"] and info["library"] == ["heat-then-place"]


def test_a_rejected_operation_earns_nothing_however_often_it_is_resent():
    # On household (every task type) seed 0, the heat skill fixes one probe of 16: U = 1/16 > 0, but not above
    # the confidence bound, so it is rejected. Resending it must not farm U while the library stays empty.
    env = _env("household")
    rewards = []
    for _ in range(4):
        _, reward, _, _, info = env.step("ADD\n" + HEAT.to_skill_md())
        assert info["utility"]["U"] > 0 and not info["accepted"] and info["library"] == []
        rewards.append(reward)
    assert rewards == [0.0] * 4 and not info["won"] and info["score"] == 0.0
    assert info["reward_components"]["withheld"] == pytest.approx(info["utility"]["U"])  # shown, not paid


def test_ten_copies_score_no_better_than_one_and_merging_them_earns_at_least_zero():
    copies = [Skill(f"heat-copy-{i}", HEAT.description, HEAT.body) for i in range(10)]
    one = _env()
    _, r_one, *_ = one.step("ADD\n" + copies[0].to_skill_md())
    ten = _env(library=SkillLibrary(copies[1:]))
    _, r_tenth, *_ = ten.step("ADD\n" + copies[0].to_skill_md())
    assert r_tenth == 0.0 < r_one
    _, r_merge, _, _, info = ten.step("MERGE heat-copy-1 heat-copy-2")
    assert r_merge >= 0 and info["utility"]["U"] == 0.0 and info["utility"]["regressions"] == 0
    # Neutral (U = 0) operations are measured but not applied: the gate wants U - sd/sqrt(n) > 0.
    assert not info["accepted"] and len(ten.library) == 9


def test_merging_keeps_both_procedures_and_a_long_body_pays_the_length_term():
    env = _env("household", library=SkillLibrary([HEAT, CURATED.get("cool-then-place")]))
    _, _, _, _, info = env.step("MERGE heat-then-place cool-then-place")
    assert info["action_valid"] and info["utility"]["U"] == 0.0  # both procedures survive the merge
    padding = "Background prose the actor ignores. " * 330
    _, reward, _, _, info = _env().step("ADD\n" + _md("long-heat", padding + "\n" + HEAT.body))
    tokens = info["reward_components"]["tokens"]
    assert tokens > 1800 and info["reward_components"]["token_term"] == pytest.approx(0.1 * (tokens - 800) / 1000)
    assert reward == pytest.approx(info["utility"]["U"] - info["reward_components"]["token_term"])


def test_keep_and_done_measure_nothing_and_the_episode_ends_after_four_operations():
    env = _env()
    for k in range(3):
        _, reward, terminated, _, info = env.step("KEEP")
        assert (reward, terminated, info["utility"]) == (0.0, False, None)
    _, _, terminated, _, _ = env.step("REMOVE nothing-here")
    assert terminated
    _, _, terminated, _, _ = _env().step("DONE")
    assert terminated


def test_same_seed_and_operation_give_the_same_utility_and_info():
    def run() -> tuple[str, list]:
        env = SkillLibraryEnv(family="household-heat")
        observation, _ = env.reset(seed=7)
        steps = [env.step("ADD\n" + HEAT.to_skill_md()), env.step("REMOVE heat-then-place")]
        return observation, [(o, r, t, info) for o, r, t, _, info in steps]

    assert run() == run()
    env = SkillLibraryEnv(family="household-heat")
    env.reset(seed=7)
    shown, probes = env.shown, env.probes
    assert not set(shown) & set(probes) and len(probes) == 16
    env.reset(seed=8)
    assert (env.shown, env.probes) != (shown, probes)


@pytest.mark.parametrize("family", ["household-heat", "webshop", "search"])
def test_the_scripted_reflector_distils_accepted_skills(family: str):
    env = SkillLibraryEnv(family=family)
    observation, _ = env.reset(seed=0)
    action = env.expert_action()
    assert action == ScriptedReflector().act(observation)  # the same reflector, reading the brief's text
    assert action.startswith("ADD\n") and "{" in action  # generalised: placeholders, not the instance's names
    _, reward, _, _, info = env.step(action)
    assert info["accepted"] and info["utility"]["U"] > 0 and reward > 0, info["utility"]
    assert env.expert_action() == "DONE"


def test_distilled_household_steps_hold_no_instance_names():
    env = _env()
    skill = distilled_skill([ep for who, ep in env.trajectories if who == "expert"])
    assert skill is not None and "Task: " in skill.body
    assert not re.search(r"[a-z] \d", skill.body), skill.body  # no "apple 1", "microwave 1": kinds and placeholders


def _code_skill_action(answer: int, tests: str = "import skill\n\ndef test_answer():\n    assert skill.answer() == 42\n") -> str:
    md = Skill("answer-tool", "Prints the answer.", "1. python3 /home/agent/skills/answer-tool/scripts/skill.py\n",
               metadata={"kind": "code"}).to_skill_md()
    return (f"ADD\n{md}=== scripts/skill.py ===\ndef answer():\n    return {answer}\n\nif __name__ == '__main__':\n"
            f"    print(answer())\n=== tests/test_skill.py ===\n{tests}")


def test_a_code_skill_must_pass_its_own_tests_in_the_sandbox_before_it_is_measured():
    env = SkillLibraryEnv(family="terminal", n_shown=1, n_probes=2)
    env.reset(seed=0)
    try:
        _, reward, _, _, info = env.step(_code_skill_action(41))
        assert reward == -1.0 and info["code_skill"]["passed"] is False and info["utility"] is None
        assert info["code_skill"]["tests"] and not any(info["code_skill"]["tests"].values())
        assert info["library"] == [] and info["infra_error"] is None
        _, reward, _, _, info = env.step(_code_skill_action(42))
        assert info["code_skill"]["passed"] is True and info["utility"] is not None and info["utility"]["n"] == 2
    finally:
        env.close()


def test_a_code_skill_test_that_plants_a_fifo_for_the_runner_is_the_skills_failure():
    tests = ("import os\n\ndef test_swap():\n    os.remove('/tmp/runner/module.py')\n"
             "    os.mkfifo('/tmp/runner/module.py')\n    os._exit(0)\n\ndef test_after():\n    pass\n")
    env = SkillLibraryEnv(family="terminal", n_shown=1, n_probes=2)
    env.reset(seed=0)
    try:
        _, reward, terminated, truncated, info = env.step(_code_skill_action(42, tests))
        assert (reward, truncated, info["infra_error"]) == (-1.0, False, None)
        assert info["code_skill"]["passed"] is False and "not a regular file" in info["code_skill"]["detail"]
        assert info["library"] == [] and info["utility"] is None
    finally:
        env.close()


def test_parse_operation_reads_fences_and_refuses_trailing_text():
    op = parse_operation("ADD\n```markdown\n" + HEAT.to_skill_md() + "```\n")
    assert op.verb == "ADD" and op.skill_md == HEAT.to_skill_md()
    with pytest.raises(OperationError, match="nothing after"):
        parse_operation("REMOVE a b")
    with pytest.raises(OperationError, match="alone"):
        parse_operation("DONE\nmore")


def test_check_env_passes():
    report = check_env("agentgym/SkillLibrary-v0")
    assert report.passed, str(report)


def test_hostile_file_sections_are_refused():
    env = _env()
    for path in ("../evil.py", "/etc/passwd", "SKILL.md", "a/../../b"):
        _, reward, _, _, info = env.step("ADD\n" + HEAT.to_skill_md() + f"=== {path} ===\nprint('x')\n")
        assert reward == -1.0 and info["action_valid"] is False and info["library"] == [], path
        env.reset(seed=0)


def test_our_sandbox_failing_is_infra_not_the_reflectors_outcome(monkeypatch):
    import sandboxes
    from meta_envs.skills import code_skills

    def refuse(*args, **kwargs):
        raise sandboxes.SandboxError("bwrap: no permission to create a namespace")

    env = SkillLibraryEnv(family="terminal", n_shown=1, n_probes=2)
    env.reset(seed=0)
    monkeypatch.setattr(code_skills.sandboxes, "make", refuse)
    try:
        _, reward, terminated, truncated, info = env.step(_code_skill_action(42))
        assert reward == 0.0 and truncated and not terminated and "could not start" in info["infra_error"]
    finally:
        monkeypatch.undo()
        env.close()


def test_bm25_retrieval_shows_the_actor_the_skill_that_fits():
    env = SkillLibraryEnv(family="household-heat", retrieval="bm25",
                          library=CURATED.without("heat-then-place"))
    env.reset(seed=0)
    _, reward, _, _, info = env.step("ADD\n" + HEAT.to_skill_md())
    assert info["accepted"] and info["utility"]["U"] >= 0.2 and reward > 0
    with pytest.raises(ValueError, match="retrieval"):
        SkillLibraryEnv(retrieval="everything")
