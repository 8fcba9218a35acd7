"""Hostile actions for fuzzing envs: what a model, a bug or an attacker might send.

Shared by ``check_env`` and the families' own tests so that every env faces the same battery.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

ONE_MB = 1 << 20


@lru_cache(maxsize=1)
def hostile_actions() -> tuple[Any, ...]:
    """A fixed, deterministic list of malformed, huge and injection-style actions (and non-strings)."""
    return (
        "", " ", "\n\n\t", "\x00", "\x00" * 64, "".join(chr(c) for c in range(32)), "\x1b[2J\x1b[31mred",
        "a" * ONE_MB, "☕" * (ONE_MB // 4), "take " + "x" * 100_000 + " from y",
        "\ud800", "\u202e\u2066reversed", "🤖👾" * 100, "ǅ̸͓̖̻͔̫̠̭̜͍̹̝̜̺̠̩͖̟̪̈́̄̔̋̽̅̐̕",
        "{}", "[]", "null", '{"name": 1}', '{"name": "x", "arguments": "not json"}', "{" * 10_000,
        "<action></action>", "<action>" * 1000, "<think>" + "hmm " * 1000, "</think></action><script>alert(1)</script>",
        "Action:", "Thought: x\nAction:\n", "'; DROP TABLE tasks; --", "{{7*7}}", "${HOME} $(rm -rf /) `id`",
        "%s%s%n%x", "\\" * 100, "../../../../etc/passwd", "__import__('os').system('id')", "exit", "quit",
        "reset", "help", "look " * 1000, "go to", "take", "put  in/on ", "search[]", "click[]", "answer()",
        "guess(number=1e309)", "guess(" + "[" * 200 + ")", "guess(number=" + "9" * 5000 + ")",
        b"bytes \xff\xfe", None, 42, 3.5, ["a", "list"], {"a": "dict"},
    )
