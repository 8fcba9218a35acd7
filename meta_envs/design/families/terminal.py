"""Terminal configs: a task template and its parameters, made into a shell task whose tests we write.

The designer never writes shell or tests: it picks a template (``grep_lines``, ``count_word``,
``sort_unique``, ``replace_word``) and fills in plain words and lines (lowercase letters, digits and
spaces only, so no parameter can carry shell syntax); the family writes the input file, the reference
solution and the checks, with the expected output computed here in Python and embedded in the check
(never in a file the agent could rewrite). The task runs in ``agentgym/Terminal-v0``'s sandbox
(bubblewrap); a sandbox that cannot start is our ``infra_error``, never the designer's. The instance is
the task's instruction, files and checks. Held out: the shipped ``test``-split tasks.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from agentgym_envs.terminal.env import TerminalEnv
from agentgym_envs.terminal.task import TerminalTask, make_task
from agentgym_envs.terminal.tasks import builtin_tasks

from .base import ConfigError, Family, pick

TEMPLATES = ("grep_lines", "count_word", "sort_unique", "replace_word")
WORD = {"type": "string", "pattern": "[a-z]{2,12}"}
SCHEMA: dict = {
    "type": "object",
    "properties": {
        "template": {"type": "string", "enum": list(TEMPLATES)},
        "word": WORD, "new": WORD,
        "lines": {"type": "array", "items": {"type": "string", "pattern": "[a-z0-9 ]{1,60}"}, "minItems": 2,
                  "maxItems": 40},
    },
    "required": ["template", "lines"],
    "additionalProperties": False,
}
_NEEDS = {"grep_lines": ("word",), "count_word": ("word",), "sort_unique": (), "replace_word": ("word", "new")}


def _heredoc(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines) + "EOF"


def _check_file(name: str, lines: list[str]) -> str:
    return f"diff -q {name} - <<'EOF'\n{_heredoc(lines)}"


def task_of(config: dict) -> TerminalTask:
    """The shell task of a config; :class:`ConfigError` when a parameter is missing or the task is empty."""
    template, lines = config["template"], config["lines"]
    missing = [p for p in _NEEDS[template] if p not in config]
    if missing:
        raise ConfigError(f"expected {', '.join(missing)} for template {template}, got none")
    word, files = config.get("word", ""), {"input.txt": _heredoc(lines)[:-3]}
    hits = [line for line in lines if word in line]
    if template in ("grep_lines", "count_word", "replace_word") and not hits:
        raise ConfigError(f"expected some line to contain {word!r}, got none that does")
    if template == "grep_lines":
        instruction = f"Write every line of input.txt that contains {word} into out.txt, keeping their order."
        solution, tests = [f"grep -F -- {word} input.txt > out.txt"], {"out.txt holds the matching lines": _check_file("out.txt", hits)}
    elif template == "count_word":
        instruction = f"Write into count.txt the number of lines of input.txt that contain {word} (just the number)."
        solution = [f"grep -c -F -- {word} input.txt > count.txt"]
        tests = {"count.txt holds the count": f"[ \"$(tr -d ' \\n' < count.txt)\" = {len(hits)} ]"}
    elif template == "sort_unique":
        instruction = "Write the distinct lines of input.txt, sorted in byte order (C locale), into sorted.txt."
        solution = ["LC_ALL=C sort -u input.txt > sorted.txt"]
        tests = {"sorted.txt holds the distinct lines in order": _check_file("sorted.txt", sorted(set(lines)))}
    else:
        new = config["new"]
        instruction = f"In input.txt, replace every occurrence of {word} with {new}, editing the file in place."
        solution = [f"sed -i 's/{word}/{new}/g' input.txt"]
        tests = {"input.txt has every replacement": _check_file("input.txt", [line.replace(word, new) for line in lines])}
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
    return make_task(f"design/{template}-{digest}", "text", "easy", instruction, solution=solution, tests=tests,
                     files=files)


def build(config: dict) -> TerminalEnv:
    return TerminalEnv(tasks=[task_of(config)], backend="bwrap", command_timeout=10.0)


def _key(task: TerminalTask) -> list[Any]:
    files = sorted([path, content if isinstance(content, str) else content.hex()] for path, content in task.files.items())
    tests = sorted(list(test) for test in getattr(task.verifier, "tests", ()))
    return [task.instruction, files, tests]


def instance_key(config: dict) -> list[Any]:
    return _key(task_of(config))


def held_out() -> list[tuple[str, list[Any]]]:
    return [(task.id, _key(task)) for task in builtin_tasks("test")]


_WORDS = ("apple", "error", "river", "stone", "cloud", "lamp", "tiger", "mango", "plum", "north")


def example(rng: np.random.Generator) -> dict:
    template, word = pick(rng, TEMPLATES), pick(rng, _WORDS)
    lines = [" ".join(pick(rng, _WORDS) for _ in range(int(rng.integers(1, 4)))) for _ in range(int(rng.integers(4, 9)))]
    if not any(word in line for line in lines):
        lines[0] = f"{lines[0]} {word}"
    config = {"template": template, "lines": lines}
    if template != "sort_unique":
        config["word"] = word
    if template == "replace_word":
        config["new"] = pick(rng, [w for w in _WORDS if w != word])
    return config


FAMILY = Family(
    name="terminal",
    description=("A shell task from a template: grep_lines (word, lines: copy the lines containing word), count_word "
                 "(word, lines: count them), sort_unique (lines: sort the distinct lines), replace_word (word, new, "
                 "lines: replace word by new in place). Words are 2-12 lowercase letters; lines 1-60 characters of "
                 "lowercase letters, digits and spaces. Runs in a sandbox. Held out: the shipped test-split tasks."),
    schema=SCHEMA, max_steps=10, build=build, instance_key=instance_key, held_out=held_out, example=example,
)
