"""The rules contract of a multi-agent game, and small text helpers the adapters share.

A game's ``rules.py`` is pure Python: no PettingZoo, no text rendering, no RNG of its own (chance is resolved
from a ``numpy.random.Generator`` handed to the constructor, e.g. the whole deck is shuffled up front), so
it can be property-tested and searched (minimax, Monte Carlo) quickly. The PettingZoo adapter
(:class:`~agentgym_envs.games.multiagent.aec.TurnBasedTextEnv`) only needs what :class:`GameState` lists.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

#: Actions are matched after this normalisation, so ``" Bet. "`` and ``"bet"`` are the same move.
_SPACES = re.compile(r"\s+")
_EDGE = " \t\n.!?;:'\"`*[](){}<>"


class GameState(Protocol):
    """One game in progress. Players are numbered ``0 .. num_players - 1``.

    ``apply`` is only called with an element of ``legal_actions()``: parsing model text and the
    illegal-move rule belong to the adapter, so the rules never see bad input.
    """

    num_players: int

    def current_player(self) -> int | None:
        """Whose turn it is, or ``None`` once the game is over."""
        ...

    def legal_actions(self) -> list[str]:
        """Canonical action strings the current player may choose from (empty once over)."""
        ...

    def apply(self, action: str) -> None:
        """Play a legal action for the current player (mutates the state)."""
        ...

    def returns(self) -> tuple[float, ...] | None:
        """Each player's payoff in ``[-1, 1]`` once the game is over, else ``None``."""
        ...

    def view(self, player: int) -> dict[str, Any]:
        """What ``player`` knows (its information set) as JSON-able data: scripted policies and
        ``state_key`` are built on it, so two states a player cannot tell apart give equal views."""
        ...


def normalise(text: str) -> str:
    """Lower-case, collapse whitespace, strip surrounding punctuation and brackets.

    >>> normalise("  [Bet]. ")
    'bet'
    """
    return _SPACES.sub(" ", text.lower()).strip(_EDGE).strip()


def clip(text: str, limit: int = 60) -> str:
    """A short quoted echo of a move for messages (never the whole 1 MB of a hostile action)."""
    return repr(text[:limit] + ("…" if len(text) > limit else ""))


def join_moves(actions: list[str], limit: int = 12) -> str:
    """``"a, b, c"``; past ``limit`` items the middle is elided but the last two stay (the full list is in
    the infos).

    >>> join_moves([str(i) for i in range(20)] + ["liar"], limit=6)
    '0, 1, 2, 3, …, 19, liar (21 in all)'
    """
    if len(actions) <= limit:
        return ", ".join(actions)
    return ", ".join(actions[: limit - 2]) + ", …, " + ", ".join(actions[-2:]) + f" ({len(actions)} in all)"
