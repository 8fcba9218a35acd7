"""Tool calls: JSON function calls in the shapes models emit, mapped onto the env's native action.

Accepted shapes (after removing ``<think>…</think>``), one call per turn:

* a call object ``{"name": "guess", "arguments": {"number": 42}}`` (``arguments`` may be a JSON string, as
  OpenAI sends it; ``parameters`` is accepted for Llama-style calls), or a one-element list of them;
* an OpenAI message ``{"tool_calls": [{"type": "function", "function": {"name": …, "arguments": "…"}}]}``;
* Hermes/Qwen ``<tool_call>{…}</tool_call>`` (the closing tag may be missing, as when it is a stop string);
* any of these inside a code fence or surrounded by prose (the first JSON call in the text is used).

On a :class:`~agentgym_envs.core.tool_env.ToolEnv` the native action is the canonical JSON call, which
``ToolEnv._step`` dispatches. Any other env gets one synthetic tool ``act(action: str)`` and the native
action is its ``action`` argument; the per-step info lists the current ``valid_actions`` as its ``enum``.

>>> from agentgym_envs.examples.maze import MazeEnv
>>> env = MazeEnv()
>>> ToolCalls().parse('<tool_call>{"name": "act", "arguments": {"action": "go north"}}</tool_call>', env).action
'go north'
>>> message = {"tool_calls": [{"type": "function", "function": {"name": "guess", "arguments": '{"number": 7}'}}]}
>>> ToolCalls().parse(json.dumps(message)).action
'{"name": "guess", "arguments": {"number": 7}}'
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.errors import InvalidAction
from ..core.tool_env import parse_call
from .base import ActionProtocol, ParsedAction, join_thoughts, register_protocol, split_think

ACT_TOOL = "act"
_TAG_OPEN, _TAG_CLOSE = "<tool_call>", "</tool_call>"
_FENCE_OPEN = re.compile(r"```[\w+#.-]{0,20}")
_DECODER = json.JSONDecoder()
#: How many ``{`` positions are tried as the start of a JSON call (bounds the work on hostile input).
MAX_JSON_ATTEMPTS = 16


class _CallError(Exception):
    """A reply that holds no usable call; the message says why."""


@register_protocol
class ToolCalls(ActionProtocol):
    """JSON / OpenAI / Hermes tool calls; an ``act(action)`` tool for envs without tools of their own."""

    name = "tool_calls"

    def _parse(self, text: str, env: Any) -> ParsedAction:
        rest, think, unterminated = split_think(text)
        env_tools = _env_tools(env)
        try:
            value, start = _find_call(rest)
            name, arguments = _normalise(value)
            action = self._native(name, arguments, env, env_tools)
        except _CallError as e:
            hint = " The reply ended inside <think>." if unterminated else ""
            return ParsedAction(None, f"{e} Expected one call such as {self._example(env, env_tools)}.{hint}", think)
        return ParsedAction(action, None, join_thoughts(think, rest[:start].strip() or None))

    @staticmethod
    def _native(name: str, arguments: dict[str, Any], env: Any, env_tools: Any) -> str:
        if env is None or env_tools is not None:
            try:
                return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
            except (ValueError, TypeError, RecursionError):
                raise _CallError("Invalid tool call: the arguments are nested too deeply.") from None
        if name != ACT_TOOL:
            raise _CallError(f"Unknown function {name[:60]!r}: this environment has one function, {ACT_TOOL}(action).")
        action = arguments.get("action")
        if isinstance(action, (int, float)) and not isinstance(action, bool):
            action = str(action)
        if not isinstance(action, str):
            raise _CallError(f"Invalid call: {ACT_TOOL} needs a string argument 'action'.")
        return action

    @staticmethod
    def _example(env: Any, env_tools: Any) -> str:
        if env is not None and env_tools is None:
            return f'<tool_call>{{"name": "{ACT_TOOL}", "arguments": {{"action": "<action>"}}}}</tool_call>'
        return '<tool_call>{"name": "<tool name>", "arguments": {<arguments>}}</tool_call>'

    def instructions(self, env: Any = None) -> str:
        if env is not None and _env_tools(env) is None:
            return (
                f"Act by calling the function {ACT_TOOL}(action) exactly once per turn, with your action as its "
                f"'action' argument, e.g. {self._example(env, None)}."
            )
        return (
            "Call exactly one tool per turn. Without native tool calling, write the call as "
            f"{self._example(env, True)}."
        )

    def reminder(self, env: Any = None) -> str | None:
        if env is not None and _env_tools(env) is None:
            return f"Reply with one call of {ACT_TOOL}(action)."
        return "Reply with one tool call."

    def tools(self, env: Any = None) -> list[dict[str, Any]] | None:
        env_tools = _env_tools(env)
        if env_tools is not None:
            return list(env_tools)
        return act_tool_schema() if env is not None else None

    def update_step_info(self, info: dict[str, Any], env: Any) -> None:
        if _env_tools(env) is None:
            info["tools"] = act_tool_schema(info.get("valid_actions"))

    def render(self, action: str, env: Any = None, *, thought: str | None = None) -> str:
        env_tools = _env_tools(env)
        as_call = getattr(env, "as_tool_call", None)
        if env is not None and env_tools is None:
            call = {"name": ACT_TOOL, "arguments": {"action": action}}
        else:
            call = (as_call(action) if callable(as_call) else None) or _call_object(action, env_tools or [])
        prefix = f"{thought}\n" if thought else ""
        return f"{prefix}{_TAG_OPEN}\n{json.dumps(call, ensure_ascii=False)}\n{_TAG_CLOSE}"


def act_tool_schema(valid_actions: list[str] | None = None) -> list[dict[str, Any]]:
    """The synthetic ``act(action)`` tool; ``valid_actions`` (when given) become the argument's ``enum``."""
    action: dict[str, Any] = {
        "type": "string",
        "description": "One action in the environment's command language, as described in the instructions.",
    }
    if valid_actions:
        action["enum"] = list(valid_actions)
    parameters = {"type": "object", "properties": {"action": action}, "required": ["action"]}
    function = {"name": ACT_TOOL, "description": "Take one action in the environment.", "parameters": parameters}
    return [{"type": "function", "function": function}]


def _env_tools(env: Any) -> list[dict[str, Any]] | None:
    return getattr(env, "tools", None) if env is not None else None


def _find_call(text: str) -> tuple[Any, int]:
    """The first JSON value that looks like a call, and where its container starts in ``text``."""
    opened = text.find(_TAG_OPEN)
    if opened >= 0:
        closed = text.find(_TAG_CLOSE, opened)
        end = len(text) if closed < 0 else closed
        if closed >= 0 and text.find(_TAG_OPEN, closed) >= 0:
            raise _CallError("Invalid reply: several <tool_call> blocks; make one call per turn.")
        return _first_json(text[opened + len(_TAG_OPEN):end]), opened
    fence = _FENCE_OPEN.search(text)
    if fence is not None:
        closed = text.find("```", fence.end())
        try:
            return _first_json(text[fence.end():len(text) if closed < 0 else closed]), fence.start()
        except _CallError:
            pass  # a fence holding something else (a plan, a shell line): look at the whole reply
    return _first_json(text), _first_brace(text)


def _first_brace(text: str) -> int:
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    return min(starts) if starts else 0


def _first_json(text: str) -> Any:
    stripped = text.lstrip()
    if stripped.startswith("["):  # a Llama/Mistral-style list of calls
        value = _decode(text, len(text) - len(stripped))
        if _looks_like_call(value):
            return value
    pos, malformed, decoded = 0, None, False
    for _ in range(MAX_JSON_ATTEMPTS):
        start = text.find("{", pos)
        if start < 0:
            break
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as e:
            malformed = malformed or f"{e.msg} at position {e.pos - start}"
            pos = start + 1
            continue
        except RecursionError:
            malformed, pos = malformed or "nested too deeply", start + 1
            continue
        except ValueError:  # an integer past the int/str conversion limit (4,300 digits)
            malformed, pos = malformed or "a number with too many digits", start + 1
            continue
        if _looks_like_call(value):
            return value
        decoded, pos = True, end
    if malformed is not None:  # the outermost object is broken: say so rather than blame an inner one
        raise _CallError(f"Invalid tool call: malformed JSON ({malformed}).")
    if decoded:
        raise _CallError('Invalid tool call: the JSON is not a call object {"name": …, "arguments": {…}}.')
    raise _CallError("No tool call found in the reply.")


def _decode(text: str, start: int) -> Any:
    try:
        return _DECODER.raw_decode(text, start)[0]
    except (ValueError, RecursionError):
        return None


def _looks_like_call(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, dict) for v in value)
    return isinstance(value, dict) and ("name" in value or "function" in value or "tool_calls" in value)


def _normalise(value: Any) -> tuple[str, dict[str, Any]]:
    """``(name, arguments)`` from any accepted call shape."""
    if isinstance(value, dict) and "tool_calls" in value:
        value = value["tool_calls"]
        if not isinstance(value, list) or not value:
            raise _CallError("Invalid tool call: 'tool_calls' is empty.")
    if isinstance(value, list):
        if len(value) != 1:
            raise _CallError(f"Invalid reply: {len(value)} tool calls; make one call per turn.")
        value = value[0]
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise _CallError('Invalid tool call: expected {"name": <function>, "arguments": {…}}.')
    arguments = value.get("arguments", value.get("parameters"))
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):  # OpenAI sends arguments as a JSON string
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            raise _CallError("Invalid tool call: 'arguments' is a string but not valid JSON.") from None
    if not isinstance(arguments, dict):
        raise _CallError("Invalid tool call: 'arguments' must be a JSON object.")
    return value["name"], arguments


def _call_object(action: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON call object of a native call expression such as ``guess(number=50)`` or ``guess(50)``."""
    try:
        name, args, kwargs = parse_call(action)
    except InvalidAction as e:
        raise ValueError(f"cannot render {action!r} as a tool call: {e.reason}") from None
    if args:
        schema = next((t["function"] for t in tools if t.get("function", {}).get("name") == name), None)
        if schema is None:
            raise ValueError(f"cannot name the positional arguments of {action!r}: no tool {name!r} is known")
        names = list(schema["parameters"]["properties"])
        if len(args) > len(names):
            raise ValueError(f"{action!r} passes {len(args)} positional arguments; {name} takes {len(names)}")
        kwargs = {**dict(zip(names, args)), **kwargs}
    return {"name": name, "arguments": kwargs}
