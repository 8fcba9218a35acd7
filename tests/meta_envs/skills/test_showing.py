"""Skills shown in any env (meta_envs/skills/showing.py): what each retrieval shows, the read rule (reads
never step the base env, the first max_reads are free), the info keys, every protocol in both wrapping
orders, hostile read requests, determinism, and the whole check_env battery on wrapped envs."""

from __future__ import annotations

import gymnasium
import pytest

import agentgym_envs
from agentgym_envs.checker import check_env
from agentgym_envs.fuzz import hostile_actions
from agentgym_envs.protocols import ActionProtocolWrapper, get_protocol
from meta_envs.skills.library import SkillLibrary
from meta_envs.skills.showing import READ_ACTION, parse_read, with_skills
from meta_envs.skills.skill import Skill

HEAT_ID, GUESS_ID = "agentgym/Household-Heat-v0", "agentgym/GuessNumber-v0"
PROTOCOLS = ("plain", "react", "tags", "tool_calls")


def library() -> SkillLibrary:
    return SkillLibrary([
        Skill("heat-then-place", "Heat an object with the microwave and put it in a receptacle.",
              body="1. take {object} from {location}\n2. heat {object} with microwave 1\n",
              resources={"references/tips.md": "The microwave heats one object at a time.\n"}),
        Skill("cool-then-place", "Cool an object in the fridge, then put it somewhere.", body="1. cool {object} with fridge 1\n"),
        Skill("binary-guess", "Guess a secret number by halving the range each time.", body="1. guess the middle number\n"),
    ])


def expert_run(env: gymnasium.Env, seed: int, reads: tuple[str, ...] = ()) -> list[tuple]:
    """Reset, send ``reads`` first, then the expert's actions to the end; every (obs, reward, ends) of base steps."""
    env.reset(seed=seed)
    for read in reads:
        env.step(read)
    out, done = [], False
    while not done:
        obs, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        out.append((obs, reward, terminated, truncated, info["won"]))
        done = terminated or truncated
    return out


# ----------------------------------------------------------------------------- what each retrieval shows
def test_all_shows_every_body_in_the_system_prompt_and_leaves_the_task_alone():
    plain_obs, plain_info = gymnasium.make(HEAT_ID).reset(seed=3)
    env = with_skills(gymnasium.make(HEAT_ID), library(), retrieval="all")
    obs, info = env.reset(seed=3)
    assert obs == plain_obs and info["instruction"] == plain_info["instruction"]
    prompt = info["system_prompt"]
    assert prompt.startswith(plain_info["system_prompt"] + "\n\n## Skills")
    for skill in library():
        assert f"### {skill.name}\n{skill.description}\n\n{skill.body.strip()}" in prompt
    assert info["skills_shown"] == ["binary-guess", "cool-then-place", "heat-then-place"] and info["skills_read"] == []
    _, _, _, _, info = env.step(env.unwrapped.expert_action())
    assert info["skills_shown"] == ["binary-guess", "cool-then-place", "heat-then-place"] and "system_prompt" not in info


def test_bm25_shows_the_skills_matching_the_instruction():
    env = with_skills(gymnasium.make(HEAT_ID), library(), retrieval="bm25", k=1)
    obs, info = env.reset(seed=0)
    assert info["instruction"].startswith("heat some")
    assert info["skills_shown"] == ["heat-then-place"]
    assert "heat {object} with microwave 1" in info["system_prompt"] and "cool {object}" not in info["system_prompt"]
    _, info2 = with_skills(gymnasium.make(HEAT_ID), library(), retrieval="bm25", k=2).reset(seed=0)
    assert info2["skills_shown"][0] == "heat-then-place" and len(info2["skills_shown"]) == 2


def test_bm25_shows_nothing_when_no_skill_shares_a_word_and_an_empty_library_shows_nothing():
    unrelated = SkillLibrary([Skill("juggling", "Juggle three balls.", body="1. throw\n")])
    plain = gymnasium.make(HEAT_ID).reset(seed=0)[1]["system_prompt"]
    for lib, retrieval in ((unrelated, "bm25"), (SkillLibrary(), "all"), (SkillLibrary(), "index"), (SkillLibrary(), "bm25")):
        _, info = with_skills(gymnasium.make(HEAT_ID), lib, retrieval=retrieval).reset(seed=0)
        assert info["skills_shown"] == [] and info["system_prompt"] == plain


def test_index_shows_names_and_descriptions_but_not_bodies():
    env = with_skills(gymnasium.make(HEAT_ID), library(), retrieval="index")
    _, info = env.reset(seed=0)
    prompt = info["system_prompt"]
    assert "- heat-then-place: Heat an object with the microwave and put it in a receptacle." in prompt
    assert f"`{READ_ACTION} <name>`" in prompt and "heat {object} with microwave 1" not in prompt
    assert "tools" not in info  # a text env gets an action, not a tool


# ----------------------------------------------------------------------------- the read rule
def test_a_read_returns_the_body_and_never_steps_the_base_env():
    reads = ("read_skill heat-then-place", "read_skill heat-then-place references/tips.md", "read_skill cool-then-place")
    env = with_skills(gymnasium.make(HEAT_ID, max_episode_steps=50), library(), retrieval="index")
    with_reads = expert_run(env, 0, reads)
    without = expert_run(with_skills(gymnasium.make(HEAT_ID), library(), retrieval="index"), 0)
    assert with_reads == without and with_reads[-1][-1] is True  # same episode, the expert still wins

    env.reset(seed=0)
    before = env.unwrapped.last_observation
    obs, reward, terminated, truncated, info = env.step("read_skill heat-then-place")
    assert obs.startswith("# Skill heat-then-place\n") and "2. heat {object} with microwave 1" in obs
    assert "references/tips.md" in obs and (reward, terminated, truncated) == (0.0, False, False)
    assert info["action_valid"] and info["parse_error"] is None and "valid_actions" in info
    assert env.unwrapped.last_observation == before  # the base env never saw the read
    obs, *_, info = env.step("read_skill heat-then-place references/tips.md")
    assert obs == "The microwave heats one object at a time.\n"
    env.step("read_skill cool-then-place")
    assert env.step("read_skill heat-then-place")[-1]["skills_read"] == ["heat-then-place", "cool-then-place"]


def test_reads_do_not_count_against_the_step_limit_until_max_reads():
    env = with_skills(gymnasium.make(HEAT_ID, max_episode_steps=3), library(), retrieval="index", max_reads=2)
    env.reset(seed=0)
    for _ in range(2):  # free
        assert env.step("read_skill heat-then-place")[0].startswith("# Skill")
    ends = []
    for _ in range(3):  # past max_reads: passed on to the env, which does not understand them, and counted
        obs, reward, terminated, truncated, info = env.step("read_skill heat-then-place")
        ends.append(truncated)
        assert "# Skill" not in obs and info["skills_read"] == ["heat-then-place"]
    assert ends == [False, False, True]
    obs, info = env.reset(seed=0)
    assert info["skills_read"] == [] and env.step("read_skill cool-then-place")[-1]["skills_read"] == ["cool-then-place"]


def test_unknown_skills_and_resources_are_invalid_but_free():
    env = with_skills(gymnasium.make(HEAT_ID, max_episode_steps=2), library(), retrieval="index")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("read_skill heat-than-place")
    assert not info["action_valid"] and obs == info["parse_error"] and (terminated, truncated) == (False, False)
    assert "No skill named 'heat-than-place'. Skills in the index: binary-guess, cool-then-place, heat-then-place" in obs
    obs, *_, info = env.step("read_skill heat-then-place ../../etc/passwd")
    assert not info["action_valid"] and "has no resource" in obs and info["skills_read"] == []


def test_reads_are_ordinary_actions_outside_index_mode():
    env = with_skills(gymnasium.make(HEAT_ID), library(), retrieval="all")
    env.reset(seed=0)
    obs, *_ = env.step("read_skill heat-then-place")
    assert obs.startswith("Nothing happens. I don't understand 'read_skill heat-then-place'")


def test_a_tool_env_gets_a_real_read_skill_tool():
    env = with_skills(gymnasium.make(GUESS_ID), library(), retrieval="index")
    _, info = env.reset(seed=0)
    names = [t["function"]["name"] for t in info["tools"]]
    assert names[-1] == READ_ACTION and len(names) == len(env.unwrapped.tools) + 1
    assert READ_ACTION not in [t["function"]["name"] for t in env.unwrapped.tools]  # the base env is untouched
    assert "call the read_skill tool" in info["system_prompt"]
    for call in ('read_skill(name="binary-guess")', 'read_skill("binary-guess")',
                 '{"name": "read_skill", "arguments": {"name": "binary-guess"}}',
                 '{"name": "read_skill", "arguments": "{\\"name\\": \\"binary-guess\\"}"}'):
        obs, reward, terminated, truncated, info = env.step(call)
        assert obs.startswith("# Skill binary-guess") and info["action_valid"], call
        assert [t["function"]["name"] for t in info["tools"]][-1] == READ_ACTION
    obs, *_, info = env.step('guess(number=50)')  # the base env's own tools still work
    assert info["action_valid"] and "Skill" not in obs


# ----------------------------------------------------------------------------- protocols, both orders
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("env_id", [HEAT_ID, GUESS_ID])
def test_every_protocol_reads_skills_in_both_wrapping_orders(protocol, env_id):
    native = "read_skill binary-guess" if env_id == HEAT_ID else '{"name": "read_skill", "arguments": {"name": "binary-guess"}}'
    outer = with_skills(agentgym_envs.make(env_id, protocol=protocol), library(), retrieval="index")
    inner = ActionProtocolWrapper(with_skills(gymnasium.make(env_id), library(), retrieval="index"), protocol)
    for env in (outer, inner):
        _, info = env.reset(seed=1)
        assert "- binary-guess: Guess a secret number" in info["system_prompt"] and info["skills_shown"]
        reply = get_protocol(protocol).render(native, env.unwrapped)
        obs, reward, terminated, truncated, info = env.step(reply)
        assert obs.startswith("# Skill binary-guess"), (protocol, type(env).__name__, obs[:120])
        assert info["action_valid"] and info["skills_read"] == ["binary-guess"] and info["native_action"] == native
        expert = get_protocol(protocol).render(env.unwrapped.expert_action(), env.unwrapped)
        obs, reward, terminated, truncated, info = env.step(expert)
        assert info["action_valid"] and "# Skill" not in obs and info["skills_read"] == ["binary-guess"]
    _, info = outer.reset(seed=1)
    if protocol == "tool_calls" and env_id == GUESS_ID:  # skills outermost: the read tool reaches the model
        assert [t["function"]["name"] for t in info["tools"]][-1] == READ_ACTION


def test_an_unparseable_reply_reaches_the_protocol_wrapper():
    env = with_skills(agentgym_envs.make(HEAT_ID, protocol="tags"), library(), retrieval="index")
    env.reset(seed=0)
    obs, *_, info = env.step("read_skill heat-then-place")  # no <action> tags: the protocol explains
    assert not info["action_valid"] and "# Skill" not in obs and info["native_action"] is None


# ----------------------------------------------------------------------------- hostile input, determinism, checks
def test_hostile_read_requests_never_raise():
    env = with_skills(gymnasium.make(GUESS_ID), library(), retrieval="index", max_reads=1000)
    env.reset(seed=0)
    hostile = [*hostile_actions(), "read_skill", "read_skill " + "x" * 100_000, "read_skill(name=[1, 2])",
               "read_skill(**{'name': 'a'})", 'read_skill(name="a"', '{"name": "read_skill", "arguments": [1]}',
               '{"name": "read_skill", "arguments": {"name": {"a": 1}}}', "read_skill \x00\x1b[2J", "read_skill ../../etc/passwd",
               '{"name": "read_skill", "arguments": "{bad json"}', "read_skill(" + "[" * 10_000 + ")"]
    for action in hostile:
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and reward <= 1 and info["infra_error"] is None
        assert info["skills_read"] == []
        if terminated or truncated:
            env.reset(seed=0)
    assert parse_read("read_skill(name=[1, 2])") == ("", "") and parse_read("read_skills x") is None


def test_same_seed_and_actions_give_the_same_everything():
    actions = ["read_skill heat-then-place", "look", "read_skill nope", "read_skill cool-then-place", "inventory"]
    outs = []
    for _ in range(2):
        env = with_skills(gymnasium.make(HEAT_ID), library(), retrieval="index")
        outs.append([env.reset(seed=5)] + [env.step(a) for a in actions])
    assert outs[0] == outs[1]


@pytest.mark.parametrize("retrieval", ["all", "index", "bm25"])
@pytest.mark.parametrize("env_id", [HEAT_ID, GUESS_ID, "agentgym/Search-1Hop-v0"])
def test_wrapped_envs_pass_check_env(env_id, retrieval):
    report = check_env(lambda: with_skills(gymnasium.make(env_id), library(), retrieval=retrieval))
    assert report.passed, str(report)


@pytest.mark.parametrize("env_id", ["agentgym/WebShop-v0", "agentgym/Wordle-Easy-v0", "agentgym/TicTacToe-VsRandom-v0"])
def test_more_families_pass_check_env_with_an_index(env_id):
    """Pages without valid actions (WebShop's search page), free-text moves (Wordle), a self-play seat."""
    report = check_env(lambda: with_skills(gymnasium.make(env_id), library(), retrieval="index"))
    assert report.passed, str(report)


def test_bad_arguments_are_refused_with_the_expected_value():
    with pytest.raises(ValueError, match=r"expected retrieval to be one of \['all', 'index', 'bm25'\], got 'top'"):
        with_skills(gymnasium.make(HEAT_ID), library(), retrieval="top")
    with pytest.raises(TypeError, match="expected a SkillLibrary, got list"):
        with_skills(gymnasium.make(HEAT_ID), [], retrieval="all")
    with pytest.raises(ValueError, match="expected k >= 1"):
        with_skills(gymnasium.make(HEAT_ID), library(), retrieval="bm25", k=0)


def test_state_key_covers_what_was_read():
    env = with_skills(gymnasium.make(HEAT_ID), library(), retrieval="index")
    _, info = env.reset(seed=0)
    before = info["state_key"]
    first = env.step("read_skill heat-then-place")[-1]["state_key"]
    again = env.step("read_skill heat-then-place")[-1]["state_key"]
    second = env.step("read_skill cool-then-place")[-1]["state_key"]
    assert before != first == again != second
    other = with_skills(gymnasium.make(HEAT_ID), library(), retrieval="index")
    other.reset(seed=0)
    other.step("read_skill cool-then-place")
    assert other.step("read_skill heat-then-place")[-1]["state_key"] == second  # order of reading does not matter
