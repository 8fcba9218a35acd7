"""Chat history: episodes become alternating messages; windows keep the start and the last turns."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgym_envs
from agentgym_envs.chat import ChatHistory, episode_messages, first_user_content, omitted_note
from agentgym_envs.core import ResetNeeded

turns_strategy = st.lists(st.tuples(st.text(max_size=20), st.text(max_size=20)), max_size=12)


@settings(max_examples=150)
@given(system=st.none() | st.text(max_size=10), turns=turns_strategy, window=st.none() | st.integers(0, 15))
def test_roles_alternate_and_the_window_keeps_the_last_turns(system, turns, window):
    messages = episode_messages(system, "first", turns, window)
    body = messages[1:] if system else messages
    assert messages[0]["role"] == ("system" if system else "user")
    assert [m["role"] for m in body] == ["user", "assistant"] * (len(body) // 2) + ["user"]
    kept = len(turns) if window is None else min(window, len(turns))
    assert len(body) == 1 + 2 * kept
    pairs = [(body[i]["content"], body[i + 1]["content"]) for i in range(1, len(body), 2)]
    assert pairs == [tuple(t) for t in turns[len(turns) - kept:]]
    omitted = len(turns) - kept
    assert body[0]["content"] == ("first" if omitted == 0 else f"first\n\n{omitted_note(omitted)}")


def test_omitted_note_wording():
    assert omitted_note(1) == "[1 earlier turn omitted]" and omitted_note(3) == "[3 earlier turns omitted]"
    messages = episode_messages("sys", "obs0", [("a1", "o1"), ("a2", "o2"), ("a3", "o3"), ("a4", "o4")], window=1)
    assert [m["content"] for m in messages] == ["sys", "obs0\n\n[3 earlier turns omitted]", "a4", "o4"]
    zero = episode_messages("sys", "obs0", [("a1", "o1")], window=0)
    assert [m["content"] for m in zero] == ["sys", "obs0\n\n[1 earlier turn omitted]"]


def test_negative_window_is_rejected():
    with pytest.raises(ValueError, match="window must be"):
        episode_messages("s", "o", [], window=-1)


def test_start_places_the_instruction_before_the_first_observation_once():
    assert first_user_content("You see a door.", "Open the door.") == "Open the door.\n\nYou see a door."
    assert first_user_content("Open the door. You see a door.", "Open the door.") == "Open the door. You see a door."
    assert first_user_content("You see a door.", None) == "You see a door."
    history = ChatHistory()
    history.start("You see a door.", {"instruction": "Open the door.", "system_prompt": ""})
    assert history.messages() == [{"role": "user", "content": "Open the door.\n\nYou see a door."}]


def test_history_records_raw_replies_and_restarts():
    history = ChatHistory()
    with pytest.raises(ResetNeeded, match="before start"):
        history.add("look", "obs")
    history.start("obs0", {"system_prompt": "sys", "instruction": "obs0"})
    raw = "<think>hmm</think>\nAction: look  "
    history.add(raw, "obs1")
    assert history.messages()[2] == {"role": "assistant", "content": raw} and len(history) == 1
    with pytest.raises(TypeError, match="expected the reply and observation as str"):
        history.add(None, "obs2")
    history.start("new", {"system_prompt": "sys"})
    assert len(history) == 0 and history.messages()[-1]["content"] == "new"


def test_messages_are_fresh_plain_data():
    history = ChatHistory()
    history.start("obs0", {"system_prompt": "sys"})
    history.add("a", "o")
    first = history.messages(window=1)
    first[1]["content"] = "mutated"
    assert history.messages(window=1) == [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "obs0"},
        {"role": "assistant", "content": "a"}, {"role": "user", "content": "o"},
    ]


def test_an_episode_through_a_protocol_wrapper():
    env = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="react")
    obs, info = env.reset(seed=0)
    history = ChatHistory()
    history.start(obs, info)
    terminated = truncated = False
    while not (terminated or truncated):
        reply = f"Thought: follow the map.\nAction: {env.unwrapped.expert_action()}"
        obs, _, terminated, truncated, info = env.step(reply)
        history.add(reply, obs)
    messages = history.messages(window=3)
    assert messages[0]["content"] == info_system_prompt(env)
    assert messages[1]["content"].startswith("Find the exit of a 4×4 maze.")
    assert messages[-1]["content"].endswith("You escaped the maze!") and len(messages) == 2 + 2 * 3
    assert history.messages() == history.messages()  # deterministic


def info_system_prompt(env) -> str:
    """The env's prompt in the protocol's voice: its reply-format phrases in neutral words, then the format."""
    from agentgym_envs.protocols.prompt import neutral_text, reply_format_table

    prompt = env.unwrapped.system_prompt
    if not env.protocol.shows_env_format:
        prompt = neutral_text(prompt, reply_format_table(env.unwrapped))
    return f"{prompt}\n\n{env.protocol.instructions(env.unwrapped)}"


# ----------------------------------------------------------------------------- issue 32 §2: real-model prompts
def _render_chatml(messages) -> str:
    """The repo's Qwen2.5-style ChatML template (a default system turn when the chat has none), rendered."""
    from pathlib import Path

    from jinja2.sandbox import ImmutableSandboxedEnvironment

    source = (Path(__file__).parents[1] / "trainer/models/templates/qwen2.jinja").read_text()
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda value, **_: json.dumps(value)
    return env.from_string(source).render(messages=messages, add_generation_prompt=True)


def test_no_system_message_and_an_empty_system_turn_are_both_expressible():
    from agentgym_envs.chat import EMPTY_SYSTEM_TURN

    history = ChatHistory()
    history.start("A hall.", {"system_prompt": EMPTY_SYSTEM_TURN})
    empty_turn = _render_chatml(history.messages())
    history.start("A hall.", {"system_prompt": None})
    omitted = _render_chatml(history.messages())
    assert empty_turn.startswith("<|im_start|>system\n<|im_end|>\n<|im_start|>user\nA hall.")
    assert omitted.startswith("<|im_start|>system\n") and "<|im_start|>system\n<|im_end|>" not in omitted  # the default
    assert [m["role"] for m in episode_messages("", "A hall.", [])] == ["user"]  # "" keeps omitting (the quickstart's)


def test_tools_the_system_prompt_already_describes_are_not_listed_again():
    """Tutoring's prompt lists its tools in prose; a template that ignores ``tools`` listed them again as JSON."""
    from agentgym_envs.chat import list_tools

    env = agentgym_envs.make("agentgym/Tutoring-v1", protocol="tool_calls")
    obs, info = env.reset(seed=0)
    history = ChatHistory(tool_calling=True)
    history.start(obs, info)
    messages = history.messages()
    listed = list_tools(messages, messages.tools)
    assert listed[0] == messages[0] and "Tools (call one per turn)" not in listed[0]["content"]
    assert listed[0]["content"].count("ask_item(") == 1


def test_tools_are_listed_once_one_compact_line_each():
    from agentgym_envs.chat import list_tools

    env = agentgym_envs.make("agentgym/Search-1Hop-v0", protocol="tool_calls")
    obs, info = env.reset(seed=0)
    history = ChatHistory(tool_calling=True)
    history.start(obs, info)
    messages = history.messages()
    system = list_tools(messages, messages.tools)[0]["content"]
    names = [tool["function"]["name"] for tool in messages.tools]
    assert system.startswith(info["system_prompt"]) and system.count("Tools (call one per turn)") == 1
    assert all(system.count(f"- {name}(") == 1 for name in names) and '"parameters"' not in system
    assert len(system) - len(info["system_prompt"]) < 120 * len(names)
