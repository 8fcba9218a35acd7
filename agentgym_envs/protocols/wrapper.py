"""ActionProtocolWrapper: any text env driven by raw model replies in a chosen format.

``step(reply)`` parses the reply with the protocol and steps the inner env with the native action. Every
call is a turn: when the turn count reaches ``max_turns`` (the spec's ``max_episode_steps`` by default) the
episode is truncated, so a model that never formats cannot loop forever.

**Invalid replies: one rule for every protocol.** A reply that cannot be parsed (or is over-long) does *not*
reach the env, and counts as the env's own invalid action: the agent is told what was wrong and which
format to use, ``info["action_valid"]`` is ``False`` and ``info["parse_error"]`` says why, the reward is the
env's ``invalid_action_penalty``, and the episode ends when the env declares that an invalid action ends it
(``invalid_action_ends_episode``, as "an illegal move loses at once" in the games). The penalty is bounded:
it never takes the episode's return below the env's ``reward_bounds[0]``, so a stream of garbage earns what
one illegal move earns under ``plain``, never more; nor does a loss the env pays after such penalties (the
env cannot see them), which is cut to the floor with ``info["reward_uncut"]`` set.

**The first prompt** (:mod:`.prompt`): the protocol owns the reply format, the env the task and the legal
moves. Outside ``plain`` the env's reply-format phrases (its ``reply_format`` table) are replaced by their
neutral wording in the system prompt, instruction and first observation; the protocol's format
instructions end the system prompt and its one-line reminder ends the first observation.

Keys the wrapper adds to the inner env's info:

* ``system_prompt`` (reset): the env's prompt (or the ``system_prompt`` given to the wrapper) followed by the
  protocol's format instructions; ``tools``
  (reset) for tool-call protocols.
* ``native_action`` (every step, ``str | None``): the native action the inner env received for this reply,
  or ``None`` when the reply did not reach it (unparseable, over-long, or sent after the episode ended).
  Recorders read it here instead of parsing the reply a second time.
* ``thought`` (step, when the protocol found reasoning in the reply).

>>> import gymnasium, agentgym_envs
>>> env = ActionProtocolWrapper(gymnasium.make("agentgym/Maze-Easy-v0"), "react")
>>> obs, info = env.reset(seed=0)
>>> info["system_prompt"].endswith("holding exactly one action."), obs.endswith("'Action: <action>' on the last line.")
(True, True)
>>> obs, reward, terminated, truncated, info = env.step("I think I will go east.")
>>> info["action_valid"], obs.startswith("No action found"), info["native_action"]
(False, True, None)
>>> obs, reward, terminated, truncated, info = env.step("Thought: east is open.\\nAction: go east")
>>> info["action_valid"], info["thought"], info["native_action"]
(True, 'east is open.', 'go east')
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import gymnasium

from ..core.errors import ResetNeeded
from ..core.spaces import UnicodeText
from .base import ActionProtocol, ParsedAction, get_protocol
from .prompt import first_prompt

#: Keys of the last real info that describe the episode start or the last reply, not the current state.
_NOT_CARRIED = ("instruction", "system_prompt", "thought")


class ActionProtocolWrapper(gymnasium.Wrapper[str, str, str, str]):
    """Parse raw model replies with ``protocol`` and step ``env`` with the native action."""

    #: Longest reply that is parsed; longer ones are rejected unread (bounds the work per turn).
    max_reply_chars: ClassVar[int] = 1 << 20

    def __init__(self, env: gymnasium.Env, protocol: str | ActionProtocol = "plain", *, max_turns: int | None = None,
                 system_prompt: str | None = None):
        super().__init__(env)
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a str or None, got {type(system_prompt).__name__}")
        #: Replaces the env's prompt (the protocol's format instructions still follow it); ``""`` gives no
        #: system message and a whitespace-only one an empty system turn (:func:`agentgym_envs.chat.system_messages`).
        self.system_prompt = system_prompt
        self.protocol = get_protocol(protocol)
        self._base = env.unwrapped
        spec = env.spec
        self.max_turns = max_turns if max_turns is not None else (spec.max_episode_steps if spec is not None else None)
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError(f"max_turns must be at least 1 (or None for no limit), got {self.max_turns}")
        self.action_space = UnicodeText(self.max_reply_chars)
        self._penalty = float(getattr(self._base, "invalid_action_penalty", 0.0))
        self._ends_on_invalid = bool(getattr(self._base, "invalid_action_ends_episode", False))
        self._lowest_return = float(getattr(self._base, "reward_bounds", (-math.inf, math.inf))[0])
        self._return = 0.0
        self._turns = 0
        self._over = False
        self._last_info: dict[str, Any] | None = None
        self._format = ""

    @property
    def turns(self) -> int:
        """Replies received this episode, parsed or not."""
        return self._turns

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._turns, self._over, self._return = 0, False, 0.0
        self._format = self.protocol.instructions(self._base)
        if self.system_prompt is not None:
            info["system_prompt"] = self.system_prompt
        observation, info = first_prompt(self.protocol, self._base, observation, info)
        if self.system_prompt is not None and not self.system_prompt.strip():
            info["system_prompt"] = self.system_prompt  # no system message / an empty turn: the reminder says the format
        tools = self.protocol.tools(self._base)
        if tools is not None:
            info["tools"] = tools
        self._last_info = info
        return observation, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._last_info is None:
            raise ResetNeeded("step() was called before reset(); call env.reset(seed=...) first")
        if self._over:
            return self._rejected(ParsedAction(None, "The episode is over; call reset() to start a new one."), terminated=True)
        self._turns += 1
        if isinstance(action, str) and len(action) > self.max_reply_chars:
            error = f"The reply is {len(action):,} characters long; the limit is {self.max_reply_chars:,}."
            return self._rejected(ParsedAction(None, error))
        parsed = self.protocol.parse(action, self._base)
        if parsed.error is not None:
            return self._rejected(parsed)
        observation, reward, terminated, truncated, info = self.env.step(parsed.action)
        info["native_action"] = parsed.action
        if parsed.thought is not None:
            info["thought"] = parsed.thought
        self.protocol.update_step_info(info, self._base)
        if not (terminated or truncated) and self._limit_reached():
            truncated = True
        self._over = bool(terminated or truncated)
        self._last_info = info
        paid = self._bounded(float(reward))
        if paid != reward:
            info["reward_uncut"] = float(reward)
        self._return += paid
        return observation, paid, terminated, truncated, info

    def _limit_reached(self) -> bool:
        return self.max_turns is not None and self._turns >= self.max_turns

    def _rejected(self, parsed: ParsedAction, *, terminated: bool = False) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """A turn that never reached the env: the last real info, marked invalid, with the reason."""
        info = dict(self._last_info)  # type: ignore[arg-type]
        for key in _NOT_CARRIED:
            info.pop(key, None)
        info["action_valid"], info["parse_error"], info["metrics"] = False, parsed.error, {}
        info["native_action"] = None
        if parsed.thought is not None:
            info["thought"] = parsed.thought
        if terminated:
            return str(parsed.error), 0.0, True, False, info
        reward = self._bounded(self._penalty)
        self._return += reward
        terminated = self._ends_on_invalid
        truncated = not terminated and self._limit_reached()
        self._over = terminated or truncated
        observation = f"{parsed.error}\nReply format: {self._format}"
        if terminated:
            observation += "\nAn invalid reply ends this episode, as an illegal move does."
        return observation, reward, terminated, truncated, info

    def _bounded(self, reward: float) -> float:
        """A loss (the env's invalid-action penalty, or its own reward) cut so the episode's return stays at or
        above ``reward_bounds[0]``; gains pass unchanged."""
        if reward >= 0:
            return reward
        return max(reward, min(0.0, self._lowest_return - self._return))
