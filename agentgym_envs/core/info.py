"""The standard ``info`` keys of the env contract, their types, and when each is present: written once.

:class:`~agentgym_envs.core.text_env.TextEnv` fills them, the multi-agent adapter
(:mod:`agentgym_envs.games.multiagent.aec`) fills its per-agent subset, and :func:`agentgym_envs.checker.check_env`
checks every env against these tables. A new standard key is added here, and the three follow. Which
registered env reports which optional key is measured and tabled in docs/sdk.md ("What `info` holds").

When a key is present (single-agent text envs):

* ``STEP_KEY_TYPES``: on every ``reset`` and ``step`` (also invalid and failed ones).
* ``RESET_KEY_TYPES``: on ``reset`` only (the task and the recommended prompt).
* ``OPTIONAL_KEY_TYPES``: only where the env provides them: ``valid_actions`` when admissible actions can
  be listed, ``tools`` on tool envs.

Multi-agent games (PettingZoo AEC) put ``AGENT_KEY_TYPES`` in every agent's info on every step: no
``infra_error`` or ``metrics`` (pure Python games), but ``view`` (the agent's information set as data)
and ``turn``.
"""

from __future__ import annotations

from typing import Any, TypedDict

TypeSpec = tuple[type, ...]


class StepInfo(TypedDict, total=False):
    """The standard keys of an env's ``info`` dict (envs may add their own beside them)."""

    action_valid: bool
    """False when the last action could not be carried out (the observation says why)."""
    parse_error: str | None
    """Why the last action was rejected; ``None`` when it was valid."""
    won: bool
    """The episode's outcome so far (True once the task is solved or the game won)."""
    score: float
    """The env's own measure of how well the episode is going (a game's payoff, a task's score)."""
    state_key: str
    """Hash of the state as the agent can know it: equal keys, equal situations (across rollouts)."""
    infra_error: str | None
    """Set when the env's own machinery failed (never the agent's doing); the episode is truncated."""
    metrics: dict[str, float]
    """Numbers about the current state worth logging."""
    valid_actions: list[str] | None
    """Admissible actions now, where the env can list them."""
    tools: list[dict[str, Any]] | None
    """OpenAI-style function schemas, on tool envs."""
    instruction: str
    """The task in words (on reset; multi-agent: the rules, on every step)."""
    system_prompt: str
    """The recommended system prompt for a chat model."""
    view: dict[str, Any]
    """Multi-agent only: the agent's information set as data (scripted policies read it)."""
    turn: int
    """Multi-agent only: moves made so far in the game."""


STEP_KEY_TYPES: dict[str, TypeSpec] = {
    "action_valid": (bool,), "parse_error": (str, type(None)), "won": (bool,), "score": (float, int),
    "state_key": (str,), "infra_error": (str, type(None)), "metrics": (dict,),
}
RESET_KEY_TYPES: dict[str, TypeSpec] = {"instruction": (str,), "system_prompt": (str,)}
OPTIONAL_KEY_TYPES: dict[str, TypeSpec] = {"valid_actions": (list, type(None)), "tools": (list, type(None))}
AGENT_KEY_TYPES: dict[str, TypeSpec] = {
    "valid_actions": (list,), "action_valid": (bool,), "parse_error": (str, type(None)), "won": (bool,),
    "score": (float, int), "state_key": (str,), "view": (dict,), "turn": (int,), "instruction": (str,),
    "system_prompt": (str,),
}


def info_problems(info: Any, required: dict[str, TypeSpec], optional: dict[str, TypeSpec] | None = None) -> list[str]:
    """What is wrong with ``info`` against the tables: missing required keys and keys of the wrong type.

    An empty list means it conforms. ``valid_actions``, when listed, must hold strings.

    >>> info_problems({"won": "yes"}, {"won": (bool,), "score": (float, int)})
    ["info['won'] should be bool, got str", "info lacks the standard key 'score'"]
    """
    if not isinstance(info, dict):
        return [f"info should be a dict, got {type(info).__name__}"]
    problems = []
    for table, must in ((required, True), (optional or {}, False)):
        for key, types in table.items():
            if key not in info:
                if must:
                    problems.append(f"info lacks the standard key {key!r}")
            elif not isinstance(info[key], types):
                names = " or ".join(t.__name__ for t in types)
                problems.append(f"info[{key!r}] should be {names}, got {type(info[key]).__name__}")
    actions = info.get("valid_actions")
    if isinstance(actions, list) and not all(isinstance(a, str) for a in actions):
        problems.append("info['valid_actions'] must hold strings")
    return problems
