"""Action protocols: parsing never raises, formats round-trip, bad replies are rejected, the wrapper keeps the contract."""

from __future__ import annotations

import json
import re
import time

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgym_envs
from agentgym_envs.protocols.prompt import neutral_text, reply_format_table
from agentgym_envs.examples.guess_number import GuessNumberEnv
from agentgym_envs.examples.maze import MazeEnv
from agentgym_envs.protocols import (
    ActionProtocolWrapper, ParsedAction, PlainText, ReAct, Tags, ToolCalls, act_tool_schema, get_protocol, protocol_names,
    split_think, unwrap,
)
from agentgym_envs.protocols.react import ACTION_MARKER

NAMES = ["plain", "react", "tags", "tool_calls"]
ENV_IDS = ["agentgym/Maze-Easy-v0", "agentgym/GuessNumber-v0"]
TOKENS = [
    "<think>", "</think>", "Thought:", "Action:", "action 2:", "**Action:**", "Act 1:", "<action>", "</action>", "<ACTION>",
    "<tool_call>", "</tool_call>", "```", "```json\n", "{", "}", "[", "]", '"name"', ":", ",", '"act"', '"guess"',
    '"arguments"', '"action"', '"number"', '"tool_calls"', '"function"', '"{\\"number\\": 5}"', "\n", " ", '"', "'", "`",
    "go north", "look", "guess(number=50)", "50", "null", "\x00", "\u2028", "é中",
]
model_text = st.one_of(st.text(max_size=200), st.lists(st.sampled_from(TOKENS) | st.text(max_size=6), max_size=30).map("".join))


def reseeded(env_id: str, protocol: str) -> ActionProtocolWrapper:
    env = _WRAPPED.get((env_id, protocol))
    if env is None:
        env = _WRAPPED[(env_id, protocol)] = ActionProtocolWrapper(gymnasium.make(env_id), protocol)
    env.reset(seed=0)
    return env


_WRAPPED: dict[tuple[str, str], ActionProtocolWrapper] = {}
_MAZE, _GUESS = MazeEnv(size=4), GuessNumberEnv()
_MAZE.reset(seed=0)
_GUESS.reset(seed=0)


def well_formed(parsed: ParsedAction) -> bool:
    return (parsed.action is None) != (parsed.error is None) and all(
        x is None or isinstance(x, str) for x in (parsed.action, parsed.error, parsed.thought)
    )


# ----------------------------------------------------------------------------- never raises
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150)
@given(text=model_text)
def test_any_text_parses_without_raising(name, text):
    protocol = get_protocol(name)
    for env in (None, _MAZE, _GUESS):
        assert well_formed(protocol.parse(text, env))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("env_id", ENV_IDS)
@settings(max_examples=25)
@given(replies=st.lists(model_text, min_size=1, max_size=6))
def test_any_reply_through_the_wrapper_keeps_the_contract(env_id, name, replies):
    env = reseeded(env_id, name)
    for reply in replies:
        obs, reward, terminated, truncated, info = env.step(reply)
        assert isinstance(obs, str) and obs
        assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
        assert isinstance(info["action_valid"], bool) and "state_key" in info
        assert (info["parse_error"] is None) == info["action_valid"]
        assert info["native_action"] == get_protocol(name).parse(reply, env.unwrapped).action
        if terminated or truncated:
            break


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [None, 3, 2.5, ["go north"], {"name": "act"}, b"go north", b"\xff\xfe"])
def test_non_string_replies_are_invalid_not_errors(name, bad):
    env = reseeded("agentgym/Maze-Easy-v0", name)
    obs, reward, terminated, truncated, info = env.step(bad)
    assert isinstance(obs, str) and not terminated and not truncated
    if not isinstance(bad, bytes):
        assert info["action_valid"] is False and "expected a string" in info["parse_error"]


HUGE = {
    "letters": "a" * (1 << 20), "think": "<think>" * 150_000, "actions": "Action:" * 150_000, "tags": "<action>" * 130_000,
    "braces": "{" * (1 << 20), "nested": '{"a":' * 200_000, "string": '{"name": "' + "x" * (1 << 20),
    "tool_tags": "<tool_call>" * 95_000, "fences": "```" * 350_000, "spaces": "Action" + " " * (1 << 20),
}


@pytest.mark.parametrize("name", NAMES)
def test_megabyte_replies_are_handled_quickly(name):
    env = reseeded("agentgym/Maze-Easy-v0", name)
    start = time.perf_counter()
    for text in HUGE.values():
        obs, *_, info = env.step(text)
        assert len(obs) < 2_000 and info["action_valid"] is False
    assert time.perf_counter() - start < 3.0


def test_replies_over_the_limit_are_rejected_unread():
    env = reseeded("agentgym/Maze-Easy-v0", "plain")
    obs, *_, info = env.step("look " * 300_000)
    assert info["action_valid"] is False and "characters long" in obs


# ----------------------------------------------------------------------------- round trips
def plain_action(a: str) -> bool:
    return bool(a) and a.strip() == a and unwrap(a) == a and "think>" not in a


react_action = st.text(min_size=1, max_size=60).filter(
    lambda a: plain_action(a) and "\n" not in a and "\r" not in a and not ACTION_MARKER.search(a)
)
tags_action = st.text(min_size=1, max_size=60).filter(lambda a: plain_action(a) and "</action>" not in a.lower())


@settings(max_examples=200)
@given(
    a=st.text(min_size=1, max_size=60).filter(plain_action),
    thought=st.none() | st.text(max_size=30).filter(lambda t: "think>" not in t),
)
def test_plain_round_trip(a, thought):
    assert PlainText().parse(PlainText().render(a, thought=thought)).action == a


@settings(max_examples=200)
@given(a=react_action, thought=st.text(max_size=40).filter(lambda t: not ACTION_MARKER.search(t) and "think>" not in t))
def test_react_round_trip(a, thought):
    assert ReAct().parse(ReAct().render(a, thought=thought)).action == a
    assert ReAct().parse(f"Thought: {thought}\nAction: {a}\n").action == a


@settings(max_examples=200)
@given(a=tags_action, before=st.text(max_size=30).filter(lambda t: "action>" not in t.lower() and "think>" not in t))
def test_tags_round_trip(a, before):
    assert Tags().parse(f"{before}<action>{a}</action>").action == a
    assert Tags().parse(Tags().render(a, thought=before)).action == a


@settings(max_examples=200)
@given(a=st.text(max_size=60).filter(lambda a: not any(d in a for d in ("tool_call>", "think>"))))
def test_tool_calls_round_trip_through_the_act_tool(a):
    call = {"name": "act", "arguments": {"action": a}}
    for reply in (ToolCalls().render(a, _MAZE), json.dumps(call), f"Sure:\n```json\n{json.dumps(call)}\n```"):
        assert ToolCalls().parse(reply, _MAZE).action == a


@settings(max_examples=100)
@given(number=st.integers(-10**6, 10**6), text=st.text(max_size=20))
def test_tool_calls_round_trip_on_a_tool_env(number, text):
    arguments = {"number": number, "note": text}
    parsed = ToolCalls().parse(json.dumps({"name": "guess", "arguments": arguments}), _GUESS)
    assert json.loads(parsed.action) == {"name": "guess", "arguments": arguments}


# ----------------------------------------------------------------------------- rejections
@settings(max_examples=150)
@given(text=st.text(max_size=80).filter(lambda t: not ACTION_MARKER.search(t)))
def test_react_rejects_replies_without_an_action_line(text):
    parsed = ReAct().parse(text)
    assert parsed.action is None and "expected a line 'Action: <action>'" in parsed.error


@settings(max_examples=150)
@given(text=st.text(max_size=80).filter(lambda t: "</action>" not in t.lower()))
def test_tags_reject_replies_without_a_closed_tag(text):
    parsed = Tags().parse(text)
    assert parsed.action is None and "<action>…</action>" in parsed.error


@settings(max_examples=150)
@given(text=st.text(max_size=80).filter(lambda t: "{" not in t and "[" not in t))
def test_tool_calls_reject_replies_without_json(text):
    for env in (None, _MAZE, _GUESS):
        parsed = ToolCalls().parse(text, env)
        assert parsed.action is None and "Expected one call such as" in parsed.error


@pytest.mark.parametrize("text", ["", "   \n", "<think>hmm</think>", "<think>still thinking", "``````", '""'])
def test_plain_rejects_empty_replies(text):
    assert PlainText().parse(text).action is None


@pytest.mark.parametrize("text, why", [
    (json.dumps({"tool_calls": [{"function": {"name": "act", "arguments": "{}"}}] * 2}), "one call per turn"),
    ('<tool_call>{"name": "act", "arguments": {"action": "look"}}</tool_call>' * 2, "one call per turn"),
    ('[{"name": "act", "arguments": {}}, {"name": "act", "arguments": {}}]', "one call per turn"),
    ('{"tool_calls": []}', "empty"),
    ('{"name": "act", "arguments": "{not json"}', "not valid JSON"),
    ('{"name": "act", "arguments": [1]}', "must be a JSON object"),
    ('{"name": "move", "arguments": {"action": "look"}}', "one function, act(action)"),
    ('{"name": "act", "arguments": {"command": "look"}}', "string argument 'action'"),
    ('{"answer": 42}', "not a call object"),
    ('<tool_call>{"name": "act", "arguments": {"action": "look"}</tool_call>', "malformed JSON"),
    ("I would go north.", "No tool call"),
])
def test_tool_calls_rejections_on_the_maze(text, why):
    parsed = ToolCalls().parse(text, _MAZE)
    assert parsed.action is None and why in parsed.error and '"name": "act"' in parsed.error


# ----------------------------------------------------------------------------- format examples
def test_openai_tool_calls_message():
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "guess", "arguments": '{"number": 50}'}}]}
    parsed = ToolCalls().parse(json.dumps(message), _GUESS)
    assert json.loads(parsed.action) == {"name": "guess", "arguments": {"number": 50}}


def test_hermes_tags_with_prose_and_missing_close():
    reply = 'Let me check.\n<tool_call>\n{"name": "act", "arguments": {"action": "go north"}}\n</tool_call>'
    parsed = ToolCalls().parse(reply, _MAZE)
    assert (parsed.action, parsed.thought) == ("go north", "Let me check.")
    assert ToolCalls().parse('<tool_call>{"name": "act", "arguments": {"action": "look"}}', _MAZE).action == "look"


@pytest.mark.parametrize("reply", [
    '{"name": "guess", "arguments": {"number": 7}}',
    '{"name": "guess", "parameters": {"number": 7}}',
    '[{"name": "guess", "arguments": {"number": 7}}]',
    '{"type": "function", "function": {"name": "guess", "arguments": "{\\"number\\": 7}"}}',
    'I will guess 7 {"name": "guess", "arguments": {"number": 7}} and see.',
    'The set {} is empty, so {"name": "guess", "arguments": {"number": 7}}',
    '```json\n{"name": "guess", "arguments": {"number": 7}}\n```',
    '<think>{"name": "give_up"}</think>{"name": "guess", "arguments": {"number": 7}}',
])
def test_tool_call_shapes_give_the_canonical_call(reply):
    assert ToolCalls().parse(reply, _GUESS).action == '{"name": "guess", "arguments": {"number": 7}}'


def test_react_uses_the_last_action_line():
    reply = "Thought: maybe north.\nAction: go north\nObservation: wall.\nThought: try east instead\nAction: go east\n"
    parsed = ReAct().parse(reply)
    assert (parsed.action, parsed.thought) == ("go east", "try east instead")


@pytest.mark.parametrize("reply, action", [
    ("Thought 1: search it\nAct 1: search[red shoes]", "search[red shoes]"),
    ("thought: x\naction: click[Buy Now]  ", "click[Buy Now]"),
    ("**Thought:** x\n**Action:** go west", "go west"),
    ("Thought: x\nAction:\n  go west\n", "go west"),
    ("Thought: x\nAction: `look`", "look"),
    ("I'll act. Action: look", "look"),
    ("Thought: x\nAction: *star", "*star"),
])
def test_react_forms(reply, action):
    assert ReAct().parse(reply).action == action


def test_react_error_names_the_expected_line():
    assert "expected a line 'Action: <action>'" in ReAct().parse("Thought: I should go north.").error
    assert ReAct().parse("Thought: x\nAction:   \n").error.startswith("The 'Action:' line is empty")


def test_think_stripping():
    assert split_think("<think>a</think> go <think>b</think>north") == (" go north", "a\nb", False)
    prefilled = "reasoning from a pre-filled prompt"
    assert split_think(f"{prefilled}</think>\nlook") == ("\nlook", prefilled, False)
    assert split_think("<think>never closed") == ("", "never closed", True)
    parsed = PlainText().parse("<think>Exits: east.</think>\n\ngo east\n")
    assert (parsed.action, parsed.thought) == ("go east", "Exits: east.")
    assert "ended inside <think>" in PlainText().parse("<think>let me think about").error
    assert ReAct().parse("<think>Action: go north</think>Thought: no.\nAction: look").action == "look"
    assert Tags().parse("<think><action>go north</action></think><action>look</action>").action == "look"


def test_tags_last_complete_pair_wins_and_custom_names():
    assert Tags().parse("<action>look</action> then <action>go north").action == "look"
    assert Tags().parse("<action>look</action> <action>go north</action>").action == "go north"
    assert Tags(tag="answer").parse("so <answer> 42 </answer>").action == "42"
    assert "never closed" in Tags().parse("<action>go north").error
    assert "are empty" in Tags().parse("<action> </action>").error
    with pytest.raises(ValueError, match="simple XML name"):
        Tags(tag="a b")


def test_plain_unwrapping():
    assert PlainText().parse("```bash\nls -la\n```").action == "ls -la"
    assert PlainText().parse("```look```").action == "look"
    assert PlainText().parse("\u201cgo north\u201d").action == "go north"
    assert PlainText().parse("'a' and 'b'").action == "'a' and 'b'"


def test_get_protocol():
    assert protocol_names() == sorted(NAMES)
    assert isinstance(get_protocol("react"), ReAct) and isinstance(get_protocol(Tags), Tags)
    tags = Tags(tag="answer")
    assert get_protocol(tags) is tags
    with pytest.raises(ValueError, match="plain, react, tags, tool_calls.*Did you mean 'react'"):
        get_protocol("reactt")
    with pytest.raises(ValueError, match="unknown action protocol"):
        get_protocol(42)


# ----------------------------------------------------------------------------- the wrapper
def test_parse_error_does_not_step_and_keeps_the_last_info():
    env = ActionProtocolWrapper(gymnasium.make("agentgym/Maze-Easy-v0"), "react")
    _, first = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("go east")
    assert "expected a line 'Action: <action>'" in obs and env.protocol.instructions() in obs
    assert (reward, terminated, truncated) == (env.unwrapped.invalid_action_penalty, False, False)
    assert info["action_valid"] is False and info["parse_error"].startswith("No action found")
    assert info["valid_actions"] == first["valid_actions"] and info["state_key"] == first["state_key"]
    assert "system_prompt" not in info and env.unwrapped.moves == 0


def test_turn_limit_truncates_a_model_that_never_formats():
    env = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="tags")
    env.reset(seed=0)
    limit = env.spec.max_episode_steps
    env.step("<action>look</action>")  # valid turns count too
    for turn in range(2, limit + 1):
        _, _, terminated, truncated, info = env.step("no tags here")
        assert not terminated and truncated == (turn == limit)
    obs, _, terminated, _, info = env.step("<action>look</action>")
    assert terminated and "episode is over" in obs and info["action_valid"] is False
    env.reset(seed=1)
    assert env.turns == 0 and env.step("<action>look</action>")[4]["action_valid"]


def test_max_turns_override_and_valid_last_turn_truncates():
    env = ActionProtocolWrapper(gymnasium.make("agentgym/Maze-v0"), "plain", max_turns=2)
    env.reset(seed=0)
    assert env.step("look")[3] is False and env.step("look")[3] is True
    with pytest.raises(ValueError, match="max_turns"):
        ActionProtocolWrapper(gymnasium.make("agentgym/Maze-v0"), "plain", max_turns=0)


def test_step_before_reset_raises():
    env = ActionProtocolWrapper(gymnasium.make("agentgym/Maze-v0"), "plain")
    with pytest.raises(agentgym_envs.core.ResetNeeded):
        env.step("look")


@pytest.mark.parametrize("name", NAMES)
def test_system_prompt_gets_the_format_instructions(name):
    for env_id in ENV_IDS:
        env = agentgym_envs.make(env_id, protocol=name)
        _, info = env.reset(seed=0)
        prompt = env.unwrapped.system_prompt
        if not env.protocol.shows_env_format:  # outside plain the env's reply-format phrases get neutral words
            prompt = neutral_text(prompt, reply_format_table(env.unwrapped))
        assert info["system_prompt"] == f"{prompt}\n\n{env.protocol.instructions(env.unwrapped)}"


def test_tools_info():
    maze = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="tool_calls")
    _, info = maze.reset(seed=0)
    assert info["tools"] == act_tool_schema() and "enum" not in json.dumps(info["tools"])
    assert maze.protocol.tools(maze.unwrapped) == act_tool_schema()
    _, _, _, _, step_info = maze.step('{"name": "act", "arguments": {"action": "look"}}')
    action_schema = step_info["tools"][0]["function"]["parameters"]["properties"]["action"]
    assert action_schema["enum"] == step_info["valid_actions"]
    assert "act(action)" in info["system_prompt"]

    guess = agentgym_envs.make("agentgym/GuessNumber-v0", protocol="tool_calls")
    _, info = guess.reset(seed=0)
    assert info["tools"] == guess.unwrapped.tools
    assert {t["function"]["name"] for t in info["tools"]} == {"guess", "give_up"}

    _, info = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="react").reset(seed=0)
    assert "tools" not in info


@pytest.mark.parametrize("name", NAMES)
def test_native_action_is_exactly_what_the_env_received(name):
    """info["native_action"]: the parsed action the inner env was stepped with this turn, else None (a reply
    that did not parse, one over the length limit even if it would parse, a reply after the episode ended)."""
    env = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol=name, max_turns=6)
    received: list[str] = []
    inner_step = env.env.step
    env.env.step = lambda action: (received.append(action), inner_step(action))[1]
    env.reset(seed=0)
    over_long = env.protocol.render("look", env.unwrapped) + " " * (env.max_reply_chars + 1)
    assert env.protocol.parse(over_long, env.unwrapped).action == "look"  # it would parse, but is never read
    replies = [env.protocol.render("go north", env.unwrapped), "{not a reply", over_long,
               env.protocol.render("look", env.unwrapped), "", env.protocol.render("look", env.unwrapped), "late"]
    seen = []
    for reply in replies:
        before = len(received)
        info = env.step(reply)[4]
        seen.append(info["native_action"])
        assert info["native_action"] == (received[-1] if len(received) > before else None)
    garbage = "{not a reply" if name == "plain" else None  # plain passes any non-empty text to the env
    assert seen == ["go north", garbage, None, "look", None, "look", None]
    assert received == [a for a in seen if a is not None]


def test_thought_is_reported_in_info():
    env = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="react")
    env.reset(seed=0)
    info = env.step("Thought: east is open\nAction: look")[4]
    assert info["thought"] == "east is open"
    assert "thought" not in env.step("Action: look")[4]


# ----------------------------------------------------------------------------- expert episodes
def reply_in(name: str, native: str, base) -> str:
    """The expert's native action written as a model would, independent of ``render``."""
    if name == "plain":
        return f"<think>The expert says {native}.</think>\n{native}\n"
    if name == "react":
        return f"Thought: the expert says so.\nAction: {native}"
    if name == "tags":
        return f"I follow the expert. <action>{native}</action>"
    if base.tools is None:
        call = {"name": "act", "arguments": {"action": native}}
    else:
        name_, number = re.fullmatch(r"(\w+)\(number=(\d+)\)", native).groups()
        call = {"name": name_, "arguments": {"number": int(number)}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("use_render", [False, True])
def test_expert_solves_through_each_protocol(env_id, name, use_render):
    env = agentgym_envs.make(env_id, protocol=name)
    for seed in (0, 1, 2):
        env.reset(seed=seed)
        base = env.unwrapped
        terminated = truncated = False
        while not (terminated or truncated):
            native = base.expert_action()
            reply = env.protocol.render(native, base, thought="expert") if use_render else reply_in(name, native, base)
            _, reward, terminated, truncated, info = env.step(reply)
            assert info["action_valid"], info["parse_error"]
        assert terminated and info["won"] and reward == 1.0
