"""Playing one suite episode with any policy: env → protocol wrapper → chat → policy → env, every step recorded.

The episode is a pure function of its entry, its index and the policy: the env resets with the entry's seed
for the task, and the policy's sampling seed for each turn derives from the entry, the episode index and the
turn. So a resumed run replays exactly what an uninterrupted one would have, whichever worker plays it.

Failures are sorted here. The agent's mistakes (unparseable replies, illegal moves) are part of the episode.
The env's own ``info["infra_error"]``, an exception from the env, or a transient policy failure (endpoint
down, timeout) raise :class:`InfraFailed`: the runner records it and retries the episode; it is never
scored. Any other policy exception propagates and stops the run (a wrong model name will not fix itself).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from agentgym_envs.chat import ChatHistory, first_user_content
from agentgym_envs.policies import Completion, SamplingConfig, TokenPolicy
from agentgym_envs.protocols import ActionProtocolWrapper
from agentgym_envs.seeding import derive_seed

from .errors import SuiteError
from .records import EpisodeRecord, Start, StepRecord
from .suite import Entry


class InfraFailed(Exception):
    """This attempt failed for infrastructure reasons (``source`` is ``env`` or ``policy``); retry it."""

    def __init__(self, source: str, error: str):
        super().__init__(f"{source}: {error}")
        self.source, self.error = source, error


def is_transient(exc: BaseException) -> bool:
    """Whether a policy exception is infrastructure: connection/timeouts, or anything marked ``transient``."""
    return bool(getattr(exc, "transient", False)) or isinstance(exc, (ConnectionError, TimeoutError))


def make_env(entry: Entry) -> ActionProtocolWrapper:
    """The entry's env from :func:`agentgym_envs.make`, behind its reply protocol, with the suite's step
    limit both on replies (``max_turns``) and on the env's own steps (``max_episode_steps``)."""
    import agentgym_envs  # (registers the ids, also in worker processes)

    return agentgym_envs.make(entry.env_id, protocol=entry.protocol, max_turns=entry.max_steps,
                              max_episode_steps=entry.max_steps, system_prompt=entry.system_prompt, **entry.kwargs)


def start_of(env: ActionProtocolWrapper, observation: str, info: dict[str, Any]) -> Start:
    """The episode's start from its reset: what the chat opens with, and the protocol's tools."""
    tools = info.get("tools") if env.protocol.name == "tool_calls" else None
    return Start(info.get("system_prompt") or None, first_user_content(observation, info.get("instruction")),
                 list(tools) if tools else None, env.protocol.name)


def sampling_seed(entry: Entry, episode_index: int, turn: int) -> int:
    """The policy's seed for one turn: distinct across entries, episodes (so repeats differ) and turns."""
    return derive_seed(entry.seed, entry.stream(), episode_index, turn)


def play_episode(entry: Entry, episode_index: int, env: ActionProtocolWrapper, policy: Any,
                 sampling: SamplingConfig) -> EpisodeRecord:
    """Play episode ``episode_index`` of ``entry`` on ``env`` (made by :func:`make_env`) and record it."""
    play = EpisodePlay(entry, episode_index, env, counter=policy if isinstance(policy, TokenPolicy) else None)
    while not play.done:
        messages = play.messages()
        completion, latency = _ask(policy, env, messages, replace(sampling, seed=play.seed()))
        play.advance(completion, latency)
    return play.record()


class EpisodePlay:
    """One episode played turn by turn by whoever asks the policy: :func:`play_episode` (one at a time) or
    :mod:`leaderboards.batched` (many in one generate). Both record through here, so a record does not
    depend on how its replies were obtained.

    ``counter`` counts prompt tokens with a token policy's own chat template when the completion reports none
    (checked once by the caller: a Protocol ``isinstance`` is slow); a caller that already holds the prompt's
    ids passes their count to :meth:`advance` instead.
    """

    def __init__(self, entry: Entry, episode_index: int, env: ActionProtocolWrapper,
                 counter: TokenPolicy | None = None):
        self.entry, self.episode_index, self.env, self.counter = entry, episode_index, env, counter
        task, self.repeat = entry.task_of(episode_index)
        num_tasks = getattr(env.unwrapped, "num_tasks", None)
        if num_tasks is not None and task >= num_tasks:
            raise SuiteError(f"{entry.key} asks for {entry.tasks} tasks but its split has only {num_tasks}; "
                             f"set 'tasks: {num_tasks}' (or fewer) on that entry and bump the suite's version")
        self.task, self.task_index = task, (task if num_tasks is not None else None)
        self.began = time.perf_counter()
        self.policy_s = 0.0  # this episode's share of policy time, when the caller shares calls (batched)
        options = {"task_index": self.task_index} if self.task_index is not None else None
        observation, self.info = _env_call(env.reset, seed=entry.reset_seed(episode_index), options=options)
        self.start = start_of(env, observation, self.info)  # stored with the episode: nobody rebuilds the env
        self.reset_s = time.perf_counter() - self.began
        self.history = ChatHistory()
        self.history.start(observation, self.info)
        self.steps: list[StepRecord] = []
        self.done = entry.max_steps < 1

    @property
    def turn(self) -> int:
        return len(self.steps)

    def messages(self) -> list[Any]:
        """The chat the policy answers this turn (the entry's window of it)."""
        return self.history.messages(self.entry.window)

    def seed(self) -> int:
        """This turn's sampling seed (:func:`sampling_seed`)."""
        return sampling_seed(self.entry, self.episode_index, self.turn)

    def advance(self, completion: Completion, latency: float, prompt_tokens: int | None = None) -> None:
        """Step the env with the reply and record the turn; ``latency`` is the policy time charged to it."""
        messages = self.messages()
        began = time.perf_counter()
        observation, reward, terminated, truncated, self.info = _env_call(self.env.step, completion.text)
        env_s = time.perf_counter() - began
        self.history.add(completion.text, observation)
        if prompt_tokens is None:
            prompt_tokens = _prompt_tokens(self.counter, completion, messages)
        self.policy_s += latency
        self.steps.append(_step(self.turn, completion, observation, float(reward), terminated, truncated, self.info,
                                prompt_tokens, sum(len(m["content"]) for m in messages), latency, env_s))
        self.done = bool(terminated or truncated) or self.turn >= self.entry.max_steps

    def record(self, wall_s: float | None = None) -> EpisodeRecord:
        """The finished episode; ``wall_s`` (default: the time since reset) is what the episode cost."""
        entry, info, steps = self.entry, self.info, self.steps
        return EpisodeRecord(
            entry=entry.key, env_id=entry.env_id, family=entry.family, episode_index=self.episode_index,
            task=self.task, repeat=self.repeat, seed=entry.reset_seed(self.episode_index), task_index=self.task_index,
            won=bool(info.get("won", False)), score=float(info.get("score", 0.0) or 0.0),
            ret=float(sum(s.reward for s in steps)), terminated=bool(steps and steps[-1].terminated),
            truncated=bool(steps and steps[-1].truncated),
            wall_s=time.perf_counter() - self.began if wall_s is None else wall_s, steps=steps, start=self.start)


def _env_call(method: Any, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """Call ``reset``/``step``; the env's own failures (reported or raised) become :class:`InfraFailed`."""
    try:
        result = method(*args, **kwargs)
    except Exception as e:  # the contract says envs never raise on actions: this is the env's fault
        raise InfraFailed("env", f"{type(e).__name__}: {e}") from e
    info = result[-1]
    if info.get("infra_error"):
        raise InfraFailed("env", str(info["infra_error"]))
    return result


def _ask(policy: Any, env: Any, messages: list[Any], sampling: SamplingConfig) -> tuple[Completion, float]:
    if hasattr(policy, "bind"):
        policy.bind([env])
    began = time.perf_counter()
    try:
        completion = policy.act([messages], sampling=sampling)[0]
    except Exception as e:
        if is_transient(e):
            raise InfraFailed("policy", f"{type(e).__name__}: {e}") from e
        raise
    return completion, time.perf_counter() - began


def _prompt_tokens(counter: TokenPolicy | None, completion: Completion, messages: list[Any]) -> int | None:
    """Prompt tokens as the server reported them, or counted with a token policy's own chat template."""
    reported = getattr(completion, "prompt_tokens", None)
    if reported is not None:
        return int(reported)
    if counter is not None:
        return len(counter.encode(counter.render_chat(messages)))
    return None


def _step(t: int, completion: Completion, observation: str, reward: float, terminated: bool, truncated: bool,
          info: dict[str, Any], prompt_tokens: int | None, prompt_chars: int, latency: float,
          env_s: float) -> StepRecord:
    """The record of one turn; ``action`` is the native action the wrapper passed on (``info["native_action"]``)."""
    reported = getattr(completion, "completion_tokens", None)
    completion_tokens = reported if reported is not None else (len(completion.token_ids) or None)
    return StepRecord(t=t, reply=completion.text, action=info.get("native_action"), observation=observation, reward=reward,
                      terminated=bool(terminated), truncated=bool(truncated),
                      action_valid=bool(info.get("action_valid", True)), parse_error=info.get("parse_error"),
                      finish_reason=completion.finish_reason, prompt_tokens=prompt_tokens,
                      completion_tokens=completion_tokens, prompt_chars=prompt_chars, latency_s=latency, env_s=env_s)
