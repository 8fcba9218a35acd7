"""agentgym/TaskDesign-v0: gates, repairs, rewards, the held-out copy, determinism and the scripted designer."""

from __future__ import annotations

import json

import pytest

import agentgym_envs
from meta_envs.design.families import DEFAULT_FAMILIES, family, held_out_hashes, instance_hash
from meta_envs.design.families.schema import SchemaDefinitionError, validate
from meta_envs.design.task_design import TaskDesignEnv, TaskDesignError
from agentgym_envs.household.tasks import task_spec


def _spec_config(split: str, index: int, phrasing: int | None = None) -> dict:
    spec = task_spec(split, index)
    return {"task_type": spec.task_type, "floorplan": spec.floorplan, "object": spec.obj, "target": spec.target,
            "seed": spec.seed, "phrasing": spec.phrasing if phrasing is None else phrasing}


def _failed(info: dict) -> dict:
    return next(g for g in info["gates"] if not g["passed"])


@pytest.mark.parametrize("split,index", [("valid_seen", 3), ("valid_seen", 139), ("valid_unseen", 0)])
def test_a_config_copying_a_held_out_household_instance_is_rejected(split, index):
    env = TaskDesignEnv(family="household")
    env.reset(seed=0)
    config = _spec_config(split, index, phrasing=1 - task_spec(split, index).phrasing)  # reworded: still a copy
    _, reward, terminated, _, info = env.step(json.dumps(config))
    assert info["outcome"] == "gate" and _failed(info)["name"] == "held_out" and not terminated and reward == 0.0
    assert f"household/{split}/{index}" in _failed(info)["detail"] or "reserved" in _failed(info)["detail"]
    for _ in range(2):  # the repairs spent on the same copy: the last one pays the gate's -0.5
        _, reward, terminated, _, info = env.step(json.dumps(config, indent=1))
    assert terminated and reward == -0.5 and info["won"] is False


def test_the_held_out_set_holds_every_valid_instance_and_a_train_task_is_not_in_it():
    hashes = held_out_hashes("household")
    assert len(hashes) == 140 + 134
    fam = family("household")
    train = _spec_config("train", 5)
    assert instance_hash("household", fam.instance_key(train)) not in hashes
    env = TaskDesignEnv(family="household")
    env.reset(seed=0)
    _, _, _, _, info = env.step(json.dumps(train))
    assert [g["name"] for g in info["gates"]] == ["parse", "schema", "held_out", "expert", "check_env"]
    assert info["outcome"] == "ok" and info["won"] is True


def test_a_schema_failure_pays_minus_one_after_the_repairs():
    env = TaskDesignEnv(family="maze")
    obs, info = env.reset(seed=0)
    assert info["repairs_left"] == 2 and "JSON schema" in obs
    rewards, details = [], []
    for bad in ('{"size": 99, "seed": 1}', '{"size": 4}', '{"size": 4, "seed": 1, "extra": true}'):
        obs, reward, terminated, _, info = env.step(bad)
        rewards.append(reward)
        details.append(_failed(info)["detail"])
        assert info["outcome"] == "schema" and _failed(info)["name"] == "schema"
    assert rewards == [0.0, 0.0, -1.0] and terminated and info["repairs_left"] == 0
    assert "expected an integer <= 10, got 99" in details[0] and "expected the key 'seed'" in details[1]
    assert "unexpected key 'extra'" in details[2] and "No repairs left" in obs


def test_unparseable_replies_pay_minus_one_and_a_repair_after_the_report_is_accepted():
    env = TaskDesignEnv(family="countdown")
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("I think numbers 1 2 and target 3")
    assert (reward, terminated, info["outcome"]) == (0.0, False, "unparseable") and "Gate report" in obs
    obs, reward, terminated, _, info = env.step('{"numbers": [2, 4, 7, 50], "target": 999}')  # unreachable
    assert info["outcome"] == "gate" and _failed(info)["name"] == "expert" and not terminated
    obs, reward, terminated, _, info = env.step('```json\n{"numbers": [2, 4, 7, 50], "target": 65}\n```')
    assert terminated and info["won"] and info["outcome"] == "ok" and info["attempt"] == 3
    assert reward == info["reward_components"]["reward"] and -1.0 <= reward <= 1.0
    three = TaskDesignEnv(family="countdown")
    three.reset(seed=0)
    for _ in range(3):
        _, reward, terminated, _, info = three.step("[1, 2]")
    assert (reward, terminated) == (-1.0, True)


def test_a_sudoku_with_several_solutions_fails_the_schema_gate():
    env = TaskDesignEnv(family="sudoku")
    env.reset(seed=0)
    _, _, _, _, info = env.step(json.dumps({"size": 4, "grid": "1200340000000000"}))
    assert _failed(info)["name"] == "schema" and "exactly one solution" in _failed(info)["detail"]
    _, _, _, _, info = env.step(json.dumps({"size": 4, "grid": "1100000000000000"}))
    assert "clash" in _failed(info)["detail"]


def test_same_seed_and_action_give_the_same_reward_and_info():
    results = []
    for _ in range(2):
        env = TaskDesignEnv(family="webshop")
        obs, info = env.reset(seed=4)
        action = env.expert_action()
        results.append((obs, info, action, env.step(action)))
    assert results[0] == results[1]
    assert results[0][3][4]["outcome"] == "ok"


@pytest.mark.parametrize("name", DEFAULT_FAMILIES)
def test_the_scripted_designer_passes_every_gate(name):
    env = agentgym_envs.make("agentgym/TaskDesign-v0", family=name)
    env.reset(seed=1)
    _, reward, terminated, _, info = env.step(env.unwrapped.expert_action())
    assert terminated and info["outcome"] == "ok", info["gates"]
    components = info["reward_components"]
    assert components["n"] == 8 and components["p_expert_eps"] >= components["p_random"]
    assert reward == components["reward"] and len(info["instance_hash"]) == 64


def test_a_reading_solver_earns_hint_regret_and_a_losing_one_earns_nothing():
    def reader(observation: str, legal: list[str]) -> str:  # plays the hinted first action, else gives up
        marker = "Hint: a good first action is: "
        return observation.split(marker, 1)[1].strip() if marker in observation else "0"

    config = json.dumps({"numbers": [2, 4, 7, 50], "target": 65})
    env = TaskDesignEnv(family="countdown", solver=reader)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(config)
    c = info["reward_components"]
    assert (c["p_hat"], c["p_hint"], c["R_hint"], c["B"]) == (0.0, 1.0, 1.0, 0.0)
    assert reward == pytest.approx(c["S"] * 0.4)
    loser = TaskDesignEnv(family="countdown", solver=lambda observation, legal: "1 + 1")
    loser.reset(seed=0)
    assert loser.step(config)[1] == 0.0


def test_an_archived_instance_is_a_duplicate_however_it_is_written(tmp_path):
    env = TaskDesignEnv(family="countdown", archive=tmp_path)
    env.reset(seed=0)
    first = env.step('{"numbers": [2, 4, 7, 50], "target": 65}')
    assert first[4]["reward_components"]["dup"] == 0.0
    env.reset(seed=0)
    again = env.step('{"target": 65, "numbers": [50, 7, 4, 2]}')  # the same round, reordered
    assert again[4]["reward_components"]["dup"] == 1.0 and again[1] == 0.0
    assert again[4]["instance_hash"] == first[4]["instance_hash"]
    env.reset(seed=0)
    env.step('{"numbers": [1, 1], "target": 999}')  # unreachable: rejected by the expert gate
    reopened = TaskDesignEnv(families=("countdown", "maze"), archive=tmp_path)
    obs, _ = reopened.reset(seed=0, options={"family": "countdown"})
    p_hat = first[4]["reward_components"]["p_hat"]
    assert len(reopened.entries) == 3 and 'Accepted: {"numbers": [2, 4, 7, 50], "target": 65}' in obs
    assert 'Rejected: {"numbers": [1, 1], "target": 999} (expert: expected the countdown expert' in obs
    assert f"countdown {p_hat:.2f} over 2 tasks; maze no tasks yet" in obs


def test_without_an_archive_episodes_do_not_see_each_other():
    env = TaskDesignEnv(family="maze")
    first = env.reset(seed=3)
    env.step(env.expert_action())
    assert env.reset(seed=3) == first and env.entries == []


def test_a_torn_archive_line_is_skipped(tmp_path):
    (tmp_path / "task_design.jsonl").write_text('{"family": "maze", "config": {}, "instance_hash": "x", '
                                                '"accepted": true, "p_hat": 0.5, "reward": 0.1}\n{"family": "ma')
    assert len(TaskDesignEnv(family="maze", archive=tmp_path).entries) == 1


def test_bad_kwargs_say_what_was_expected():
    with pytest.raises(TaskDesignError, match="expected families among"):
        TaskDesignEnv(family="chess")
    with pytest.raises(TaskDesignError, match="expected k >= 8"):
        TaskDesignEnv(k=3)


def test_the_schema_validator_reports_every_problem_and_refuses_unknown_keywords():
    schema = family("webshop").schema
    problems = validate({"query": "spaceship", "attributes": [], "options": {"size": 3}, "x": 1}, schema)
    assert any("expected one of" in p for p in problems) and any("at least 1 items" in p for p in problems)
    assert any("$.options.size: expected a string" in p for p in problems)
    assert any("price_upper" in p for p in problems) and any("unexpected key 'x'" in p for p in problems)
    with pytest.raises(SchemaDefinitionError):
        validate(1, {"oneOf": []})


def test_a_maze_written_with_its_own_start_and_exit_is_the_same_instance():
    fam = family("maze")
    plain = {"size": 6, "seed": 10_003}
    env = fam.build(plain)
    env.reset(seed=0)
    spelled = {**plain, "start": list(env.position), "goal": list(env.goal)}
    assert instance_hash("maze", fam.instance_key(spelled)) in held_out_hashes("maze")


def test_a_terminal_template_task_is_accepted_in_bubblewrap():
    env = TaskDesignEnv(family="terminal")
    env.reset(seed=0)
    config = {"template": "count_word", "word": "error", "lines": ["error one", "fine", "an error again", "ok"]}
    _, reward, terminated, _, info = env.step(json.dumps(config))
    assert terminated and info["outcome"] == "ok", info["gates"]
    assert info["reward_components"]["p_expert_eps"] > info["reward_components"]["p_random"]
    info = _step_once("terminal", {**config, "template": "grep_lines", "word": "absent"})
    assert _failed(info)["name"] == "schema" and "contain 'absent'" in _failed(info)["detail"]


def _step_once(name: str, config: dict) -> dict:
    env = TaskDesignEnv(family=name)
    env.reset(seed=0)
    return env.step(json.dumps(config))[4]


def test_bubblewrap_missing_is_infra_error_with_reward_zero(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    env = TaskDesignEnv(family="terminal")
    env.reset(seed=0)
    config = {"template": "sort_unique", "lines": ["b", "a", "b"]}
    _, reward, terminated, truncated, info = env.step(json.dumps(config))
    assert (reward, terminated, truncated, info["outcome"]) == (0.0, False, True, "infra")
    assert info["infra_error"] and info["reward_components"]["reward"] == 0.0 and info["won"] is False


def _search_copy() -> dict:
    """The config that restates a held-out (test-split) bridge question of the search world."""
    from agentgym_envs.search.dataset import QUESTIONS_PER_HOP, load_dataset
    from agentgym_envs.search.questions import generate_questions

    rendered = load_dataset(world_seed=0, world_size="small").rendered
    question = next(q for q in generate_questions(rendered, 3, QUESTIONS_PER_HOP["small"])[:20] if q.shape == "bridge")
    entities = rendered.world.entities
    return {"anchor": entities[question.anchors[0]].name, "relations": [h.fact for h in question.plan[:-1]],
            "final": question.plan[-1].fact}


def _webshop_copy() -> dict:
    from meta_envs.design.families.webshop import _catalogue
    from agentgym_envs.web.tasks import load_goals

    goals = load_goals(_catalogue())
    goal = goals.goals[goals.split("eval")[7]]
    return {"query": goal.query, "attributes": list(reversed(goal.attributes)), "options": dict(goal.options),
            "price_upper": goal.price_upper}


def _game_copy(name: str) -> dict:
    from agentgym_envs.games.countdown.env import CountdownEnv
    from agentgym_envs.games.sudoku.env import SudokuEnv

    if name == "countdown":
        env = CountdownEnv(difficulty="hard")
        env.reset(seed=10_011)
        return {"numbers": list(reversed(env.numbers)), "target": env.target}
    env = SudokuEnv(size=4, difficulty="easy")
    env.reset(seed=10_019)
    return {"size": 4, "grid": "".join(str(v) if v else "." for v in env.givens)}


@pytest.mark.parametrize("name,make", [("search", _search_copy), ("webshop", _webshop_copy),
                                       ("countdown", lambda: _game_copy("countdown")),
                                       ("sudoku", lambda: _game_copy("sudoku"))])
def test_a_restated_held_out_instance_of_every_family_is_a_copy(name, make):
    info = _step_once(name, make())
    assert [g["name"] for g in info["gates"]][-1] == "held_out" and info["outcome"] == "gate", info["gates"]
    assert "copy of the held-out instance" in _failed(info)["detail"]


def test_the_self_play_loop_runs_on_task_design_and_cuts_an_in_group_copy(tmp_path):
    from meta_envs.design.selfplay import SelfPlayConfig, run_selfplay

    class ScriptedDesigner:
        def design(self, messages, env, seed):
            return env.unwrapped.expert_action()

    config = SelfPlayConfig(env_id="agentgym/TaskDesign-v0", archive=str(tmp_path), rounds=1, group_size=2,
                            env_kwargs={"family": "countdown"})
    (report,) = run_selfplay(config, ScriptedDesigner())
    first, copy = report.samples
    assert first.outcome == copy.outcome == "ok" and first.sha256 == copy.sha256
    assert (first.components["dup"], copy.components["dup"], copy.reward) == (0.0, 1.0, 0.0)
    assert len((tmp_path / "task_design.jsonl").read_text().splitlines()) == 2


def test_named_solvers_of_env_design_work_here_too():
    env = TaskDesignEnv(family="maze", solver="random")
    env.reset(seed=2)
    _, _, _, _, info = env.step(json.dumps({"size": 8, "seed": 5}))
    random_p = info["reward_components"]["p_hat"]
    expert = TaskDesignEnv(family="maze", solver="expert")
    expert.reset(seed=2)
    assert expert.step(json.dumps({"size": 8, "seed": 5}))[4]["reward_components"]["p_hat"] == 1.0 > random_p


@pytest.mark.parametrize("reply,outcome", [
    ("[" * 5000 + "]" * 5000, "unparseable"),               # nesting past the decoder's recursion limit
    ('{"size": 1' + "0" * 5000 + ', "seed": 1}', "unparseable"),  # an integer past Python's digit limit
    ('{"size": 5, "seed": NaN}', "schema"), ('{"size": 5, "seed": 1e400}', "schema"),
    ('{"size": true, "seed": 1}', "schema"), ('{"size": 5, "seed": 1, "start": [0, 0], "goal": [0, 0]}', "schema"),
])
def test_hostile_configs_are_the_designers_outcome_never_an_exception(reply, outcome):
    env = TaskDesignEnv(family="maze")
    env.reset(seed=0)
    _, reward, _, _, info = env.step(reply)
    assert info["outcome"] == outcome and info["infra_error"] is None and reward == 0.0


def test_a_crash_in_a_familys_builder_is_a_failed_gate_not_infra(monkeypatch):
    import meta_envs.design.families.maze as maze

    def broken(config):
        raise TypeError("unexpected")

    monkeypatch.setattr(maze, "FAMILY", maze.FAMILY.__class__(**{**maze.FAMILY.__dict__, "build": broken}))
    from meta_envs.design import families

    families.family.cache_clear()
    try:
        info = _step_once("maze", {"size": 4, "seed": 1})
    finally:
        families.family.cache_clear()
    assert info["outcome"] == "schema" and info["infra_error"] is None and "TypeError" in _failed(info)["detail"]
