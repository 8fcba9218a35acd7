"""A small JSON-schema validator for task configs (the subset the families' schemas use; no dependency).

Supported keywords: ``type`` (object, array, string, integer, number, boolean), ``properties``,
``required``, ``additionalProperties: false`` (or a schema for the extra values), ``enum``, ``minimum``,
``maximum``, ``minLength``, ``maxLength``, ``pattern`` (full match), ``items``, ``minItems``,
``maxItems``, ``uniqueItems``, ``minProperties``, ``maxProperties``. A schema using anything else is a
bug in the family (``SchemaDefinitionError``), never the designer's failure.

>>> schema = {"type": "object", "properties": {"size": {"type": "integer", "minimum": 2}}, "required": ["size"]}
>>> validate({"size": 1}, schema)
['$.size: expected an integer >= 2, got 1']
>>> validate({"size": 3}, schema)
[]
"""

from __future__ import annotations

import re
from typing import Any

KNOWN = frozenset({"type", "properties", "required", "additionalProperties", "enum", "minimum", "maximum",
                   "minLength", "maxLength", "pattern", "items", "minItems", "maxItems", "uniqueItems",
                   "minProperties", "maxProperties", "description"})
MAX_PROBLEMS = 20
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


class SchemaDefinitionError(ValueError):
    """A family's schema uses a keyword this validator does not know (a bug in the family, not the config)."""


def validate(value: Any, schema: dict, path: str = "$") -> list[str]:
    """Every way ``value`` breaks ``schema`` ("<path>: expected X, got Y"); empty when it conforms."""
    problems: list[str] = []
    _check(value, schema, path, problems)
    return problems[:MAX_PROBLEMS]


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
    return isinstance(value, _TYPES[kind])


def _check(value: Any, schema: dict, path: str, problems: list[str]) -> None:
    unknown = set(schema) - KNOWN
    if unknown:
        raise SchemaDefinitionError(f"schema at {path} uses unsupported keywords {sorted(unknown)}")
    kind = schema.get("type")
    if kind is not None and not _type_ok(value, kind):
        problems.append(f"{path}: expected {'an' if kind[0] in 'aeiou' else 'a'} {kind}, got {_show(value)}")
        return
    if "enum" in schema and value not in schema["enum"]:
        shown = ", ".join(map(repr, schema["enum"][:12])) + (", …" if len(schema["enum"]) > 12 else "")
        problems.append(f"{path}: expected one of {shown}; got {_show(value)}")
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(value, schema, path, problems)
    elif isinstance(value, str):
        _check_string(value, schema, path, problems)
    elif isinstance(value, list):
        _check_array(value, schema, path, problems)
    elif isinstance(value, dict):
        _check_object(value, schema, path, problems)


def _check_number(value: float, schema: dict, path: str, problems: list[str]) -> None:
    noun = "an integer" if schema.get("type") == "integer" else "a number"
    if "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{path}: expected {noun} >= {schema['minimum']}, got {value}")
    if "maximum" in schema and value > schema["maximum"]:
        problems.append(f"{path}: expected {noun} <= {schema['maximum']}, got {value}")


def _check_string(value: str, schema: dict, path: str, problems: list[str]) -> None:
    if len(value) < schema.get("minLength", 0):
        problems.append(f"{path}: expected at least {schema['minLength']} characters, got {len(value)}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(f"{path}: expected at most {schema['maxLength']} characters, got {len(value)}")
    if "pattern" in schema and re.fullmatch(schema["pattern"], value) is None:
        problems.append(f"{path}: expected text matching {schema['pattern']}, got {_show(value)}")


def _check_array(value: list, schema: dict, path: str, problems: list[str]) -> None:
    if len(value) < schema.get("minItems", 0):
        problems.append(f"{path}: expected at least {schema['minItems']} items, got {len(value)}")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        problems.append(f"{path}: expected at most {schema['maxItems']} items, got {len(value)}")
        return  # do not walk a huge list
    if schema.get("uniqueItems") and len({repr(v) for v in value}) != len(value):
        problems.append(f"{path}: expected distinct items, got repeats")
    if "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{i}]", problems)
            if len(problems) >= MAX_PROBLEMS:
                return


def _check_object(value: dict, schema: dict, path: str, problems: list[str]) -> None:
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            problems.append(f"{path}: expected the key {name!r}, got none")
    if len(value) < schema.get("minProperties", 0):
        problems.append(f"{path}: expected at least {schema['minProperties']} keys, got {len(value)}")
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        problems.append(f"{path}: expected at most {schema['maxProperties']} keys, got {len(value)}")
        return
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            _check(item, properties[key], f"{path}.{key}", problems)
        elif extra is False:
            problems.append(f"{path}: unexpected key {str(key)[:40]!r} (allowed: {', '.join(properties)})")
        elif isinstance(extra, dict):
            _check(item, extra, f"{path}.{str(key)[:40]}", problems)
        if len(problems) >= MAX_PROBLEMS:
            return


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
