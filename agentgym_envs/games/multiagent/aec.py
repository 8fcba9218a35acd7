"""The PettingZoo AEC adapter every turn-based text game shares.

A game supplies pure rules (:class:`~agentgym_envs.games.multiagent.game.GameState`) and three hooks
(``_new_game``, ``_render``, ``_canonical``); this class adds what PettingZoo and our contract need:

* **Spaces**: observations and actions are strings (:class:`~agentgym_envs.core.spaces.UnicodeText`).
* **Observations**: the game's rendering of the agent's information set plus a status line (whose move,
  the legal moves, or the result). The rules are in ``infos[agent]["instruction"]`` and
  ``infos[agent]["system_prompt"]`` from reset on (every step, so a policy joining mid-game has them).
* **Infos** (every agent, every step): ``valid_actions`` (the acting agent's legal moves; ``[]`` for the
  others), ``action_valid`` and ``parse_error`` (about the agent's own last move), ``won``, ``score`` (the
  agent's payoff once over, else 0), ``state_key`` (hash of the agent's information set), ``view`` (that
  information set as data: scripted policies read it) and ``turn``; typed in :mod:`agentgym_envs.core.info`
  (``AGENT_KEY_TYPES``). No action masks: moves are strings.
* **Illegal-move rule** (as in TextArena and SPIRAL): anything that is not a legal move (unparseable,
  empty, huge, not a string) ends the game at once: the offender gets -1, every other player +1/(n-1),
  and ``infos[offender]["action_valid"]`` is False with the reason. It never raises.
* **Rewards**: zero-sum payoffs in ``[-1, 1]`` at the end of the game (PettingZoo's accumulated rewards).
* **Determinism**: all chance comes from a generator seeded by ``reset(seed=...)`` (a ``reset()`` without a
  seed continues that generator); no global RNG.
* After the game ends, agents are removed by stepping ``None`` as usual in PettingZoo; any other action for
  a finished agent is ignored rather than raising.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, ClassVar

import numpy as np
from pettingzoo import AECEnv

from ...core.actions import coerce_action
from ...core.errors import ResetNeeded
from ...core.info import StepInfo
from ...core.spaces import UnicodeText
from ...policies.opponents import ScriptedPolicy
from .game import GameState, clip, join_moves, normalise


MAX_ACTION_CHARS = 16_384
MAX_OBSERVATION_CHARS = 65_536


class TurnBasedTextEnv(AECEnv):
    """Base PettingZoo AEC env for text games; subclasses set the class attributes and the three hooks."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "name": "text_game_v0", "is_parallelizable": False}
    #: Players; agents are named ``player_<i>``.
    num_players: ClassVar[int] = 2
    #: The rules, in every ``infos[agent]["instruction"]`` (games with parameters set it per instance).
    instruction: str = ""
    #: Recommended system prompt for chat models.
    system_prompt: str = "You are playing a game. Reply with exactly one legal move."
    #: The game's heuristic policy (the "scripted" opponent and the self-play expert).
    scripted_policy: ClassVar[ScriptedPolicy]

    def __init__(self, render_mode: str | None = None):
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(self.num_players)]
        self._observation_space = UnicodeText(MAX_OBSERVATION_CHARS)
        self._action_space = UnicodeText(MAX_ACTION_CHARS)
        self._rng: np.random.Generator | None = None
        self.game: GameState | None = None

    # ----------------------------------------------------------------- hooks
    def _new_game(self, rng: np.random.Generator, options: dict[str, Any]) -> GameState:
        """A fresh game; all chance drawn from ``rng``."""
        raise NotImplementedError

    def _render(self, player: int) -> str:
        """The game as ``player`` sees it (board, own cards, history), without the status line."""
        raise NotImplementedError

    def _canonical(self, text: str) -> str:
        """Map model text (already a stripped str) to a canonical move; unknown text may come back as is."""
        return normalise(text)

    # ----------------------------------------------------------------- PettingZoo API
    def observation_space(self, agent: str) -> UnicodeText:
        return self._observation_space

    def action_space(self, agent: str) -> UnicodeText:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        self.game = self._new_game(self._rng, dict(options or {}))
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._returns: tuple[float, ...] | None = None
        self._forfeits: dict[int, str] = {}
        self._turn = 0
        self.agent_selection = self.agents[self.game.current_player()]
        self._refresh_infos()

    def step(self, action: Any) -> None:
        if self.game is None:
            raise ResetNeeded("step() was called before reset(); call env.reset(seed=...) first")
        if not self.agents:
            return
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(None)  # any action of a finished agent is ignored, not an error
            return
        player = self.possible_agents.index(agent)
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        move, problem = self.parse(action)
        if problem is None:
            self.game.apply(move)
        else:
            self._forfeits[player] = problem
        self._turn += 1
        self._after_move(player)

    def observe(self, agent: str) -> str:
        player = self.possible_agents.index(agent)
        text = self._render(player) + "\n" + status_line(self.possible_agents, self.game, player, self._returns, self._forfeits)
        return text if len(text) <= MAX_OBSERVATION_CHARS else text[: MAX_OBSERVATION_CHARS - 1] + "…"

    def render(self) -> str | None:
        """The position as the player to act sees it; once the game is over, the final position and result.

        ``ansi`` returns the text (before the first ``reset`` too: an empty string), ``human`` prints it.
        """
        if self.game is None:
            text = ""
        else:  # after the game, agent_selection still names the last player to move (agents is empty)
            agent = self.agent_selection if self.agent_selection in self.possible_agents else self.possible_agents[0]
            text = self.observe(agent)
        return render_text(text, self.render_mode)

    def close(self) -> None:
        """Nothing to release (pure Python); defined because ``render`` is."""

    # ----------------------------------------------------------------- helpers
    def parse(self, action: Any) -> tuple[str, str | None]:
        """``(canonical move, None)`` for a legal move of the current player, else ``("", reason)``."""
        return parse_action(action, self.game.legal_actions(), self._canonical)

    def _after_move(self, player: int) -> None:
        self._returns = forfeit_returns(self.num_players, self._forfeits) if self._forfeits else self.game.returns()
        if self._returns is not None:
            for i, a in enumerate(self.possible_agents):
                self.rewards[a] = float(self._returns[i])
                self.terminations[a] = True
            self.agent_selection = self.possible_agents[(player + 1) % self.num_players]
        else:
            self.agent_selection = self.possible_agents[self.game.current_player()]
        self._refresh_infos()
        self._accumulate_rewards()

    def _refresh_infos(self) -> None:
        name = self.metadata["name"]
        self.infos = {}
        for i, a in enumerate(self.possible_agents):
            info = agent_info(name, self.game, i, self._returns, self._forfeits.get(i), self._turn)
            # The rules travel with every info, not only the first: player_1's first turn comes after a move,
            # and a policy such as a frozen LLM needs them to build its prompt.
            info["instruction"], info["system_prompt"] = self.instruction, self.system_prompt
            self.infos[a] = info


def parse_action(action: Any, legal: list[str], canonical: Callable[[str], str]) -> tuple[str, str | None]:
    """``(move, None)`` when ``action`` names a move in ``legal`` (after ``canonical``), else ``("", reason)``.

    Never raises: non-strings, empty, over-long and unknown text all come back as a reason
    (:func:`~agentgym_envs.core.actions.coerce_action` does the text part for every env).
    """
    text, problem, kind = coerce_action(action, MAX_ACTION_CHARS, noun="move")
    if problem is not None:
        return "", f"{problem}; legal moves: {join_moves(legal)}" if kind == "empty" else problem
    move = canonical(text)
    if move not in legal:
        return "", f"{clip(text)} is not a legal move; legal moves: {join_moves(legal)}"
    return move, None


def agent_info(name: str, game: GameState, player: int, returns: tuple[float, ...] | None,
               own_problem: str | None, turn: int) -> StepInfo:
    """The standard per-agent info (``AGENT_KEY_TYPES`` of :mod:`agentgym_envs.core.info`, less the rules,
    which the adapters add); shared by the AEC and Parallel adapters."""
    view = game.view(player)
    payoff = float(returns[player]) if returns is not None else 0.0
    acting = returns is None and game.current_player() == player
    return {
        "valid_actions": game.legal_actions() if acting else [],
        "action_valid": own_problem is None,
        "parse_error": own_problem,
        "won": returns is not None and payoff > 0,
        "score": payoff,
        "state_key": state_key(name, player, view),
        "view": view,
        "turn": turn,
    }


def forfeit_returns(num_players: int, forfeits: dict[int, str]) -> tuple[float, ...]:
    """Offenders get -1; the others share the offenders' loss, at most +1 each (all offend: all -1)."""
    k = len(forfeits)
    share = min(1.0, k / (num_players - k)) if k < num_players else -1.0
    return tuple(-1.0 if i in forfeits else share for i in range(num_players))


def render_text(text: str, render_mode: str | None) -> str | None:
    """PettingZoo's render modes over one text: ``ansi`` returns it, ``human`` prints it (and returns None)."""
    if render_mode == "human":
        if text:
            print(text)
        return None
    return text


def status_line(agents: list[str], game: GameState, player: int, returns: tuple[float, ...] | None,
                forfeits: dict[int, str]) -> str:
    """The last line(s) of an observation: the result, or whose move it is and the legal moves."""
    if returns is not None:
        lines = []
        for offender, reason in sorted(forfeits.items()):
            who, verb = ("You", "forfeit") if offender == player else (agents[offender], "forfeits")
            lines.append(f"{who} made an illegal move ({reason}) and {verb} the game.")
        payoff = returns[player]
        result = "You won" if payoff > 0 else "You lost" if payoff < 0 else "It is a draw"
        lines.append(f"Game over. {result} (reward {payoff:+g}).")
        return "\n".join(lines)
    current = game.current_player()
    if current == player:
        return f"You are {agents[player]}. Your move. Legal moves: {join_moves(game.legal_actions())}"
    return f"You are {agents[player]}. Waiting for {agents[current]} to move."


def state_key(game: str, player: int, view: dict[str, Any]) -> str:
    """A canonical hash of what ``player`` knows: equal information sets give equal keys across rollouts."""
    material = f"{game}|{player}|{json.dumps(view, sort_keys=True, separators=(',', ':'))}"
    return hashlib.blake2b(material.encode(), digest_size=12).hexdigest()
