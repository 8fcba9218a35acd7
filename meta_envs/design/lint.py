"""The static gates on a generated module's source: parse, size, imports (a lint, not the security layer).

These run on the host and only read the source with :mod:`ast`; nothing here executes it. The lint
rejects imports outside :data:`~meta_envs.design.contract.ALLOWED_IMPORTS`, the builtins that reach
files, code or frames (``open``, ``eval``, ``__import__``, ``getattr`` ...) and dunder attributes used
to climb out of Python's objects (``().__class__.__base__.__subclasses__()``). A module that slips past
it is still contained by the sandbox, which is what the tests of the hostile modules check.
"""

from __future__ import annotations

import ast

from . import contract

PARSE_CAP_BYTES = 1 << 20
"""Sources longer than this are not even parsed (the size gate would reject them anyway)."""
FORBIDDEN_NAMES = frozenset({
    "__import__", "__builtins__", "__loader__", "__spec__", "breakpoint", "compile", "delattr", "eval", "exec",
    "exit", "getattr", "globals", "help", "input", "locals", "memoryview", "open", "quit", "setattr", "vars",
})
ALLOWED_DUNDERS = frozenset({
    "__init__", "__name__", "__doc__", "__len__", "__str__", "__repr__", "__eq__", "__lt__", "__hash__",
    "__iter__", "__next__", "__contains__", "__getitem__",
})


def parse_problem(source: object) -> str | None:
    """Why ``source`` is not a module defining ``class Env`` at top level, or None."""
    if not isinstance(source, str):
        return f"expected the module as text, got {type(source).__name__}"
    if len(source) > PARSE_CAP_BYTES:
        return f"expected at most {contract.MAX_SOURCE_BYTES} bytes of source, got {len(source)} characters"
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return f"the module does not parse: {type(e).__name__}: {e}"
    if not any(isinstance(node, ast.ClassDef) and node.name == "Env" for node in tree.body):
        return "expected a top-level `class Env`, found none; define the class the contract names"
    return None


def size_problem(source: str) -> str | None:
    size = len(source.encode("utf-8", errors="surrogatepass"))
    if size > contract.MAX_SOURCE_BYTES:
        return f"expected at most {contract.MAX_SOURCE_BYTES} bytes of source, got {size}; write a smaller module"
    return None


def import_problems(source: str) -> list[str]:
    """Each lint finding as ``line N: ...`` (empty when the module is clean)."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")]
        else:
            names = []
        for name in names:
            if name.split(".")[0] not in contract.ALLOWED_IMPORTS:
                problems.append(f"line {line}: imports {name!r}; expected only {', '.join(sorted(contract.ALLOWED_IMPORTS))}")
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            problems.append(f"line {line}: uses {node.id!r}, which generated envs may not use")
        if isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr not in ALLOWED_DUNDERS:
            problems.append(f"line {line}: reaches the attribute {node.attr!r}, which generated envs may not use")
    return problems
