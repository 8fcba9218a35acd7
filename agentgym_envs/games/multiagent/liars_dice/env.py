"""Liar's Dice as a PettingZoo AEC text env (``agentgym/LiarsDice-v0``), one round per episode.

Moves: ``bid <quantity> <face>`` (also ``"3 5"``, ``"three 5s"``, ``"bid 3x5"``) and ``liar`` (also ``call``,
``challenge``). The caller loses (-1) if the bid holds, else the bidder loses; an illegal move forfeits.
Make kwarg ``dice`` (per player, default 5).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..aec import TurnBasedTextEnv
from ..game import normalise
from .policy import scripted
from .rules import LiarsDice

_NUMBERS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
_FACES = {"ones": "1", "twos": "2", "threes": "3", "fours": "4", "fives": "5", "sixes": "6", "sixs": "6"}
#: Quantities have at most 6 significant digits, so ``int()`` never meets a 5,000-digit string.
_BID = re.compile(r"^(?:bid|raise|i bid)?\s*0*(\d{1,6})\s*(?:x|×|\*|of|dice of|dice showing)?\s*(\d)s?$")
_CALL = {"liar", "call", "challenge", "call liar", "doubt", "dudo", "liar!"}


class LiarsDiceEnv(TurnBasedTextEnv):
    metadata = {"render_modes": ["ansi", "human"], "name": "liars_dice_v0", "is_parallelizable": False}
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        "Reply with exactly one move: 'bid <quantity> <face>' or 'liar'.":
            "A move is 'bid <quantity> <face>' or 'liar'.",
        "or reply 'liar' to challenge the last bid": "or challenge the last bid with 'liar'",
    }
    system_prompt = "You are playing Liar's Dice. Reply with exactly one move: 'bid <quantity> <face>' or 'liar'."
    scripted_policy = staticmethod(scripted)

    def __init__(self, dice: int = 5, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        if not 1 <= dice <= 10:
            raise ValueError(f"dice per player must be between 1 and 10, got {dice}")
        self.dice = dice
        self.instruction = (
            f"Liar's Dice for two players with {dice} six-sided dice each, rolled in secret. player_0 opens with a bid "
            "'bid <quantity> <face>', a claim that at least that many dice among ALL dice (yours and your opponent's) "
            "show that face (ones are not wild). Players alternate: either raise the bid (a higher quantity, or the "
            "same quantity with a higher face) or reply 'liar' to challenge the last bid. Then all dice are revealed: "
            "if the bid holds the challenger loses (-1), otherwise the bidder loses. An illegal move loses at once (-1)."
        )

    def _new_game(self, rng: np.random.Generator, options: dict[str, Any]) -> LiarsDice:
        return LiarsDice(rng, dice=self.dice)

    def _canonical(self, text: str) -> str:
        words = normalise(text)
        if words in _CALL:
            return "liar"
        words = " ".join(_FACES.get(w, _NUMBERS.get(w, w)) for w in words.split())
        match = _BID.match(words)
        return f"bid {int(match.group(1))} {int(match.group(2))}" if match else text

    def _render(self, player: int) -> str:
        view = self.game.view(player)
        lines = [f"Your dice: {' '.join(map(str, view['dice']))}. Your opponent has {view['opponent_dice_count']} hidden dice."]
        bids = [f"{'You' if p == player else 'Opponent'}: {q} × {f}" for p, q, f in view["bids"]]
        lines.append("Bids so far: " + ("; ".join(bids) if bids else "none (opening bid)") + ".")
        if "called_by" in view:
            caller = "You" if view["called_by"] == player else "Your opponent"
            _, q, f = view["bids"][-1]
            lines.append(f"{caller} called liar on {q} × {f}. Opponent's dice: {' '.join(map(str, view['opponent_dice']))}; "
                         f"there were {self.game.count(f)} dice showing {f}.")
        else:
            lines.append("Moves: 'bid <quantity> <face>' above the last bid" + (", or 'liar'." if view["bids"] else "."))
        return "\n".join(lines)


def env(dice: int = 5, render_mode: str | None = None) -> LiarsDiceEnv:
    """The AEC env (registered entry point)."""
    return LiarsDiceEnv(dice=dice, render_mode=render_mode)
