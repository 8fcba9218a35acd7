"""Token-exact capture of one agent session: the ids each chat call read and sampled, in segments.

A :class:`Session` is what an external harness builds by calling the gateway's endpoints under one session id.
Every call is recorded as the exact prompt ids the policy read, the ids it sampled and their log-probs.

**Token-in.** From the second call on, the prompt is *not* the harness's messages re-tokenised: when the
request's messages begin with the previous request's messages plus the reply the gateway returned (checked by
a **prefix fingerprint**, a SHA-256 over the normalised messages, ids of tool calls left out), the gateway
renders the chat with that reply *as it was sampled* (not as the harness echoed it back) and feeds the model
the previous prompt ids + the sampled ids + the ids of what the template adds for the new messages, exactly
as :class:`~trainer.collect.trajectory.TrajectoryBuilder` does for the trainer's own rollouts. The new text must
extend the text seen so far (the prefix-extension check); only the suffix is tokenised.

**Segments.** When either check fails, the harness (or the template) rewrote history: it truncated or
summarised the chat, edited a reply, or the template re-renders past turns (Qwen3 drops past ``<think>``).
The gateway then closes the current token sequence and starts a new *segment* from the template's rendering
of the chat (the request as sent; with ``"template"``, its replies as sampled), and records why (``"messages"``: the chat is not the previous one plus new messages;
``"template"``: it is, but its rendering does not extend the text the model saw). Nothing is re-tokenised
behind the model's back: each segment's sampled ids were sampled conditioned on exactly that segment's ids,
so each trains on its own (:mod:`trainer.serve.gateway.assemble`), as history folding's segments do.

Completions (``/v1/completions``) take a text prompt or token ids; the same rule applies on text (or ids):
a prompt that begins with the previous prompt + the completion continues the segment, any other starts one.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym_envs.chat import Chat
from agentgym_envs.policies import Completion, Message

#: Why a new segment started: the first call, the chat was rewritten, the template re-rendered past turns,
#: or a completions prompt did not extend the previous one.
SegmentReason = str
#: The value a non-finite log-prob is reported as in JSON (OpenAI's own sentinel for "impossible"): JSON has no NaN.
NONFINITE_LOGPROB = -9999.0


class SessionError(Exception):
    """A request a session cannot take (the HTTP layer answers it with ``status``)."""

    def __init__(self, status: int, message: str, code: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


@dataclass
class Segment:
    """One token sequence of a session: ids, loss mask (1 on sampled ids), sampling log-probs, turn numbers.

    Held as compact arrays (13 bytes a token, against ~65 for Python lists of ints and floats): the gateway holds
    every open session's tokens. Log-probs are float32, the precision the policy computes them in."""

    token_ids: array  # 'i'
    loss_mask: array  # 'b'
    logprobs: array  # 'f'
    turns: array  # 'i'
    prompt_length: int
    reason: SegmentReason
    text: str = ""
    """What the model has read and written so far, as text (the prefix-extension check compares against it)."""

    @classmethod
    def start(cls, ids: Sequence[int], text: str, reason: SegmentReason) -> Segment:
        segment = cls(array("i"), array("b"), array("f"), array("i"), len(ids), reason)
        segment.extend_prompt(ids, text)
        return segment

    def extend_prompt(self, ids: Sequence[int], text: str) -> None:
        """Append what the template (or env) wrote after the last reply: not sampled, so masked out."""
        n = len(ids)
        self.token_ids.extend(ids)
        self.loss_mask.frombytes(bytes(n))
        self.logprobs.frombytes(bytes(4 * n))  # 0.0
        self.turns.extend(array("i", [-1]) * n)
        self.text = text

    def add_reply(self, completion: Completion, turn: int, reply_text: str) -> None:
        n = len(completion.token_ids)
        self.token_ids.extend(completion.token_ids)
        self.loss_mask.extend(array("b", [1]) * n)
        self.logprobs.extend(float(x) for x in completion.logprobs)
        self.turns.extend(array("i", [turn]) * n)
        self.text += reply_text

    @property
    def num_sampled(self) -> int:
        return sum(self.loss_mask)


@dataclass
class Prompt:
    """What one call will feed the model: the ids, and how the session grows once the reply is in."""

    ids: list[int]
    text: str
    chat: list[Message] | None
    """The chat as the model saw it (``None`` for a completions call)."""
    new_segment: SegmentReason | None
    """``None``: the call continues the current segment; else why a new one starts."""
    delta: list[int] = field(default_factory=list)
    """With ``new_segment`` None: the ids appended to the current segment before the reply."""

    @property
    def added(self) -> int:
        """The tokens this prompt adds to what the session holds (a new segment holds all of its ids)."""
        return len(self.ids) if self.new_segment is not None else len(self.delta)


@dataclass
class Outcome:
    """How the session ended: its reward (per turn, summed for the return), success, and who said so."""

    rewards: list[float] = field(default_factory=list)
    won: bool = False
    done: bool = False
    source: str = ""
    """``"harness"`` (``POST /reward``), ``"env"`` (env-driven mode) or ``"expired"``."""
    error: str | None = None
    """Set when the session cannot be trained on (the policy returned non-finite log-probs, it expired)."""


class Session:
    """One harness session: its segments, the chat it last saw, per-turn records and its outcome.

    Thread-safety: :meth:`begin` takes the session for one call (a second concurrent call on the same session
    is refused with 409: its prompt would depend on a reply not yet sampled), :meth:`end` releases it.
    """

    def __init__(self, sid: str, *, meta: dict[str, Any] | None = None, max_calls: int = 256, seed: int = 0):
        self.sid, self.meta, self.max_calls, self.seed = sid, dict(meta or {}), max_calls, seed
        self.segments: list[Segment] = []
        self.replies: list[str] = []
        self.versions: list[int] = []
        """The policy version (trainer step) that sampled each call."""
        self.state_keys: list[str] = []
        self.turn_valid: list[bool] = []
        self.outcome = Outcome()
        self.created = self.touched = time.monotonic()
        self.finished_at = math.inf  # when the outcome came (the server releases it a grace period later)
        self.env: Any = None  # env-driven mode: the env this session steps and its chat (trainer/serve/gateway/envs.py)
        self._fingerprint: str | None = None
        self._prefix_len = 0  # messages the fingerprint covers: the previous request's plus the returned reply
        self._chat: list[Message] = []  # the chat as the model saw it, ending with the reply as sampled
        self._busy = threading.Lock()
        self._tokens = 0

    # ----------------------------------------------------------------- locking
    def begin(self, *, call: bool = True) -> None:
        """Take the session for a call (``call``) or for ending it; 409 if busy or finished, 400 past ``max_calls``."""
        if not self._busy.acquire(blocking=False):
            raise SessionError(409, f"session {self.sid!r} already has a call in flight; a harness must wait for a "
                                    "reply before the next call of the same session (use one session per episode)",
                               "session_busy")
        if self.outcome.done:
            self._busy.release()
            raise SessionError(409, f"session {self.sid!r} is finished ({self.outcome.source}); start a new session",
                               "session_finished")
        if call and len(self.replies) >= self.max_calls:
            self._busy.release()
            raise SessionError(400, f"session {self.sid!r} reached its limit of {self.max_calls} calls; post its "
                                    "reward and start a new session", "session_too_long")

    def end(self) -> None:
        self.touched = time.monotonic()
        self._busy.release()

    @property
    def busy(self) -> bool:
        return self._busy.locked()

    # ----------------------------------------------------------------- chat calls
    def chat_prompt(self, policy: Any, messages: list[Message], wire: list[dict], tools: list[dict] | None) -> Prompt:
        """The prompt for a chat call: token-in continuation of the current segment where the chat extends the
        previous one, else a new segment (see the module docstring). ``wire`` is the request's raw messages
        (fingerprinted), ``messages`` the same converted to the policy's chat."""
        continues = (self._fingerprint is not None and len(wire) > self._prefix_len
                     and fingerprint(wire[:self._prefix_len], tools) == self._fingerprint)
        chat = Chat([*self._chat, *messages[self._prefix_len:]] if continues else messages, tools=tools)
        text = render(policy, chat)
        current = self.segments[-1] if self.segments else None
        if continues and current is not None and text.startswith(current.text):
            delta = list(policy.encode(text[len(current.text):]))
            return Prompt([*current.token_ids, *delta], text, chat, None, delta)
        reason = "first" if current is None else ("template" if continues else "messages")
        return Prompt(list(policy.encode(text)), text, chat, reason)

    def completion_prompt(self, policy: Any, prompt: str | list[int]) -> Prompt:
        """The prompt for a completions call: a text, or token ids used as given (token-in by the harness)."""
        current = self.segments[-1] if self.segments else None
        if isinstance(prompt, list):
            n = 0 if current is None else len(current.token_ids)
            if current is not None and len(prompt) > n and array("i", prompt[:n]) == current.token_ids:
                delta = prompt[n:]
                return Prompt(list(prompt), current.text + policy.decode(delta), None, None, delta)
            return Prompt(list(prompt), policy.decode(prompt), None, "first" if current is None else "prompt")
        if current is not None and len(prompt) > len(current.text) and prompt.startswith(current.text):
            delta = list(policy.encode(prompt[len(current.text):]))
            return Prompt([*current.token_ids, *delta], prompt, None, None, delta)
        return Prompt(list(policy.encode(prompt)), prompt, None, "first" if current is None else "prompt")

    def record(self, policy: Any, prompt: Prompt, completion: Completion, *, returned: dict | None,
               wire: list[dict] | None, version: int = 0) -> None:
        """Add a finished call: extend (or start) the segment with the prompt's new ids, then the sampled ids.

        ``returned`` is the assistant message sent back (chat calls): with ``wire`` it becomes the fingerprint
        the next call's messages must begin with."""
        if len(completion.logprobs) != len(completion.token_ids) or not completion.token_ids:
            raise SessionError(500, f"the policy returned {len(completion.token_ids)} ids and "
                                    f"{len(completion.logprobs)} log-probs; a recorded call needs one log-prob per "
                                    "sampled id and at least one id (a token policy: HF or vLLM)", "server_error")
        if not all(math.isfinite(x) for x in completion.logprobs) and self.outcome.error is None:
            self.outcome.error = (f"the policy returned a non-finite log-prob on call {len(self.replies)}: the model's "
                                  "weights or logits are broken (NaN/inf); this session is kept but not trained on")
        if prompt.new_segment is None:
            self.segments[-1].extend_prompt(prompt.delta, prompt.text)
        else:
            self.segments.append(Segment.start(prompt.ids, prompt.text, prompt.new_segment))
        self._tokens += prompt.added + len(completion.token_ids)
        turn_text = getattr(policy, "decode_as_turn", policy.decode)(completion.token_ids)
        self.segments[-1].add_reply(completion, len(self.replies), turn_text)
        self.replies.append(completion.text)
        self.versions.append(int(version))
        self.state_keys.append(str(self.meta.get("state_key", "")))
        if prompt.chat is not None and wire is not None and returned is not None:
            self._chat = [*prompt.chat, Message(role="assistant", content=completion.text)]
            self._prefix_len = len(wire) + 1
            self._fingerprint = fingerprint([*wire, returned], prompt.chat.tools if isinstance(prompt.chat, Chat) else None)
        else:
            self._fingerprint, self._prefix_len, self._chat = None, 0, []

    # ----------------------------------------------------------------- outcome
    def finish(self, rewards: list[float], *, won: bool, source: str, error: str | None = None) -> None:
        o = self.outcome
        o.rewards, o.won, o.done, o.source = [float(r) for r in rewards], bool(won), True, source
        o.error = o.error or error
        self.finished_at = time.monotonic()

    @property
    def num_tokens(self) -> int:
        """Tokens held in all segments (counted as calls are recorded: the server sums it over every session)."""
        return self._tokens

    def summary(self) -> dict[str, Any]:
        """The JSON-safe state of the session (``GET /sessions/{sid}``)."""
        return {"session_id": self.sid, "calls": len(self.replies), "tokens": self.num_tokens,
                "segments": [{"reason": s.reason, "tokens": len(s.token_ids), "sampled": s.num_sampled}
                             for s in self.segments],
                "done": self.outcome.done, "reward": sum(self.outcome.rewards), "won": self.outcome.won,
                "outcome_source": self.outcome.source, "error": self.outcome.error, "meta": self.meta}


def render(policy: Any, chat: Chat) -> str:
    """The policy's rendering of ``chat``; a chat its template refuses is the client's mistake (400)."""
    try:
        return policy.render_chat(chat)
    except Exception as e:  # jinja's TemplateError, raise_exception, a template that cannot read these roles
        raise SessionError(400, f"the model's chat template cannot render these messages: {type(e).__name__}: "
                                f"{str(e)[:200]}") from e


def fingerprint(messages: Sequence[Any], tools: Any = None) -> str:
    """SHA-256 of ``messages`` normalised: role, text content and tool calls (name and parsed arguments); the
    ids a client or server gives tool calls and any other field (``refusal``, ``annotations``) are left out.
    The request's ``tools`` count too (a template renders them at the top of the chat)."""
    h = hashlib.sha256(json.dumps(tools, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    for m in messages:
        h.update(json.dumps(_normalise(m), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def _normalise(m: Any) -> list[Any]:
    m = m if isinstance(m, dict) else {}
    content = m.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text", ""), str))
    calls = []
    for call in m.get("tool_calls") or []:
        function = call.get("function", call) if isinstance(call, dict) else {}
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass
        calls.append([function.get("name"), arguments])
    return [m.get("role"), content or "", calls]
