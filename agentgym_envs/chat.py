"""Chat messages from an episode: what a chat model sees at each turn.

An episode becomes ``system`` (the env's system prompt), a first ``user`` message (the first observation,
preceded by the instruction when the observation does not already contain it), then one ``assistant`` /
``user`` pair per turn: the model's raw reply exactly as it was sent, and the observation that followed.
A ``window`` keeps the system message, the first user message and only the last ``window`` turns; a short
note about the omitted turns is appended to the first user message so that roles keep alternating.

**Tool calling.** A history started with ``tool_calling=True`` (the ``tool_calls`` protocol) keeps the tool
schemas of the reset info and returns its messages as a :class:`Chat`, a list of messages that also carries
those ``tools``: model backends pass them to the chat template (``apply_chat_template(..., tools=...)``) or
to the API request. The reply stays the assistant message's content exactly as sampled (whatever tool-call
format the model wrote), and each observation after a reply is a ``tool`` message, the template's tool-result
turn. The tools are the reset's, fixed for the episode, so every turn's rendering extends the last one.

Plain data, no tokenisation, deterministic: policies and the trainer render these with a chat template.

>>> history = ChatHistory()
>>> history.start("You are in a hall.", {"system_prompt": "Explore.", "instruction": "Find the exit."})
>>> history.add("go north", "You are in a kitchen.")
>>> history.add("go east", "You are in a garden.")
>>> [m["role"] for m in history.messages()]
['system', 'user', 'assistant', 'user', 'assistant', 'user']
>>> history.messages(window=1)[1]["content"]
'Find the exit.\\n\\nYou are in a hall.\\n\\n[1 earlier turn omitted]'
>>> tools = [{"type": "function", "function": {"name": "go", "parameters": {"type": "object", "properties": {}}}}]
>>> calling = ChatHistory(tool_calling=True)
>>> calling.start("You are in a hall.", {"tools": tools})
>>> calling.add('<tool_call>{"name": "go", "arguments": {}}</tool_call>', "You are in a kitchen.")
>>> [m["role"] for m in calling.messages()], calling.messages().tools == tools
(['user', 'assistant', 'tool'], True)
"""

from __future__ import annotations

import json
from typing import Any, Literal, Mapping, Sequence, TypedDict

from .core.errors import ResetNeeded


class Message(TypedDict):
    """One chat message, in the shape chat templates and OpenAI-compatible APIs take."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str


class Chat(list):
    """A chat as a model request holds it: the messages (this list, so anything that takes ``list[Message]``
    takes it) and the ``tools`` the model may call (OpenAI-style function schemas, or ``None``).

    >>> chat = Chat([Message(role="user", content="hi")], tools=[])
    >>> chat, chat.tools, chat_tools([Message(role="user", content="hi")])
    ([{'role': 'user', 'content': 'hi'}], [], None)
    """

    def __init__(self, messages: Sequence[Message] = (), tools: list[dict[str, Any]] | None = None):
        super().__init__(messages)
        self.tools = tools


def chat_tools(messages: Sequence[Message]) -> list[dict[str, Any]] | None:
    """The tools a chat carries: a :class:`Chat`'s ``tools``; ``None`` for a plain list of messages."""
    return getattr(messages, "tools", None)


def list_tools(messages: Sequence[Message], tools: list[dict[str, Any]]) -> list[Message]:
    """``messages`` with ``tools`` listed once, one compact line each, in the system message (a system
    message holding only them when there is none): the schemas for a chat template that ignores ``tools``.

    A system message that already describes every tool (names each one as ``name(``, as Tutoring's prompt
    does) is left as it is: listing them again would say the same thing twice.

    >>> tool = {"type": "function", "function": {"name": "go", "description": "Move.", "parameters": {
    ...     "type": "object", "properties": {"to": {"type": "string", "enum": ["n", "s"]}}, "required": ["to"]}}}
    >>> list_tools([Message(role="user", content="hi")], [tool])[0]["content"]
    'Tools (call one per turn):\\n- go(to: "n"|"s"): Move.'
    >>> list_tools([Message(role="system", content="Use go(to) to move."), Message(role="user", content="hi")],
    ...            [tool])[0]["content"]
    'Use go(to) to move.'
    """
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
    lines = [tool_line(tool) for tool in tools]
    if system is not None and all(f"{tool_name(tool)}(" in system for tool in tools):
        return list(messages)
    listed = "Tools (call one per turn):\n" + "\n".join(lines)
    if system is not None:
        return [Message(role="system", content=f"{system}\n\n{listed}" if system else listed), *messages[1:]]
    return [Message(role="system", content=listed), *messages]


def tool_name(tool: Mapping[str, Any]) -> str:
    """The function name of an OpenAI-style tool schema (or of a bare function schema)."""
    function = tool.get("function", tool) if isinstance(tool, Mapping) else {}
    return str(function.get("name", "")) if isinstance(function, Mapping) else ""


def tool_line(tool: Mapping[str, Any]) -> str:
    """One tool as ``- name(arg: type, opt?: type): description``; an ``enum`` is written as its values.

    >>> tool_line({"name": "guess", "parameters": {"properties": {"number": {"type": "integer"}}, "required": ["number"]}})
    '- guess(number: integer)'
    """
    function = tool.get("function", tool) if isinstance(tool, Mapping) else {}
    function = function if isinstance(function, Mapping) else {}
    parameters = function.get("parameters") if isinstance(function.get("parameters"), Mapping) else {}
    properties = parameters.get("properties") if isinstance(parameters.get("properties"), Mapping) else {}
    required = parameters.get("required") if isinstance(parameters.get("required"), list) else []
    args = []
    for name, spec in properties.items():
        spec = spec if isinstance(spec, Mapping) else {}
        enum = spec.get("enum")
        kind = "|".join(json.dumps(v, ensure_ascii=False) for v in enum) if isinstance(enum, list) and enum \
            else str(spec.get("type", "any"))
        args.append(f"{name}{'' if name in required else '?'}: {kind}")
    description = str(function.get("description") or "").strip()
    return f"- {tool_name(tool)}({', '.join(args)})" + (f": {description}" if description else "")


#: The system prompt that renders as an *empty* system turn. ``None`` or ``""`` give no system message,
#: and a template with a default system turn (ChatML's "You are a helpful AI assistant …") then injects
#: it; an empty system turn keeps that default out. Any whitespace-only prompt means the same (so a config
#: or a suite can write it: ``env.system_prompt=" "``).
EMPTY_SYSTEM_TURN = " "


def system_messages(system_prompt: str | None) -> list[Message]:
    """The system message(s) a chat starts with: none for ``None`` or ``""`` (the template's default, if it
    has one, applies), an empty one for a whitespace-only prompt (:data:`EMPTY_SYSTEM_TURN`), else the prompt.

    >>> system_messages(None), system_messages(""), system_messages(EMPTY_SYSTEM_TURN), system_messages("Be brief.")
    ([], [], [{'role': 'system', 'content': ''}], [{'role': 'system', 'content': 'Be brief.'}])
    """
    if not system_prompt:
        return []
    return [Message(role="system", content=system_prompt if system_prompt.strip() else "")]


def first_user_content(observation: str, instruction: str | None) -> str:
    """The first observation, preceded by ``instruction`` unless the observation already contains it."""
    if not instruction or instruction in observation:
        return observation
    return f"{instruction}\n\n{observation}"


def omitted_note(count: int) -> str:
    """The note that stands in for ``count`` dropped turns."""
    return f"[{count} earlier turn{'s' if count != 1 else ''} omitted]"


def episode_messages(
    system_prompt: str | None,
    first_observation: str,
    turns: Sequence[tuple[str, str]],
    window: int | None = None,
    *,
    tools: list[dict[str, Any]] | None = None,
) -> list[Message]:
    """Messages for an episode given as ``(reply, observation)`` turns, keeping the last ``window`` turns.

    ``first_observation`` is used as is (see :func:`first_user_content` to prepend an instruction).
    The system prompt becomes the system message as :func:`system_messages` says. With ``tools`` (a tool-calling chat) the
    result is a :class:`Chat` carrying them and the observations after replies are ``tool`` messages.

    >>> [m["content"] for m in episode_messages("Be brief.", "start", [("a", "1"), ("b", "2")], window=1)]
    ['Be brief.', 'start\\n\\n[1 earlier turn omitted]', 'b', '2']
    """
    if window is not None and window < 0:
        raise ValueError(f"window must be None (keep every turn) or a number of turns >= 0, got {window}")
    kept = turns if window is None or window >= len(turns) else turns[len(turns) - window:]
    omitted = len(turns) - len(kept)
    first = first_observation if omitted == 0 else f"{first_observation}\n\n{omitted_note(omitted)}"
    messages = system_messages(system_prompt)
    messages.append(Message(role="user", content=first))
    result_role = "user" if tools is None else "tool"
    for reply, observation in kept:
        messages.append(Message(role="assistant", content=reply))
        messages.append(Message(role=result_role, content=observation))
    return messages if tools is None else Chat(messages, tools)


class ChatHistory:
    """An episode's chat, built turn by turn: ``start`` after ``reset``, ``add`` after each ``step``.

    ``tool_calling``: the chat of a tool-calling protocol (see the module docstring): the reset info's
    ``tools`` ride with the messages and observations after replies are ``tool`` messages.
    """

    def __init__(self, tool_calling: bool = False) -> None:
        self.tool_calling = tool_calling
        self.system_prompt: str | None = None
        self.first_observation: str | None = None
        self.tools: list[dict[str, Any]] | None = None
        self.turns: list[tuple[str, str]] = []

    def start(self, observation: str, info: Mapping[str, Any]) -> None:
        """Begin an episode (forgetting any previous one) from ``reset``'s observation and info."""
        self.system_prompt = info.get("system_prompt") or None
        self.first_observation = first_user_content(observation, info.get("instruction"))
        self.tools = list(info.get("tools") or []) if self.tool_calling else None
        self.turns = []

    def add(self, action_text: str, observation: str) -> None:
        """Record one turn: the model's raw reply as sent, and the observation the env returned."""
        if self.first_observation is None:
            raise ResetNeeded("ChatHistory.add() was called before start(); call start(observation, info) after reset")
        if not isinstance(action_text, str) or not isinstance(observation, str):
            raise TypeError(
                f"expected the reply and observation as str, got {type(action_text).__name__} and {type(observation).__name__}"
            )
        self.turns.append((action_text, observation))

    def messages(self, window: int | None = None) -> list[Message]:
        """The chat so far, ending with a user message; only the last ``window`` turns when given."""
        if self.first_observation is None:
            raise ResetNeeded("ChatHistory.messages() was called before start(); call start(observation, info) after reset")
        return episode_messages(self.system_prompt, self.first_observation, self.turns, window, tools=self.tools)

    def __len__(self) -> int:
        """The number of turns recorded."""
        return len(self.turns)
