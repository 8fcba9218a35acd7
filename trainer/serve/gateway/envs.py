"""Env-driven mode: the gateway steps an agentgym env with each reply it samples, so the env's rewards are the outcome.

The harness still owns the loop (it builds messages, calls the model, decides what to send next), but it does not
report the reward: every chat or completions call on the session steps the session's env with the sampled text
(parsed by the env's action protocol, our protocol layer), and the response's ``agentgym`` object carries the
``observation``, ``reward``, ``done`` and ``won``, plus ``next_message``: the observation as the ``user`` (or,
for the ``tool_calls`` protocol, ``tool``) message the chat continues with. The session ends when the env does.
What a harness sends cannot change a reward: the env reads only what the policy sampled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...collect.episodes import PlaySpec


@dataclass
class _EnvState:
    env: Any
    instruction: str | None
    rewards: list[float] = field(default_factory=list)
    visited: set[str] = field(default_factory=set)  # the episode's state_keys so far (revisit_penalty)


class EnvDriver:
    """Starts one env of ``spec`` per session (reset with the session's ``task_index`` and ``env_seed``) and steps it."""

    def __init__(self, spec: PlaySpec, *, invalid_penalty: float = 0.0, stall_penalty: float = 0.0,
                 revisit_penalty: float = 0.0):
        self.spec, self.invalid_penalty, self.stall_penalty = spec, invalid_penalty, stall_penalty
        self.revisit_penalty = revisit_penalty

    def start(self, session: Any) -> dict[str, Any]:
        """Reset the session's env; the first messages (and tools) of its chat for the ``POST /sessions`` answer."""
        env = self.spec.make()
        meta = session.meta
        options = {"task_index": int(meta["task_index"])} if "task_index" in meta else None
        observation, info = env.reset(seed=int(meta.get("env_seed", session.seed)), options=options)
        info = self.spec.start_info(info)
        history = self.spec.new_history()
        history.start(observation, info)
        meta["state_key"] = str(info.get("state_key", ""))
        session.env = _EnvState(env, info.get("instruction"), visited={meta["state_key"]} - {""})
        chat = history.messages()
        return {"messages": [dict(m) for m in chat], "tools": getattr(chat, "tools", None)}

    def step(self, server: Any, session: Any, text: str) -> dict[str, Any]:
        """Step the env with the sampled ``text``; end the session (``server.finish``) when the episode ends."""
        state: _EnvState = session.env
        try:
            observation, reward, terminated, truncated, info = state.env.step(text)
        except Exception as e:  # the env itself broke (the protocol layer turns any reply into an observation)
            observation, reward, terminated, truncated = "", 0.0, False, True
            info = {"infra_error": f"the env failed on step {len(state.rewards)}: {type(e).__name__}: {e}"}
        valid = info.get("action_valid") is not False
        penalty = 0.0 if valid else self.invalid_penalty
        key = str(info.get("state_key", ""))
        if self.stall_penalty and key and key == session.meta.get("state_key") and not (terminated or truncated):
            penalty = max(penalty, self.stall_penalty)  # the same shaping as trainer.collect.rollout's stall_penalty
        if self.revisit_penalty and key in state.visited and not (terminated or truncated):
            penalty = max(penalty, self.revisit_penalty)  # ... and its revisit_penalty
        if key:
            state.visited.add(key)
        state.rewards.append(float(reward) - penalty)
        session.turn_valid.append(valid)
        session.meta["state_key"] = key
        won, error = bool(info.get("won", False)), info.get("infra_error")
        done = bool(terminated or truncated or error)
        shown = self.spec.observation_text(observation, state.instruction)
        if done:
            session.meta["finish"] = "infra_error" if error else ("terminated" if terminated else "truncated")
            server.finish(session, state.rewards, won=won, source="env", error=str(error) if error else None)
        role = "tool" if self.spec.tool_calling else "user"
        return {"observation": shown, "reward": float(reward), "terminated": bool(terminated),
                "truncated": bool(truncated), "done": done, "won": won, "next_message": {"role": role, "content": shown}}

    def close(self, session: Any) -> None:
        state, session.env = session.env, None
        if state is not None:
            state.env.close()
