"""Kuhn poker as a PettingZoo AEC text env (``agentgym/KuhnPoker-v0``), one hand per episode.

Moves: ``check``, ``bet``, ``call``, ``fold`` (``raise`` is read as ``bet``, ``pass`` as ``check``/``fold``
as the spot allows). Reward: chips won / 2 (in ``[-1, 1]``); an illegal move forfeits (-1, opponent +1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..aec import TurnBasedTextEnv
from ..game import normalise
from .policy import scripted
from .rules import KuhnPoker

_ALIASES = {"raise": "bet", "fold": "fold", "check": "check", "bet": "bet", "call": "call"}


class KuhnPokerEnv(TurnBasedTextEnv):
    metadata = {"render_modes": ["ansi", "human"], "name": "kuhn_poker_v0", "is_parallelizable": False}
    instruction = (
        "Kuhn poker. The deck has three cards: J < Q < K. Each player antes 1 chip and gets one private card. "
        "player_0 acts first: 'check' or 'bet' (1 more chip). After a check, player_1 may 'check' (the higher "
        "card wins the 2-chip pot) or 'bet'; facing a bet a player must 'call' (the higher card wins the 4-chip "
        "pot) or 'fold' (the bettor wins). Your reward is the chips you win divided by 2 (between -1 and +1). "
        "Reply with one word. An illegal move loses at once (-1)."
    )
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Reply with exactly one of the legal moves: check, bet, call or fold.':
            'Make exactly one of the legal moves: check, bet, call or fold.',
        'Reply with one word.': '',
    }
    system_prompt = "You are playing Kuhn poker. Reply with exactly one of the legal moves: check, bet, call or fold."
    scripted_policy = staticmethod(scripted)

    def _new_game(self, rng: np.random.Generator, options: dict[str, Any]) -> KuhnPoker:
        return KuhnPoker(rng)

    def _canonical(self, text: str) -> str:
        word = normalise(text)
        if word == "pass":  # the classic name of check/fold
            return "fold" if "fold" in self.game.legal_actions() else "check"
        return _ALIASES.get(word, word)

    def _render(self, player: int) -> str:
        view = self.game.view(player)
        names = ["You" if i == player else "Opponent" for i in range(2)]
        actions = [f"{names[i % 2]}: {a}" for i, a in enumerate(view["history"])]
        lines = [f"You are {'first' if player == 0 else 'second'} to act. Your card: {view['card']}."]
        lines.append("Actions so far: " + ("; ".join(actions) if actions else "none") + ".")
        if "opponent_card" in view:
            lines.append(f"Showdown: the opponent had {view['opponent_card']}.")
        if "chips" in view:
            lines.append(f"You {'won' if view['chips'] > 0 else 'lost'} {abs(view['chips'])} chip(s).")
        return "\n".join(lines)


def env(render_mode: str | None = None) -> KuhnPokerEnv:
    """The AEC env (registered entry point)."""
    return KuhnPokerEnv(render_mode=render_mode)
