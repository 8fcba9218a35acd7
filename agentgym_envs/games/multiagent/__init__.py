"""Multi-agent text games as PettingZoo envs, a self-play wrapper and an Elo league.

Layout (rules apart from adapters):

* ``game.py``: the pure rules contract every game implements (:class:`GameState`).
* ``aec.py``: :class:`TurnBasedTextEnv`, the one PettingZoo AEC adapter all games share (text observations,
  string actions, infos, the illegal-move rule).
* one sub-package per game (``tictactoe``, ``connect_four``, ``kuhn_poker``, ``liars_dice``, ``holdem``,
  ``rps``), each with a pure ``rules.py``, a scripted ``policy.py`` and its ``env.py`` adapter.
* ``arena.py`` (play one game between policies), ``selfplay.py`` (any game as a single-agent gymnasium env)
  and ``league.py`` (ratings with uncertainty). The policies that fill seats (the ``Opponent`` protocol,
  the random and scripted seats, ``PolicyOpponent`` for any model policy) live with every other policy
  in :mod:`agentgym_envs.policies.opponents`.

This ``__init__`` stays empty of imports so that importing ``agentgym_envs`` (which imports ``register.py``)
loads neither numpy-heavy rules nor PettingZoo.
"""
