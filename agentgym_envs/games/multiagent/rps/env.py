"""Rock-Paper-Scissors over ``rounds`` rounds (default 9): a PettingZoo AEC env and a Parallel env.

* :class:`RockPaperScissorsParallelEnv` (``parallel_env()``): both players choose at once each round.
* :class:`RockPaperScissorsEnv` (``env()``, the registered ``agentgym/RockPaperScissors-v0``): the same match
  turn by turn, player_0 committing first with its choice hidden from player_1, as ``parallel_to_aec`` would
  present it (written on the shared AEC adapter so that it pickles for self-play snapshots).

Moves: ``rock``, ``paper``, ``scissors`` (also ``r``/``p``/``s``). The match winner gets +1, the loser -1, a
tie 0. Illegal moves forfeit the match (-1, opponent +1); in the Parallel env, if both players' moves in a
round are illegal, both forfeit (-1 each).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from pettingzoo import ParallelEnv

from ....core.errors import ResetNeeded
from ....core.spaces import UnicodeText
from ..aec import (MAX_ACTION_CHARS, MAX_OBSERVATION_CHARS, TurnBasedTextEnv, agent_info, forfeit_returns, parse_action,
                   render_text, status_line)
from ..game import join_moves, normalise
from .policy import scripted
from .rules import MOVES, RockPaperScissors

_ALIASES = {"r": "rock", "p": "paper", "s": "scissors", "scissor": "scissors", "stone": "rock"}
SYSTEM_PROMPT = "You are playing Rock-Paper-Scissors. Reply with exactly one word: rock, paper or scissors."


def instruction(rounds: int) -> str:
    return (
        f"Rock-Paper-Scissors, a match of {rounds} rounds. Each round both players choose rock, paper or scissors "
        "at the same time (you never see the opponent's choice before yours). Rock beats scissors, scissors beats "
        "paper, paper beats rock. Whoever wins more rounds wins the match (+1; the loser gets -1, a tie 0). "
        "Reply with one word. An illegal move loses the match at once (-1)."
    )


def canonical(text: str) -> str:
    word = normalise(text)
    return _ALIASES.get(word, word)


def render_view(view: dict[str, Any]) -> str:
    """The match so far from one player's side."""
    lines = [f"Round {min(len(view['history']) + 1, view['rounds'])} of {view['rounds']}. "
             f"Score: you {view['score'][0]}, opponent {view['score'][1]}."]
    for i, (mine, theirs) in enumerate(view["history"], 1):
        lines.append(f"  round {i}: you {mine}, opponent {theirs}")
    return "\n".join(lines)


class RockPaperScissorsEnv(TurnBasedTextEnv):
    metadata = {"render_modes": ["ansi", "human"], "name": "rock_paper_scissors_v0", "is_parallelizable": False}
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Reply with exactly one word: rock, paper or scissors.':
            'A move is one word: rock, paper or scissors.',
        'Reply with one word.': '',
    }
    system_prompt = SYSTEM_PROMPT
    scripted_policy = staticmethod(scripted)

    def __init__(self, rounds: int = 9, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        RockPaperScissors(rounds)  # validates
        self.rounds = rounds
        self.instruction = instruction(rounds)

    def _new_game(self, rng: np.random.Generator, options: dict[str, Any]) -> RockPaperScissors:
        return RockPaperScissors(self.rounds)

    def _canonical(self, text: str) -> str:
        return canonical(text)

    def _render(self, player: int) -> str:
        text = render_view(self.game.view(player))
        if player == 1 and self.game.pending is not None:
            text += "\nYour opponent has made its choice for this round (hidden)."
        return text


class RockPaperScissorsParallelEnv(ParallelEnv):
    """The simultaneous form; observations, infos and the illegal-move rule match the AEC env's."""

    metadata = {"render_modes": ["ansi", "human"], "name": "rock_paper_scissors_v0", "is_parallelizable": True}

    def __init__(self, rounds: int = 9, render_mode: str | None = None):
        RockPaperScissors(rounds)  # validates
        self.rounds, self.render_mode = rounds, render_mode
        self.possible_agents = ["player_0", "player_1"]
        self.agents: list[str] = []
        self._observation_space = UnicodeText(MAX_OBSERVATION_CHARS)
        self._action_space = UnicodeText(MAX_ACTION_CHARS)
        self.game: RockPaperScissors | None = None

    def observation_space(self, agent: str) -> UnicodeText:
        return self._observation_space

    def action_space(self, agent: str) -> UnicodeText:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict[str, str], dict[str, dict]]:
        self.game, self.agents = RockPaperScissors(self.rounds), list(self.possible_agents)
        self._returns: tuple[float, ...] | None = None
        self._forfeits: dict[int, str] = {}
        self._turn = 0
        return {a: self._observe(i) for i, a in enumerate(self.possible_agents)}, self._infos()

    def step(self, actions: Mapping[str, Any]):
        if self.game is None:
            raise ResetNeeded("step() was called before reset(); call env.reset(seed=...) first")
        if not self.agents:
            return {}, {}, {}, {}, {}
        actions = actions if isinstance(actions, Mapping) else {}
        legal = self.game.legal_actions()
        parsed = [parse_action(actions.get(a), legal, canonical) for a in self.possible_agents]
        self._forfeits = {i: problem for i, (_, problem) in enumerate(parsed) if problem is not None}
        if self._forfeits:
            self._returns = forfeit_returns(2, self._forfeits)
        else:
            self.game.play_round(parsed[0][0], parsed[1][0])
            self._returns = self.game.returns()
        self._turn += 1
        over = self._returns is not None
        agents = self.possible_agents
        observations = {a: self._observe(i) for i, a in enumerate(agents)}
        rewards = {a: float(self._returns[i]) if over else 0.0 for i, a in enumerate(agents)}
        terminations, truncations = dict.fromkeys(agents, over), dict.fromkeys(agents, False)
        infos = self._infos()
        if over:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        """The match from player_0's side (finished matches included); ``ansi`` returns it, ``human`` prints it."""
        return render_text(self._observe(0) if self.game is not None else "", self.render_mode)

    def close(self) -> None:
        """Nothing to release."""

    def _infos(self) -> dict[str, dict[str, Any]]:
        infos = {}
        for i, a in enumerate(self.possible_agents):
            info = agent_info(self.metadata["name"], self.game, i, self._returns, self._forfeits.get(i), self._turn)
            info["valid_actions"] = self.game.legal_actions() if self._returns is None else []  # both act at once
            info["instruction"], info["system_prompt"] = instruction(self.rounds), SYSTEM_PROMPT
            infos[a] = info
        return infos

    def _observe(self, player: int) -> str:
        text = render_view(self.game.view(player)) + "\n"
        if self._returns is not None:
            return text + status_line(self.possible_agents, self.game, player, self._returns, self._forfeits)
        return text + f"You are {self.possible_agents[player]}. Your move. Legal moves: {join_moves(list(MOVES))}"


def env(rounds: int = 9, render_mode: str | None = None) -> RockPaperScissorsEnv:
    """The turn-based AEC env (registered entry point)."""
    return RockPaperScissorsEnv(rounds=rounds, render_mode=render_mode)


def parallel_env(rounds: int = 9, render_mode: str | None = None) -> RockPaperScissorsParallelEnv:
    """The simultaneous Parallel env."""
    return RockPaperScissorsParallelEnv(rounds=rounds, render_mode=render_mode)
