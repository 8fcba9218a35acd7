"""The terminal env's text layer: reading an action (a command or a tool call) and rendering a result.

Pure functions, kept apart from the env so they are tested without a sandbox.

>>> parse_action('bash(command="ls -la")'), parse_action("submit"), parse_action("{ echo hi; }")
(('bash', 'ls -la'), ('submit', ''), ('bash', '{ echo hi; }'))
"""

from __future__ import annotations

import json
import re
from typing import Any

from sandboxes import ShellResult

from ..core.errors import InvalidAction
from ..core.tool_env import parse_call

STREAM_CHARS = 8_000
CALL_PATTERN = re.compile(r"^(bash|submit)\s*\(", re.DOTALL)
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "bash", "description": "Run a shell command in the task's persistent bash session.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "the command"}},
                       "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "submit", "description": "Finish: the task's tests then run and score your work.",
        "parameters": {"type": "object", "properties": {}, "required": []}}},
]


def parse_action(text: str) -> tuple[str, str]:
    """``("bash", command)`` or ``("submit", "")``. A plain string is a command; tool calls are unwrapped."""
    if text.lower() in ("submit", "submit()"):
        return "submit", ""
    if "\x00" in text:
        raise InvalidAction("Invalid command: it contains NUL bytes, which a shell command cannot hold.")
    looks_like_json = text.startswith("{") and _is_json_object(text)
    if not (looks_like_json or CALL_PATTERN.match(text)):
        return "bash", text
    try:
        name, args, kwargs = parse_call(text)
    except (RecursionError, ValueError, MemoryError):  # nesting or digits past what the decoder takes
        raise InvalidAction("Invalid tool call: the JSON is nested too deeply or holds a number too long to "
                            'read; send bash(command="...") with a plain string.') from None
    if name == "submit":
        return "submit", ""
    if name != "bash":
        raise InvalidAction(f"Unknown tool {name!r}; the tools are bash(command) and submit().")
    command = kwargs.get("command", args[0] if args else None)
    if not isinstance(command, str) or not command.strip():
        raise InvalidAction('Invalid call: bash needs a non-empty string argument, e.g. bash(command="ls").')
    if "\x00" in command:
        raise InvalidAction("Invalid command: it contains NUL bytes, which a shell command cannot hold.")
    return "bash", command


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError, MemoryError):  # deep nesting is not a call we can read: a command
        return False


def clip(text: str, limit: int = STREAM_CHARS) -> str:
    """Keep the head and tail of ``text`` with a marker saying how much of the middle was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n…[{len(text) - 2 * half} characters truncated]…\n{text[-half:]}"


def render_result(result: ShellResult, timeout: float) -> str:
    """What the agent sees after a command: stdout, stderr, notes, then ``[exit code N] cwd$``."""
    parts = []
    stdout = result.stdout.decode("utf-8", errors="replace")
    stderr = result.stderr.decode("utf-8", errors="replace")
    if stdout:
        parts.append(clip(stdout).rstrip("\n"))
    if stderr:
        parts.append("[stderr]\n" + clip(stderr).rstrip("\n"))
    if result.timed_out:
        parts.append(f"[the command ran past {timeout:g} s and was killed]")
    if result.restarted == "exited":
        parts.append(f"[the shell exited; a new shell was started in {result.cwd} (variables reset, files kept)]")
    elif result.restarted == "stuck":
        parts.append(f"[the shell itself was stuck; a new shell was started in {result.cwd} "
                     "(variables reset, files kept)]")
    parts.append(f"[exit code {result.exit_code}] {result.cwd}$")
    return "\n".join(parts)
