"""Python methods built from an env's tool schemas, for trainers that learn tools from signatures.

TRL's ``GRPOTrainer`` (through transformers' ``get_json_schema``) reads a tool off a Python callable: its
``__name__``, its signature with type hints, and a Google-style docstring with one ``Args:`` line per
parameter. An agentgym tool env describes its tools as OpenAI function schemas (``info["tools"]``).
:func:`build_tool_method` turns one schema into a function whose introspection says what the schema says.

Nothing the env wrote is executed: the function is a closure over ``(*args, **kwargs)``, and its
``__signature__``, ``__annotations__``, ``__doc__`` and ``__name__`` are assigned from checked schema
fields (names must be plain identifiers; descriptions are flattened to one line and cleared of the words a
docstring parser treats as section headers). Because the real parameters are ``*args, **kwargs``, a
model's wrong or unknown arguments never raise a Python ``TypeError``: the call is forwarded as
``self._call_tool(name, args, kwargs)`` and the env answers it with an invalid-action observation (the
instance is taken positional-only, so even an argument named ``self`` arrives as data).

>>> schema = {"type": "function", "function": {"name": "guess", "description": "Guess the number.",
...           "parameters": {"type": "object", "properties": {"number": {"type": "integer",
...           "description": "your guess."}}, "required": ["number"]}}}
>>> method = build_tool_method(schema)
>>> method.__name__, str(inspect.signature(method))
('guess', '(self, number: int) -> str')
>>> print(method.__doc__)
Guess the number.
<BLANKLINE>
Args:
    number: your guess.
"""

from __future__ import annotations

import inspect
import keyword
import re
from typing import Any, Callable, Literal

from ..core.errors import AgentGymError

#: Names a generated tool may not take: TRL calls ``reset``/``get_reward`` itself and skips ``_``-names.
RESERVED_NAMES = frozenset({"reset", "get_reward"})
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 400
MAX_ENUM_VALUES = 64

_JSON_TO_PYTHON: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool,
                                    "array": list, "object": dict}
_SECTION_WORDS = re.compile(r"\b(Args|Arguments|Returns|Raises|Parameters)\s*:", re.IGNORECASE)
_CHOICES = re.compile(r"\(\s*choices\s*:", re.IGNORECASE)


class ToolSchemaError(AgentGymError, ValueError):
    """An env's tool schema cannot be turned into a Python method (a bad name, a malformed schema)."""


def check_identifier(name: Any, what: str) -> str:
    """``name`` if it can be a Python parameter or method name, else :class:`ToolSchemaError`."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or len(name) > MAX_NAME_CHARS:
        raise ToolSchemaError(f"expected {what} to be a Python identifier of at most {MAX_NAME_CHARS} characters "
                              f"(letters, digits, _; not a keyword), got {name!r:.80}; rename it in the env's @tool")
    return name


def clean_description(text: Any, fallback: str) -> str:
    """One line of at most ``MAX_DESCRIPTION_CHARS`` that a Google-style docstring parser reads as plain text."""
    line = " ".join(str(text).split()) if isinstance(text, str) else ""
    line = _CHOICES.sub("(choices -", _SECTION_WORDS.sub(lambda m: m.group(1) + " -", line))
    if len(line) > MAX_DESCRIPTION_CHARS:
        line = line[: MAX_DESCRIPTION_CHARS - 1] + "…"
    return line or fallback


def annotation_for(prop: Any) -> Any:
    """The Python type hint for a JSON-schema property (``Literal`` for a small scalar ``enum``; ``str`` if unknown)."""
    if not isinstance(prop, dict):
        return str
    values = prop.get("enum")
    if (isinstance(values, list) and 0 < len(values) <= MAX_ENUM_VALUES
            and all(isinstance(v, (str, int, float, bool)) for v in values)):
        return Literal[tuple(dict.fromkeys(values))]
    kind = prop.get("type")
    return _JSON_TO_PYTHON.get(kind, str) if isinstance(kind, str) else str


def _parameters(function: dict[str, Any], tool: str) -> list[tuple[str, Any, dict[str, Any], bool]]:
    """``(name, annotation, property, required)`` per parameter: required ones first, each group in schema order."""
    spec = function.get("parameters") or {}
    properties = _or(spec.get("properties"), {}) if isinstance(spec, dict) else None
    required = _or(spec.get("required"), []) if isinstance(spec, dict) else None
    if not isinstance(properties, dict) or not isinstance(required, list):
        raise ToolSchemaError(f"expected tool {tool!r} to have parameters {{'properties': {{...}}, "
                              f"'required': [...]}}, got {spec!r:.120}")
    params = []
    for name, prop in properties.items():
        check_identifier(name, f"a parameter name of tool {tool!r}")
        if name == "self":
            raise ToolSchemaError(f"expected tool {tool!r} to have no parameter named 'self'; rename it")
        params.append((name, annotation_for(prop), prop if isinstance(prop, dict) else {}, name in required))
    return sorted(params, key=lambda p: not p[3])  # a stable sort keeps the schema order within each group


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _docstring(summary: str, params: list[tuple[str, Any, dict[str, Any], bool]]) -> str:
    lines = [summary]
    if params:
        lines += ["", "Args:"]
        lines += [f"    {name}: {clean_description(prop.get('description'), f'the {name} argument.')}"
                  for name, _, prop, _ in params]
    return "\n".join(lines)


def _default(prop: dict[str, Any]) -> Any:
    value = prop.get("default")
    return value if isinstance(value, (str, int, float, bool)) else None


def build_tool_method(schema: Any) -> Callable[..., str]:
    """A method ``name(self, <typed params>) -> str`` that forwards to ``self._call_tool(name, args, kwargs)``."""
    function = schema.get("function") if isinstance(schema, dict) else None
    if not isinstance(function, dict):
        raise ToolSchemaError(f"expected an OpenAI tool schema {{'type': 'function', 'function': {{...}}}}, "
                              f"got {schema!r:.120}")
    name = check_identifier(function.get("name"), "a tool name")
    if name.startswith("_") or name in RESERVED_NAMES:
        raise ToolSchemaError(f"expected a tool name that is public and not one of {sorted(RESERVED_NAMES)}, "
                              f"got {name!r}; TRL would not expose it as a tool")
    params = _parameters(function, name)

    def method(instance: Any, /, *args: Any, **kwargs: Any) -> str:  # positional-only: a "self" argument is data
        return instance._call_tool(name, args, kwargs)

    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    signature += [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=hint,
                                    default=inspect.Parameter.empty if required else _default(prop))
                  for p, hint, prop, required in params]
    method.__signature__ = inspect.Signature(signature, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = {**{p: hint for p, hint, _, _ in params}, "return": str}
    method.__name__ = method.__qualname__ = name
    method.__doc__ = _docstring(clean_description(function.get("description"), f"The {name} tool."), params)
    method.__agentgym_parameters__ = tuple(p for p, _, _, _ in params)  # type: ignore[attr-defined]
    return method
