"""Connect Four as a PettingZoo AEC text env (``agentgym/ConnectFour-v0``).

Moves are column numbers ``1``–``7`` (also ``"column 4"``, ``"drop 4"``). player_0 is X and moves first.
Win +1, loss -1, draw (full board) 0; an illegal move (a full column, anything else) forfeits.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..aec import TurnBasedTextEnv
from ..game import normalise
from .policy import scripted
from .rules import COLS, ConnectFour

_MOVE = re.compile(r"^(?:(?:play|drop|move|put|col|column)\s*(?:in|into|at)?\s*(?:col|column)?\s*)?(\d)$")


class ConnectFourEnv(TurnBasedTextEnv):
    metadata = {"render_modes": ["ansi", "human"], "name": "connect_four_v0", "is_parallelizable": False}
    instruction = (
        "Connect Four on a board of 7 columns and 6 rows. Players take turns dropping a disc into a column "
        "(numbered 1–7 from the left); it falls to the lowest empty row. player_0 plays X and moves first, "
        "player_1 plays O. Four of your discs in a row, column or diagonal wins (+1); a full board is a draw (0). "
        "Reply with a column number. An illegal move (a full column, anything that is not a column number) loses at once (-1)."
    )
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Reply with only the number (1-7) of the column you drop your disc in.':
            'A move is the number (1-7) of the column you drop your disc in.',
        'Reply with a column number.': '',
    }
    system_prompt = "You are playing Connect Four. Reply with only the number (1-7) of the column you drop your disc in."
    scripted_policy = staticmethod(scripted)

    def _new_game(self, rng: np.random.Generator, options: dict[str, Any]) -> ConnectFour:
        return ConnectFour()

    def _canonical(self, text: str) -> str:
        match = _MOVE.match(normalise(text))
        return match.group(1) if match else text

    def _render(self, player: int) -> str:
        board = self.game.board
        last = ""
        if board.moves:
            who = "You" if (len(board.moves) - 1) % 2 == player else "Your opponent"
            last = f"{who} dropped a disc in column {board.moves[-1] + 1}.\n"
        grid = "\n".join("|" + "|".join(row) + "|" for row in board.rows_text())
        numbers = " " + " ".join(str(c + 1) for c in range(COLS))
        return f"{last}You play {'XO'[player]}. Board (top row first, '.' is empty):\n{grid}\n{numbers}"


def env(render_mode: str | None = None) -> ConnectFourEnv:
    """The AEC env (registered entry point)."""
    return ConnectFourEnv(render_mode=render_mode)
