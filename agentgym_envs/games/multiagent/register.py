"""Registers the multi-agent games and their single-agent self-play ids (entry points are strings).

* ``agentgym/<Game>-v0``: the PettingZoo AEC env, via :func:`agentgym_envs.make_multi`.
* ``agentgym/<Game>-VsScripted-v0`` / ``-VsRandom-v0``: the learner plays one seat (alternating by seed)
  against the game's scripted policy or a random one; ``gymnasium.make(id, opponent=callable)`` plugs in
  any other opponent. ``max_episode_steps`` is the longest game in learner moves plus room for malformed
  replies (which the text-env contract answers without ending the game).
"""

from __future__ import annotations

from ...registration import register_env, register_multi

_PKG = "agentgym_envs.games.multiagent"

#: (id stem, module, description, max learner steps for the self-play ids)
_GAMES: list[tuple[str, str, str, int]] = [
    ("TicTacToe", "tictactoe", "Tic-tac-toe, cells 1–9; perfect-play (negamax) scripted opponent", 20),
    ("ConnectFour", "connect_four", "Connect Four, 7×6, columns 1–7; threat-aware one-ply heuristic scripted opponent", 50),
    ("KuhnPoker", "kuhn_poker", "Kuhn poker (J/Q/K, one hand); Nash-equilibrium scripted opponent", 10),
    ("LiarsDice", "liars_dice", "Liar's Dice, two players × 5 dice, one round; bid-probability scripted opponent", 60),
    ("LimitHoldem", "holdem", "Heads-up Limit Texas Hold'em, one hand; Monte Carlo hand-strength scripted opponent", 40),
    ("RockPaperScissors", "rps", "Rock-Paper-Scissors, 9 rounds (rounds=); frequency-counter scripted opponent", 30),
]

_OPPONENTS = (("VsScripted", "scripted", "the scripted policy"), ("VsRandom", "random", "a uniformly random policy"))


def _register_all() -> None:
    for stem, module, description, steps in _GAMES:
        game_id = f"agentgym/{stem}-v0"
        register_multi(game_id, f"{_PKG}.{module}:env", family="games",
                       description=f"{description} (PettingZoo AEC, string moves, illegal move forfeits).")
        for suffix, opponent, who in _OPPONENTS:
            register_env(f"agentgym/{stem}-{suffix}-v0", f"{_PKG}.selfplay:SelfPlayEnv", family="games",
                         max_episode_steps=steps, kwargs={"game": game_id, "opponent": opponent},
                         description=f"{stem} as a single-agent env against {who} (seat alternates by seed).")


_register_all()
