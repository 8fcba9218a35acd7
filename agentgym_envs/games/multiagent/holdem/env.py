"""Heads-up Limit Texas Hold'em as a PettingZoo AEC text env (``agentgym/LimitHoldem-v0``), one hand per episode.

Moves: ``fold``, ``check``, ``call``, ``bet``, ``raise`` (``bet`` and ``raise`` are read as each other when only
one is legal). Reward: net chips / 48 (in ``[-1, 1]``); an illegal move forfeits (-1, opponent +1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..aec import TurnBasedTextEnv
from ..game import normalise
from .cards import describe, evaluate, parse_card
from .policy import scripted
from .rules import BET_SIZES, STREETS, LimitHoldem


class LimitHoldemEnv(TurnBasedTextEnv):
    metadata = {"render_modes": ["ansi", "human"], "name": "limit_holdem_v0", "is_parallelizable": False}
    instruction = (
        "Heads-up Limit Texas Hold'em, one hand. Each player gets two private cards; five community cards come "
        "in three rounds (flop 3, turn 1, river 1). player_0 is the button: it posts the small blind (1 chip) and "
        "acts first before the flop; player_1 posts the big blind (2) and acts first afterwards. Bets are fixed: "
        "2 chips before the flop and on the flop, 4 on the turn and river, at most 4 bets per round. Moves: "
        "'fold', 'check', 'call', 'bet', 'raise'. The best five-card hand from your two cards and the board wins "
        "at showdown. Your reward is the chips you win divided by 48. An illegal move loses at once (-1)."
    )
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Reply with exactly one legal move: fold, check, call, bet or raise.':
            'Make exactly one legal move: fold, check, call, bet or raise.',
    }
    system_prompt = "You are playing heads-up Limit Texas Hold'em. Reply with exactly one legal move: fold, check, call, bet or raise."
    scripted_policy = staticmethod(scripted)

    def _new_game(self, rng: np.random.Generator, options: dict[str, Any]) -> LimitHoldem:
        return LimitHoldem(rng)

    def _canonical(self, text: str) -> str:
        word = normalise(text)
        legal = self.game.legal_actions()
        if word in ("bet", "raise") and word not in legal:
            return "raise" if word == "bet" else "bet"
        return word

    def _render(self, player: int) -> str:
        view = self.game.view(player)
        lines = [f"You are {'the button (small blind)' if player == 0 else 'the big blind'}. Your cards: {' '.join(view['hole'])}."]
        lines.append(f"Board: {' '.join(view['board']) or '(none yet)'}. Round: {view['street']}.")
        first = [0, 1, 1, 1]  # who acts first on each street
        for s, actions in enumerate(view["history"]):
            if actions:
                who = [("You" if (first[s] + i) % 2 == player else "Opponent") for i in range(len(actions))]
                lines.append(f"{STREETS[s].capitalize()}: " + "; ".join(f"{w} {a}" for w, a in zip(who, actions)) + ".")
        mine, theirs = view["contrib"]
        lines.append(f"Pot: {mine + theirs} (you put in {mine}, your opponent {theirs}). Bet size this round: {BET_SIZES[self.game.street]}.")
        if "opponent_hole" in view:
            board = [parse_card(c) for c in view["board"]]
            own = describe(evaluate([parse_card(c) for c in view["hole"]] + board))
            other = describe(evaluate([parse_card(c) for c in view["opponent_hole"]] + board))
            lines.append(f"Showdown: you have {own}; your opponent shows {' '.join(view['opponent_hole'])} ({other}).")
        if "chips" in view:
            lines.append(f"Net result: {view['chips']:+d} chips.")
        return "\n".join(lines)


def env(render_mode: str | None = None) -> LimitHoldemEnv:
    """The AEC env (registered entry point)."""
    return LimitHoldemEnv(render_mode=render_mode)
