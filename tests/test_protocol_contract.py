"""The protocol contract for every registered env × protocol (issue 32 §2).

* One voice per prompt: outside ``plain`` no env sentence says how to *reply* (the env's ``reply_format``
  phrases are replaced by their neutral wording); the protocol's format instructions appear once, in the
  system prompt, and its one-line reminder ends the first observation. Under ``plain`` the env's text is
  shown exactly as the env writes it.
* One rule for invalid replies: a stream of garbage never takes the return outside the env's
  ``reward_bounds``, and where an invalid action ends the env's episode (the games), an unparseable reply
  ends it too.
"""

from __future__ import annotations

import re

import gymnasium
import pytest

import agentgym_envs
from agentgym_envs.protocols import get_protocol, protocol_names
from agentgym_envs.protocols.prompt import reply_format_table
from agentgym_envs.registration import env_ids

#: A sentence in the voice of a reply-format rule ("Reply with …", "Answer with …", "Call one tool …").
FORMAT_VOICE = re.compile(r"\b(?:repl(?:y|ies)|respond|answer with|call (?:exactly )?one tool)\b", re.IGNORECASE)
NON_PLAIN = [p for p in protocol_names() if not get_protocol(p).shows_env_format]


def _reset(env_id: str, protocol: str | None):
    env = agentgym_envs.make(env_id, protocol=protocol) if protocol else gymnasium.make(env_id)
    try:
        observation, info = env.reset(seed=0)
        return observation, info, env.unwrapped
    finally:
        env.close()


@pytest.mark.parametrize("env_id", env_ids())
def test_plain_shows_the_env_text_unchanged(env_id):
    raw_obs, raw_info, base = _reset(env_id, None)
    obs, info, _ = _reset(env_id, "plain")
    plain = get_protocol("plain")
    assert obs == raw_obs
    assert info["system_prompt"] == f"{raw_info['system_prompt']}\n\n{plain.instructions(base)}"
    prompt = f"{raw_info['system_prompt']}\n{raw_info.get('instruction', '')}\n{raw_obs}"
    table = reply_format_table(base)
    if FORMAT_VOICE.search(raw_info["system_prompt"] + raw_obs):
        assert any(phrase in prompt for phrase in table), f"{env_id}: its reply-format sentence is not declared"


@pytest.mark.parametrize("protocol", NON_PLAIN)
@pytest.mark.parametrize("env_id", env_ids())
def test_one_reply_format_voice(env_id, protocol):
    obs, info, base = _reset(env_id, protocol)
    proto = get_protocol(protocol)
    fmt, reminder = proto.instructions(base), proto.reminder(base)
    system = info["system_prompt"]
    assert system.count(fmt) == 1 and system.endswith(fmt)
    assert reminder and obs.endswith(reminder) and obs.count(reminder) == 1
    env_text = system[: -len(fmt)] + "\n" + info.get("instruction", "") + "\n" + obs[: -len(reminder)]
    for phrase in reply_format_table(base):
        assert phrase not in env_text, f"{env_id} under {protocol}: the env's format phrase {phrase!r} reached the prompt"
    voice = FORMAT_VOICE.search(env_text)
    assert voice is None, f"{env_id} under {protocol}: a second format voice: …{env_text[max(0, voice.start() - 60):voice.end() + 60]}…"
    for other in protocol_names():
        if other not in (protocol, "plain"):
            assert get_protocol(other).instructions(base) not in system


GARBAGE = ("zq%% garbage ~~", "", "Thought: hmm", "<action>", '{"name": ', "\x00" * 5, "Action:")


@pytest.mark.parametrize("protocol", protocol_names())
@pytest.mark.parametrize("env_id", env_ids())
def test_garbage_keeps_the_return_inside_the_reward_bounds(env_id, protocol):
    env = agentgym_envs.make(env_id, protocol=protocol, max_turns=12)
    try:
        env.reset(seed=0)
        low, high = env.unwrapped.reward_bounds
        episode_return, turns, ended = 0.0, 0, False
        while not ended:
            _, reward, terminated, truncated, info = env.step(GARBAGE[turns % len(GARBAGE)])
            episode_return += reward
            turns += 1
            ended = terminated or truncated
        assert low - 1e-9 <= episode_return <= high + 1e-9, f"return {episode_return} after {turns} turns, bounds {(low, high)}"
        if getattr(env.unwrapped, "invalid_action_ends_episode", False):
            assert turns == 1 and episode_return == env.unwrapped.invalid_action_penalty and terminated
    finally:
        env.close()


def test_a_penalty_never_takes_the_return_below_the_bound():
    """Household's bounds are (0, 1) and its penalty 0; a game's penalty is -1 once, not -1 per turn."""
    env = agentgym_envs.make("agentgym/TicTacToe-VsRandom-v0", protocol="react")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("I mark the centre.")
    assert (reward, terminated, info["action_valid"]) == (-1.0, True, False)
    assert "ends this episode" in obs
    assert env.step("Action: 5")[0].startswith("The episode is over")


def test_a_suite_or_caller_sets_the_system_prompt():
    from agentgym_envs.chat import EMPTY_SYSTEM_TURN, ChatHistory

    react = get_protocol("react")
    env = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="react", system_prompt="Be brief.")
    obs, info = env.reset(seed=0)
    assert info["system_prompt"] == f"Be brief.\n\n{react.instructions(env.unwrapped)}"
    for given, roles in (("", ["user"]), (EMPTY_SYSTEM_TURN, ["system", "user"])):
        env = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="react", system_prompt=given)
        obs, info = env.reset(seed=0)
        history = ChatHistory()
        history.start(obs, info)
        assert [m["role"] for m in history.messages()] == roles and obs.endswith(react.reminder(env.unwrapped))
        assert all(not m["content"].strip() for m in history.messages() if m["role"] == "system")
    with pytest.raises(ValueError, match="expected protocol="):
        agentgym_envs.make("agentgym/Maze-Easy-v0", system_prompt="x")


def test_a_suite_entry_sets_the_system_prompt(tmp_path):
    from leaderboards.episode import make_env
    from leaderboards.suite import SuiteError, load_suite

    path = tmp_path / "s.yaml"
    path.write_text("name: s\nversion: 1\ndefaults: {system_prompt: ' '}\n"
                    "entries:\n- {env: agentgym/Maze-Easy-v0, protocol: tags}\n"
                    "- {env: agentgym/Maze-v0, protocol: tags, system_prompt: Find the exit.}\n")
    first, second = load_suite(path).entries
    assert (first.system_prompt, second.system_prompt) == (" ", "Find the exit.")
    assert make_env(first).reset(seed=0)[1]["system_prompt"] == " "
    assert make_env(second).reset(seed=0)[1]["system_prompt"].startswith("Find the exit.\n\n")
    path.write_text("name: s\nversion: 1\nentries:\n- {env: agentgym/Maze-v0, system_prompt: 3}\n")
    with pytest.raises(SuiteError, match="system_prompt must be a string"):
        load_suite(path)


#: A reply every protocol parses but the env's own contract rejects (longer than ``max_action_chars``).
OVER_LONG = {"plain": "x" * 20_000, "react": "Action: " + "x" * 20_000, "tags": "<action>" + "x" * 20_000 + "</action>",
             "tool_calls": None}


@pytest.mark.parametrize("protocol", [None, *protocol_names()])
@pytest.mark.parametrize("env_id", ["agentgym/TicTacToe-VsScripted-v0", "agentgym/GuessNumber-v0"])
def test_an_invalid_action_the_env_rejects_follows_the_same_rule(env_id, protocol):
    """What reaches the env and is rejected there (here an over-long action; raw, it can also be empty) obeys
    ``invalid_action_ends_episode`` as an unparseable reply does: the game ends at once with its penalty, and a
    step after the end pays nothing; an env that does not set it goes on."""
    env = agentgym_envs.make(env_id, protocol=protocol) if protocol else gymnasium.make(env_id)
    base = env.unwrapped
    reply = OVER_LONG.get(protocol, "x" * 20_000) if protocol else "x" * 20_000
    if protocol == "tool_calls":
        tool = get_protocol("tool_calls").tools(base)[0]["function"]["name"]
        reply = '{"name": "%s", "arguments": {"action": "%s"}}' % (tool, "x" * 20_000)
    try:
        env.reset(seed=0)
        _, reward, terminated, truncated, info = env.step(reply)
        assert info["action_valid"] is False and reward == base.invalid_action_penalty, (reward, info["parse_error"])
        assert terminated is base.invalid_action_ends_episode and not truncated
        if terminated:
            assert env.step("5")[1:3] == (0.0, True)
    finally:
        env.close()


def test_the_contract_keeps_invalid_penalties_inside_the_reward_bounds():
    """Raw (no protocol wrapper): an env whose invalid actions cost -1 and do not end the episode stops paying at
    its lower bound, as the wrapper does for unparseable replies."""
    from agentgym_envs.core import Step, TextEnv

    class Costly(TextEnv):
        reward_bounds = (-2.0, 1.0)
        invalid_action_penalty = -1.0

        def _reset(self, options):
            return "Say hi.", {"instruction": "Say hi."}

        def _step(self, action):
            return Step("Hi.", reward=1.0, terminated=True, won=True)

    env = Costly()
    env.reset(seed=0)
    steps = [env.step("") for _ in range(4)]
    assert [s[1] for s in steps] == [-1.0, -1.0, 0.0, 0.0]
    assert [s[4].get("reward_uncut") for s in steps] == [None, None, -1.0, -1.0]  # what was cut, as the wrapper says
    assert env.step("hi")[1:3] == (1.0, True)
    env.reset(seed=1)
    assert env.step("")[1] == -1.0  # a new episode starts from a zero return
