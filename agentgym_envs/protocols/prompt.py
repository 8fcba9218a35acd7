"""The first prompt under a protocol: one voice for the reply format.

The env owns the task and the legal moves; the protocol owns the reply format. An env's text may say how
to reply in its native grammar ("Reply with only the number (1-9) of the empty cell you mark."): that is
right under ``plain`` (the reply *is* the native action) and contradicts every other protocol ("Reply in
two parts: Thought … Action …"). So an env declares each such phrase once, in its ``reply_format`` table,
with the protocol-neutral wording that replaces it (often the same grammar said as what a move *is*, or
``""`` to drop it). Under a protocol whose ``shows_env_format`` is false the wrapper rewrites the system
prompt, the instruction and the first observation with that table, then adds the protocol's format
instructions to the system prompt and its one-line :meth:`~.base.ActionProtocol.reminder` to the end of
the first observation. Under ``plain`` the env's text is shown unchanged.

>>> class Env:
...     reply_format = {"Reply with only the cell number.": "A move is a cell number."}
>>> observation, info = first_prompt(get_protocol("react"), Env(), "Board. Your move.",
...                                  {"system_prompt": "Tic-tac-toe. Reply with only the cell number."})
>>> info["system_prompt"].splitlines()[0]
'Tic-tac-toe. A move is a cell number.'
>>> observation
"Board. Your move.\\n\\nReply with 'Thought: …', then 'Action: <action>' on the last line."
"""

from __future__ import annotations

from typing import Any, Mapping

from .base import ActionProtocol, get_protocol

__all__ = ["first_prompt", "neutral_text", "reply_format_table"]


def reply_format_table(env: Any) -> Mapping[str, str]:
    """The env's ``reply_format`` table (phrase as the env writes it -> protocol-neutral wording), or ``{}``."""
    table = getattr(env, "reply_format", None)
    return table if isinstance(table, Mapping) else {}


def neutral_text(text: str, table: Mapping[str, str]) -> str:
    """``text`` with each reply-format phrase of ``table`` replaced by its neutral wording.

    A phrase replaced by ``""`` takes one space or newline that followed it along, so no gap is left.

    >>> neutral_text("Go. Reply 'guess <w>'. Win.", {"Reply 'guess <w>'.": ""})
    'Go. Win.'
    """
    for phrase, neutral in table.items():
        if not phrase or phrase not in text:
            continue
        if not neutral:
            for follower in (" ", "\n"):
                text = text.replace(phrase + follower, "")
        text = text.replace(phrase, neutral)
    return text


def first_prompt(protocol: ActionProtocol, env: Any, observation: str,
                 info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The reset's ``observation`` and ``info`` as a model sees them under ``protocol`` (``info`` in place)."""
    if not protocol.shows_env_format:
        table = reply_format_table(env)
        observation = neutral_text(observation, table)
        for key in ("system_prompt", "instruction"):
            if isinstance(info.get(key), str):
                info[key] = neutral_text(info[key], table)
    fmt = protocol.instructions(env)
    prompt = info.get("system_prompt") or ""
    info["system_prompt"] = f"{prompt}\n\n{fmt}" if prompt else fmt
    reminder = protocol.reminder(env)
    if reminder:
        observation = f"{observation.rstrip()}\n\n{reminder}"
    return observation, info
