"""Tool envs: methods decorated with :func:`tool` become OpenAI-style function schemas and actions.

The native action grammar of a tool env is a call, written either as JSON
``{"name": "guess", "arguments": {"number": 42}}`` or as a call expression ``guess(number=42)`` /
``guess(42)`` (literal arguments only, parsed with :mod:`ast`, never evaluated). The protocol layer turns
the formats models emit (OpenAI ``tool_calls``, ``<tool_call>`` tags) into the JSON form.

A tool returns either a string (the observation) or a :class:`~agentgym_envs.core.text_env.Step`
(to give reward or end the episode). Wrong names and arguments become invalid-action observations that
show the expected signature.

>>> class Echo(ToolEnv):
...     def _reset(self, options):
...         return "Say something.", {"instruction": "Echo a word."}
...     @tool
...     def say(self, word: str) -> str:
...         '''Say a word.
...
...         Args:
...             word: the word to say.
...         '''
...         return f"You said {word}."
>>> env = Echo()
>>> _ = env.reset(seed=0)
>>> env.step('say(word="hi")')[0], env.step('{"name": "say", "arguments": {"word": "yo"}}')[0]
('You said hi.', 'You said yo.')
>>> env.tools[0]["function"]["parameters"]["required"]
['word']
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import re
import types
import typing
from typing import Any, Callable, ClassVar

from .errors import InvalidAction
from .text_env import Step, TextEnv

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


def tool(fn: Callable) -> Callable:
    """Mark a method of a :class:`ToolEnv` as a tool the agent can call."""
    fn.__agentgym_tool__ = True
    return fn


def _arg_docs(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary and ``Args:`` descriptions."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary = lines[0] if lines else ""
    described: dict[str, str] = {}
    in_args, current = False, ""
    for line in lines[1:]:
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        match = re.match(r"\s+(\w+)(?: \(.*?\))?: (.*)", line) if in_args else None
        if match:
            current = match.group(1)
            described[current] = match.group(2).strip()
        elif in_args and line and not line.startswith(" "):
            in_args = False
        elif in_args and line.strip() and described:  # a continuation line of the last argument
            described[current] += " " + line.strip()
    return summary, described


def _json_type(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:  # Optional[X] is described as X (None is the default, not a value to send)
            return _json_type(members[0])
    if origin is typing.Literal:
        values = list(typing.get_args(annotation))
        return {"type": _JSON_TYPES.get(type(values[0]), "string"), "enum": values}
    if origin in (list, tuple):
        return {"type": "array"}
    return {"type": _JSON_TYPES.get(annotation, "string")}


def tool_schema(method: Callable) -> dict[str, Any]:
    """The OpenAI function schema of a tool method (from its signature, type hints and docstring)."""
    summary, described = _arg_docs(method.__doc__ or "")
    hints = typing.get_type_hints(method)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(method).parameters.items():
        if name == "self":
            continue
        prop = _json_type(hints.get(name, str))
        if name in described:
            prop["description"] = described[name]
        properties[name] = prop
        if param.default is inspect.Parameter.empty:
            required.append(name)
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": method.__name__, "description": summary, "parameters": parameters}}


def _load_json(text: str, what: str) -> Any:
    """``json.loads(text)``, with every way agent-written JSON can fail turned into ``InvalidAction``.

    Besides syntax errors, Python's decoder raises ``RecursionError`` on deep nesting (``[[[[…``) and
    ``ValueError`` on integers past the int/str conversion limit (4,300 digits); both are the agent's.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidAction(f"Invalid tool call: {what} is malformed JSON ({e.msg} at position {e.pos}).") from None
    except RecursionError:
        raise InvalidAction(f"Invalid tool call: {what} nests too deeply; send flat arguments.") from None
    except ValueError:  # the int/str conversion limit
        raise InvalidAction(f"Invalid tool call: {what} holds a number with too many digits.") from None


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """Parse ``name(args)`` or ``{"name": ..., "arguments": {...}}``; raise ``InvalidAction`` otherwise."""
    text = text.strip()
    if text.startswith("{"):
        call = _load_json(text, "the call")
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise InvalidAction('Invalid tool call: expected {"name": <tool>, "arguments": {...}}.')
        arguments = call.get("arguments", {})
        if isinstance(arguments, str):  # OpenAI sends arguments as a JSON string
            arguments = _load_json(arguments, "'arguments'") if arguments.strip() else {}
        if not isinstance(arguments, dict):
            raise InvalidAction("Invalid tool call: 'arguments' must be a JSON object.")
        return call["name"], [], arguments
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise InvalidAction("Invalid tool call: expected name(arg=value, …) or a JSON call object.") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise InvalidAction("Invalid tool call: expected name(arg=value, …) or a JSON call object.")
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise InvalidAction("Invalid tool call: arguments must be literals (strings, numbers, lists).") from None
    if len(kwargs) != len(node.keywords):
        raise InvalidAction("Invalid tool call: **kwargs are not allowed.")
    return node.func.id, args, kwargs


def _coerce(value: Any, annotation: Any, name: str) -> Any:
    expected = _json_type(annotation)
    kind = expected["type"]
    if "enum" in expected and value not in expected["enum"]:
        raise InvalidAction(f"Invalid argument {name}: expected one of {expected['enum']}, got {value!r}.")
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    checks = {"string": str, "integer": int, "number": float, "boolean": bool, "array": (list, tuple), "object": dict}
    ok = isinstance(value, checks[kind]) and not (kind in ("integer", "number") and isinstance(value, bool))
    if not ok:
        raise InvalidAction(f"Invalid argument {name}: expected {kind}, got {type(value).__name__} {value!r:.60}.")
    return value


class ToolEnv(TextEnv):
    """A text env whose actions are calls to its ``@tool`` methods."""

    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Call exactly one tool per turn.': '',
    }
    system_prompt: ClassVar[str] = "You are an agent with tools. Call exactly one tool per turn."
    _tool_names: ClassVar[tuple[str, ...]] = ()
    _tool_schemas: ClassVar[list[dict[str, Any]]] = []
    _tool_signatures: ClassVar[dict[str, tuple[inspect.Signature, dict[str, Any]]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._tool_names = tuple(
            name for name, member in inspect.getmembers(cls, callable) if getattr(member, "__agentgym_tool__", False)
        )
        cls._tool_schemas = [tool_schema(getattr(cls, name)) for name in cls._tool_names]
        # Signatures and resolved hints per tool, computed once: binding runs on every step.
        cls._tool_signatures = {
            name: (inspect.signature(getattr(cls, name), eval_str=True), typing.get_type_hints(getattr(cls, name)))
            for name in cls._tool_names
        }

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas (a per-instance copy, so a consumer editing one cannot change the class's)."""
        if "_instance_tool_schemas" not in self.__dict__:
            self._instance_tool_schemas = copy.deepcopy(self._tool_schemas)
        return self._instance_tool_schemas

    def _step(self, action: str) -> Step:
        name, args, kwargs = parse_call(action)
        if name not in self._tool_names:
            raise InvalidAction(f"Unknown tool {name!r}; available tools: {', '.join(self._tool_names)}.")
        method = getattr(self, name)
        bound = self._bind(name, args, kwargs)
        result = method(*bound.args, **bound.kwargs)
        return result if isinstance(result, Step) else Step(observation=str(result))

    def _bind(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> inspect.BoundArguments:
        signature, hints = self._tool_signatures[name]
        try:
            bound = signature.bind(None, *args, **kwargs)  # None stands in for self (an unbound signature)
        except TypeError as e:
            shown = str(signature).replace("(self, ", "(").replace("(self)", "()")
            raise InvalidAction(f"Invalid call to {name}{shown}: {e}.") from None
        bound.arguments.pop("self", None)
        for name, value in list(bound.arguments.items()):
            bound.arguments[name] = _coerce(value, hints.get(name, str), name)
        return bound
