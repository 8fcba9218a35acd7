"""Tic-tac-toe as a PettingZoo AEC text env (``agentgym/TicTacToe-v0``).

Moves are cell numbers ``1``–``9`` (also ``"cell 5"``, ``"play 5"``, ``"[5]"``). player_0 is X and moves
first. Win +1, loss -1, draw 0; an illegal move forfeits (-1, opponent +1).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..aec import TurnBasedTextEnv
from ..game import normalise
from .policy import scripted
from .rules import EMPTY, TicTacToe

_MOVE = re.compile(r"^(?:(?:play|move|place|put|cell|square|mark|x|o)\s*(?:at|on|in)?\s*)?(\d)$")


class TicTacToeEnv(TurnBasedTextEnv):
    metadata = {"render_modes": ["ansi", "human"], "name": "tictactoe_v0", "is_parallelizable": False}
    instruction = (
        "Tic-tac-toe on a 3×3 grid with cells numbered 1–9, row by row from the top left. player_0 plays X and "
        "moves first, player_1 plays O. On your turn reply with the number of an empty cell (e.g. '5'). Three of "
        "your marks in a row, column or diagonal wins (+1); a full board without a line is a draw (0). An illegal "
        "move (an occupied cell, anything that is not a cell number) loses at once (-1)."
    )
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Reply with only the number (1-9) of the empty cell you mark.':
            'A move is the number (1-9) of the empty cell you mark.',
        "On your turn reply with the number of an empty cell (e.g. '5').":
            "On your turn you mark an empty cell by its number (e.g. '5').",
    }
    system_prompt = "You are playing tic-tac-toe. Reply with only the number (1-9) of the empty cell you mark."
    scripted_policy = staticmethod(scripted)

    def _new_game(self, rng: np.random.Generator, options: dict[str, Any]) -> TicTacToe:
        return TicTacToe()

    def _canonical(self, text: str) -> str:
        match = _MOVE.match(normalise(text))
        return match.group(1) if match else text

    def _render(self, player: int) -> str:
        game: TicTacToe = self.game
        cells = [str(i + 1) if c == EMPTY else c for i, c in enumerate(game.board)]
        rows = [" " + " | ".join(cells[r * 3: r * 3 + 3]) for r in range(3)]
        mark = "X" if player == 0 else "O"
        last = ""
        if game.moves:
            who = "You" if (len(game.moves) - 1) % 2 == player else "Your opponent"
            last = f"{who} marked cell {game.moves[-1]}.\n"
        return f"{last}You play {mark}. Board (numbers are empty cells):\n" + "\n---+---+---\n".join(rows)


def env(render_mode: str | None = None) -> TicTacToeEnv:
    """The AEC env (registered entry point)."""
    return TicTacToeEnv(render_mode=render_mode)
