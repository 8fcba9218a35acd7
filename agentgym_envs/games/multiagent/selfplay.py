"""Any multi-agent game as a single-agent text env: the learner plays one seat, an opponent the others.

>>> import gymnasium, agentgym_envs
>>> env = gymnasium.make("agentgym/TicTacToe-VsScripted-v0")
>>> obs, info = env.reset(seed=0)
>>> info["seat"], "valid_actions" in info
('player_0', True)

* **Seats alternate by seed**: with ``seat="alternate"`` (default) ``reset(seed=s)`` gives the learner seat
  ``player_{s % n}``; a ``reset()`` without a seed takes the next seat after the previous episode's. So
  evaluation over consecutive seeds plays every seat equally. ``seat=i`` fixes the seat;
  ``reset(options={"seat": i})`` overrides it for one episode.
* **Opponent**: ``"scripted"`` (the game's heuristic), ``"random"``, any
  :class:`~agentgym_envs.policies.opponents.Opponent` callable, or any
  :class:`~agentgym_envs.policies.Policy` (e.g. a frozen copy of the learner; seated by ``PolicyOpponent``).
  It receives ``info["rng"]`` = this env's ``np_random``, so episodes are a function of the seed. If the
  opponent raises, the episode is truncated with ``info["infra_error"]`` (not the learner's fault).
* **Rewards** are the game's payoffs for the learner's seat (zero-sum, in ``[-1, 1]``), paid when the game
  ends. A learner's move that is not a legal move ends the game as a loss (-1, ``action_valid`` False):
  the game's own rule. Input the text-env contract rejects before the game sees it (not a string, empty,
  over-long) costs ``invalid_action_penalty`` = -1 and ends the episode: the same rule
  (``invalid_action_ends_episode``). An opponent's illegal move likewise ends the game as a win for the learner.
* **Games that end before the learner's first move** (a Hold'em button folding at once, an opponent's
  illegal opening move): ``reset`` cannot end an episode, so the observation says the game is over, the
  only valid action is ``"continue"`` (any non-empty reply is accepted) and that step ends the episode
  with the learner's payoff. Re-dealing instead would bias outcomes (the button's folds would vanish).
* **Infos**: ``seat`` on every step; at the end ``role_outcomes`` (each seat's payoff) and ``metrics``
  ``return_as_<seat>`` / ``won_as_<seat>``, so per-role results can be aggregated.
* **Snapshots** pickle the game with everything else except the opponent (configuration, rebuilt by the
  env that restores); built-in opponents are stateless, so replay after ``set_state`` is identical.
* :meth:`set_opponent` swaps the opponent between episodes (e.g. a newer frozen copy of the learner).
  Prefer it to ``gymnasium.make(id, opponent=...)`` for opponents that cannot be deep-copied (a model
  handle): gymnasium deep-copies make kwargs into ``env.spec`` and, failing that, leaves ``spec`` as None.
* ``expert_action()`` is the game's scripted move for the learner (drawn from a copy of the RNG, so calling it
  changes nothing).
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from pettingzoo import AECEnv

from ...core import InfraError, Step, TextEnv
from ...registration import make_multi
from ...policies.opponents import Opponent, ScriptedOpponent, resolve_opponent


CONTINUE = "continue"


class SelfPlayEnv(TextEnv):
    """One seat of a multi-agent AEC game as a single-agent text env; the module docstring has the rules."""

    reward_bounds = (-1.0, 1.0)
    invalid_action_penalty = -1.0
    invalid_action_ends_episode = True  # the games' rule: an illegal move loses at once
    snapshot_exclude = ("opponent",)

    def __init__(self, game: str | Callable[[], AECEnv], opponent: str | Opponent = "scripted",
                 seat: str | int = "alternate", game_kwargs: dict[str, Any] | None = None, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        self.game = make_multi(game, **(game_kwargs or {})) if isinstance(game, str) else game()
        if not isinstance(self.game, AECEnv):
            raise TypeError(f"game must be a multi-agent id or a factory of PettingZoo AEC envs, got {type(self.game).__name__}")
        self.opponent = resolve_opponent(opponent, self.game)
        n = len(self.game.possible_agents)
        if seat != "alternate" and not (isinstance(seat, int) and 0 <= seat < n):
            raise ValueError(f"seat must be 'alternate' or a seat index in 0..{n - 1}, got {seat!r}")
        self.seat_rule = seat
        self.system_prompt = getattr(self.game, "system_prompt", TextEnv.system_prompt)
        self.reply_format = {**getattr(self.game, "reply_format", TextEnv.reply_format),
                             f"Reply '{CONTINUE}' to finish the episode.": f"The action '{CONTINUE}' finishes the episode."}
        self.seat = self.game.possible_agents[0]
        self._seed: int | None = None
        self._pending_reward = 0.0
        self._reported_end = False

    def set_opponent(self, opponent: str | Opponent) -> None:
        """Play the other seats with ``opponent`` (``"random"``, ``"scripted"`` or a callable) from now on."""
        self.opponent = resolve_opponent(opponent, self.game)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        self._seed = seed  # the seat rule needs to know whether this reset was seeded
        return super().reset(seed=seed, options=options)

    # ----------------------------------------------------------------- TextEnv hooks
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        agents = self.game.possible_agents
        self.seat = agents[self._choose_seat(options)]
        self.game.reset(seed=int(self.np_random.integers(2**63)))
        self._reported_end = False
        self._pending_reward = self._play_opponents()
        info = self.game.infos[self.seat]
        instruction = info.get("instruction", "")
        observation = f"{instruction}\n\n{self.game.observe(self.seat)}"
        if self._over():
            observation += f"\nThe game ended before your first move. Reply '{CONTINUE}' to finish the episode."
        return observation, {"instruction": instruction, "system_prompt": self.system_prompt, "seat": self.seat}

    def _step(self, action: str) -> Step:
        reward = self._pending_reward
        self._pending_reward = 0.0
        if not self._over():  # else the game ended before the learner's first move: any reply finishes it
            self.game.step(action)
            reward += float(self.game.rewards.get(self.seat, 0.0))
            reward += self._play_opponents()
        own = self.game.infos.get(self.seat, {})
        extra: dict[str, Any] = {"seat": self.seat, "action_valid": own.get("action_valid", True), "parse_error": own.get("parse_error")}
        over = self._reported_end = self._over()
        if over:
            extra.update(self._outcome_info())
        return Step(self.game.observe(self.seat), reward=reward, terminated=over,
                    won=bool(own.get("won")) if over else None, score=float(own.get("score", 0.0)) if over else None, info=extra)

    def valid_actions(self) -> list[str]:
        if not self._episode_started:
            return []
        if self._over() and not self._reported_end:
            return [CONTINUE]
        return list(self.game.infos.get(self.seat, {}).get("valid_actions", []))

    def state_key_material(self) -> str:
        infos = getattr(self.game, "infos", None) or {}
        return f"{self.seat}|{infos.get(self.seat, {}).get('state_key', '')}"

    def metrics(self) -> dict[str, float]:
        return {"seat": float(self.game.possible_agents.index(self.seat))}

    def expert_action(self) -> str:
        """The game's scripted move for the learner's seat (``"continue"`` when the game is already over)."""
        info = dict(self.game.infos.get(self.seat, {}))
        if not info.get("valid_actions"):
            return CONTINUE
        info["rng"] = copy.deepcopy(self.np_random)  # a copy: asking the expert must not change the episode
        return ScriptedOpponent(type(self.game.unwrapped).scripted_policy)(self.game.observe(self.seat), info)

    # ----------------------------------------------------------------- helpers
    def _choose_seat(self, options: dict[str, Any]) -> int:
        n = len(self.game.possible_agents)
        if "seat" in options:
            seat = options["seat"]
            if not (isinstance(seat, int) and 0 <= seat < n):
                raise ValueError(f"options['seat'] must be a seat index in 0..{n - 1}, got {seat!r}")
            return seat
        if self.seat_rule != "alternate":
            return int(self.seat_rule)
        if self._seed is not None:
            return self._seed % n
        return (self.game.possible_agents.index(self.seat) + 1) % n

    def _over(self) -> bool:
        return bool(self.game.terminations.get(self.seat) or self.game.truncations.get(self.seat))

    def _play_opponents(self) -> float:
        """Let the opponent move for every other seat until it is the learner's turn or the game is over;
        returns the learner's reward collected meanwhile."""
        reward = 0.0
        while not self._over() and self.game.agent_selection != self.seat:
            agent = self.game.agent_selection
            info = {**self.game.infos[agent], "rng": self.np_random}
            try:
                action = self.opponent(self.game.observe(agent), info)
            except Exception as e:  # a broken opponent (e.g. a crashed model server) is not the learner's fault
                raise InfraError(f"the opponent policy failed: {type(e).__name__}: {e}") from e
            self.game.step(action)
            reward += float(self.game.rewards.get(self.seat, 0.0))
        return reward

    def _outcome_info(self) -> dict[str, Any]:
        outcomes = {a: float(info.get("score", 0.0)) for a, info in self.game.infos.items()}
        mine = outcomes.get(self.seat, 0.0)
        return {
            "role_outcomes": outcomes,
            "opponent_forfeited": any(not info.get("action_valid", True) for a, info in self.game.infos.items() if a != self.seat),
            "metrics": {f"return_as_{self.seat}": mine, f"won_as_{self.seat}": float(mine > 0)},
        }
