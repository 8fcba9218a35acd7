"""Trajectories: an episode as the exact token ids the policy read and wrote (``docs/architecture.md``, The trainer).

A trajectory is one token sequence per episode: the first prompt (chat template applied to the system
prompt and first observation), then for each turn the ids the policy sampled, exactly as sampled, then
the ids of the text the template and env inserted before the next reply. ``loss_mask`` is 1 exactly on
sampled ids, which carry their sampling log-probs. Nothing is re-tokenised: the ids the trainer scores
are the ids the sampler conditioned on.

The **prefix-extension invariant** is checked every turn: the template's rendering of the chat after the
turn must begin with the text seen so far (previous prompt + the reply as sampled). Only the new suffix
is tokenised. A template that rewrites earlier turns raises :class:`~trainer.errors.PrefixExtensionError`.

**History folding** is the one deliberate break of the invariant: when an episode outgrows its context
budget, the rollout may re-render it keeping only the last turns (:meth:`TrajectoryBuilder.fold`). The
sequence seen so far is then closed as a *segment* and a new one starts from the folded prompt; each
segment is scored on its own (its replies were sampled conditioned on exactly its ids), while rewards,
``state_key`` values and advantages stay per episode. ``token_turns`` count turns across segments.

**Turn samples** (``rollout.sample_unit=turn``) use the same segments: every turn is a segment of its
own, the template's rendering of the system prompt, the first observation and the last ``turn_window``
turns followed by the ids sampled on it (:meth:`TrajectoryBuilder.fold` before every turn but the first).
No rendering has to extend another, so templates that rewrite history (Qwen3 dropping past
``<think>`` blocks) train token-exactly. :func:`prefix_extension_mismatch` probes a template once to
tell which kind it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from agentgym_envs.policies import Completion, Message, TokenPolicy

from ..errors import PrefixExtensionError

#: How an episode ended: the env ended it, the turn limit or env truncated it, the context budget ran
#: out, or the env's infrastructure failed (never blamed on the agent: such trajectories are not trained on).
Finish = Literal["terminated", "truncated", "context", "infra_error", "running"]


@dataclass
class Trajectory:
    """One episode's tokens and outcome. Per-token lists have one entry per id in ``token_ids``."""

    token_ids: list[int]
    loss_mask: list[int]
    """1 on ids the policy sampled, 0 on prompt, template and observation ids."""
    sampling_logprobs: list[float]
    """The sampler's log-prob of each sampled id (0.0 where ``loss_mask`` is 0)."""
    token_turns: list[int]
    """The turn each sampled id belongs to (-1 where ``loss_mask`` is 0)."""
    prompt_length: int
    rewards: list[float] = field(default_factory=list)
    """Env reward of each turn."""
    state_keys: list[str] = field(default_factory=list)
    """``state_key`` of the state each turn's reply was written in (for GiGPO step groups)."""
    turn_valid: list[bool] = field(default_factory=list)
    """Per turn, whether the env accepted the action (``info["action_valid"]``; a tool env's failed call is an
    invalid action); empty when not recorded. TAO filtering reads it (:mod:`trainer.learn.algorithms.tool_use`)."""
    replies: list[str] = field(default_factory=list)
    won: bool = False
    finish: Finish = "running"
    infra_error: str | None = None
    task_index: int = -1
    group: int = -1
    turn_values: list[float] | None = None
    """The critic's value of the state each turn's reply was written in (set by the trainer for PPO)."""
    token_versions: list[int] = field(default_factory=list)
    """The policy version (updates made) that sampled each id, -1 on ids not sampled; empty when the sampling
    policy has no ``version`` (the synchronous loop). Async collection reads it (:mod:`trainer.collect.staleness`)."""
    earlier: list[Trajectory] = field(default_factory=list)
    """Segments closed by history folding, oldest first: token fields only (their per-turn lists are empty).
    The token fields of this object are the last segment."""
    chat: list[Message] | None = None
    """The whole episode's chat, final observation included (set by the rollout; :mod:`trainer.collect.rollout_dump`)."""
    reset_seed: int | None = None
    """The seed the env was reset with (set by the rollout)."""

    @property
    def segments(self) -> list[Trajectory]:
        """Every token sequence of the episode, in order: the folded-away ones, then this one."""
        return [*self.earlier, self]

    @property
    def num_turns(self) -> int:
        return len(self.rewards)

    @property
    def ret(self) -> float:
        return float(sum(self.rewards))

    @property
    def num_generated(self) -> int:
        return sum(sum(s.loss_mask) for s in self.segments)

    @property
    def trainable(self) -> bool:
        """Whether the trajectory carries a learning signal (at least one reply, no infrastructure failure)."""
        return self.infra_error is None and self.num_generated > 0


class TrajectoryBuilder:
    """Grows a :class:`Trajectory` turn by turn while checking the prefix-extension invariant.

    >>> from trainer.models.tiny.chat_template import render_chat
    >>> class Chars:  # a toy token policy: one id per character
    ...     render_chat = staticmethod(lambda m: render_chat(m, add_generation_prompt=True))
    ...     encode = staticmethod(lambda text: [ord(c) for c in text])
    ...     decode = staticmethod(lambda ids: "".join(map(chr, ids)))
    >>> b = TrajectoryBuilder(Chars(), [{"role": "user", "content": "hi"}])
    >>> b.add_reply(Completion("ok", [ord("o"), ord("k")], [-0.5, -0.1]), state_key="s0")
    >>> b.add_observation([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"},
    ...                    {"role": "user", "content": "bye"}])
    >>> b.text  # the reply had no end-of-turn id: the template's <|end|> is env-side (loss_mask 0)
    '<|user|>\\nhi<|end|>\\n<|assistant|>\\nok<|end|>\\n<|user|>\\nbye<|end|>\\n<|assistant|>\\n'
    >>> sum(b.trajectory.loss_mask), b.trajectory.token_turns.count(0)
    (2, 2)
    """

    def __init__(self, policy: TokenPolicy, messages: list[Message], *, task_index: int = -1, group: int = -1):
        self.policy = policy
        self.versioned = getattr(policy, "version", None) is not None  # async collection tags sampled ids
        self.text = policy.render_chat(messages)
        ids = policy.encode(self.text)
        self.trajectory = Trajectory(list(ids), [0] * len(ids), [0.0] * len(ids), [-1] * len(ids), len(ids),
                                     task_index=task_index, group=group, token_versions=self._untagged(len(ids)))

    def _untagged(self, n: int) -> list[int]:
        return [-1] * n if self.versioned else []

    @property
    def ids(self) -> list[int]:
        """The prompt for the next reply: every id so far."""
        return self.trajectory.token_ids

    def add_reply(self, completion: Completion, *, state_key: str) -> None:
        """Append the sampled ids (loss-masked in) with their log-probs."""
        if len(completion.logprobs) != len(completion.token_ids) or not completion.token_ids:
            raise ValueError(f"a trained reply needs one log-prob per sampled id and at least one id; got "
                             f"{len(completion.token_ids)} ids and {len(completion.logprobs)} log-probs")
        t, turn = self.trajectory, self.trajectory.num_turns
        t.token_ids += completion.token_ids
        t.loss_mask += [1] * completion.num_tokens
        t.sampling_logprobs += [float(x) for x in completion.logprobs]
        t.token_turns += [turn] * completion.num_tokens
        if self.versioned:  # the version of the weights that just sampled these ids
            t.token_versions += [int(self.policy.version)] * completion.num_tokens
        t.replies.append(completion.text)
        t.state_keys.append(state_key)
        t.rewards.append(0.0)  # filled by record_step
        self.text += getattr(self.policy, "decode_as_turn", self.policy.decode)(completion.token_ids)

    def record_step(self, reward: float) -> None:
        self.trajectory.rewards[-1] = float(reward)

    def add_observation(self, messages: list[Message]) -> None:
        """Append the ids of what the template adds after the last reply (observation, role markers)."""
        rendered = self.policy.render_chat(messages)
        if not rendered.startswith(self.text):
            raise PrefixExtensionError(_mismatch(self.text, rendered, self.trajectory.num_turns))
        delta = self.policy.encode(rendered[len(self.text):])
        t = self.trajectory
        t.token_ids += delta
        t.loss_mask += [0] * len(delta)
        t.sampling_logprobs += [0.0] * len(delta)
        t.token_turns += [-1] * len(delta)
        t.token_versions += self._untagged(len(delta))
        self.text = rendered

    def fold(self, messages: list[Message]) -> None:
        """Close the current segment and start a new one from the rendering of ``messages`` (a folded chat).

        The prefix-extension check restarts from the folded prompt; the closed segment keeps its ids,
        mask, log-probs and turn numbers and is trained on as a sequence of its own. A segment with no
        sampled id yet (a prompt only) has nothing to train on: it is replaced, not closed.
        """
        t = self.trajectory
        if any(t.loss_mask):
            t.earlier.append(Trajectory(t.token_ids, t.loss_mask, t.sampling_logprobs, t.token_turns, t.prompt_length,
                                        task_index=t.task_index, group=t.group, token_versions=t.token_versions))
        self.text = self.policy.render_chat(messages)
        ids = list(self.policy.encode(self.text))
        t.token_ids, t.loss_mask, t.sampling_logprobs, t.token_turns = ids, [0] * len(ids), [0.0] * len(ids), [-1] * len(ids)
        t.prompt_length = len(ids)
        t.token_versions = self._untagged(len(ids))

    def finish(self, how: Finish, *, won: bool = False, infra_error: str | None = None) -> Trajectory:
        """End the episode. A last segment that is a prompt only (the budget ended the episode right after a
        fold) is dropped: the segment before it becomes the trajectory's own token fields again."""
        t = self.trajectory
        if t.earlier and not any(t.loss_mask):
            last = t.earlier.pop()
            t.token_ids, t.loss_mask, t.sampling_logprobs = last.token_ids, last.loss_mask, last.sampling_logprobs
            t.token_turns, t.prompt_length = last.token_turns, last.prompt_length
            t.token_versions = last.token_versions
        t.finish, t.won, t.infra_error = how, won, infra_error
        return t


#: The chat the template probe renders: a reply with a reasoning block, then one more observation.
_PROBE_REPLY = "<think>\nThe probe reasons here.\n</think>\n\nprobe action"
_PROBE_CHAT: list[Message] = [{"role": "user", "content": "probe observation"}]


def prefix_extension_mismatch(policy: TokenPolicy) -> str | None:
    """Why ``policy``'s chat template cannot train whole episodes as one sequence, or ``None`` when it can.

    Renders a one-turn chat whose reply holds a ``<think>`` block (ended by the end-of-turn id, as sampled),
    then the chat after one more observation, through the same :class:`TrajectoryBuilder` check the
    rollout makes. Two renderings and two encodings: cheap enough to run once per trainer.
    """
    builder = TrajectoryBuilder(policy, _PROBE_CHAT)
    ids = list(policy.encode(_PROBE_REPLY)) + _end_of_turn(policy)
    builder.add_reply(Completion(_PROBE_REPLY, ids, [0.0] * len(ids)), state_key="")
    try:
        builder.add_observation([*_PROBE_CHAT, {"role": "assistant", "content": _PROBE_REPLY},
                                 {"role": "user", "content": "next observation"}])
    except PrefixExtensionError as err:
        return str(err)
    return None


def _end_of_turn(policy: TokenPolicy) -> list[int]:
    """The id a reply ends with when the model stops by itself: the template's end-of-turn id where the policy
    knows it (:meth:`~trainer.models.backends.chat_tokens.ChatTokens.end_of_turn_id`), else the tokenizer's EOS,
    else none (a policy without a tokenizer)."""
    known = getattr(policy, "end_of_turn_id", None)
    end = known() if known is not None else getattr(getattr(policy, "tokenizer", None), "eos_token_id", None)
    return [] if end is None else [int(end)]


def _mismatch(seen: str, rendered: str, turn: int) -> str:
    at = next((i for i, (a, b) in enumerate(zip(seen, rendered)) if a != b), min(len(seen), len(rendered)))
    return (f"turn {turn}: the chat template's rendering does not extend the text the policy saw "
            f"(first difference at character {at}: expected {seen[at:at + 40]!r}, got {rendered[at:at + 40]!r}). "
            "The template rewrites earlier turns (e.g. strips <think> from past replies or re-formats them); "
            "training whole episodes on it would score tokens the policy never conditioned on. Set "
            "rollout.sample_unit=turn (or auto) to train each turn as its own sample, or use a template that "
            "renders past turns verbatim (policy.chat_template / policy.chat_template_kwargs).")
