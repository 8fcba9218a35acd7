"""The gateway's HTTP server: OpenAI-compatible endpoints per session, backed by the trainer's token policy.

Routes (JSON bodies; errors in OpenAI's ``{"error": {message, type, code}}`` shape):

* ``POST /sessions`` — open a session; answers ``{"session_id", "base_url", "assignment"}``. A training gateway
  hands out the step's work: each session is one assignment (task index, group, env seed), and while none is
  left the call waits up to ``assign_wait_s`` and then answers 503 with ``Retry-After`` (410 once training is
  over). In env-driven mode the answer also holds the first ``messages`` (and ``tools``) of the env's episode.
* ``POST /sessions/{sid}/v1/chat/completions``, ``POST /sessions/{sid}/v1/completions``,
  ``GET /sessions/{sid}/v1/models`` — the OpenAI API, so a harness only sets ``base_url`` to
  ``…/sessions/{sid}/v1``. Every response carries an ``agentgym`` object: the segment, whether this call
  started one and why, and in env-driven mode the env's ``observation``, ``reward`` and ``done``.
* ``POST /sessions/{sid}/reward`` — ``{"reward": r, "won": bool}`` ends the session (409 in env-driven mode,
  where the env's rewards are the outcome and a harness cannot overwrite them).
* ``GET /sessions/{sid}`` (state), ``DELETE /sessions/{sid}`` (forget), ``GET /health``.

Limits (:class:`GatewayLimits`): at most ``max_sessions`` sessions are held (open, or finished and not yet taken
by the trainer or the exporter); a session idle for ``session_ttl_s`` is ended as ``expired`` (kept, never
trained on), a finished one nobody takes is released ``finished_grace_s`` after it ended, and when neither
makes room a new session is refused with 429 (``Retry-After``: when one will). A session holds at most
``max_calls`` calls and each prompt plus ``max_tokens`` must fit ``max_context_tokens``, so memory per session
is bounded too, and all sessions together hold at most ``max_held_tokens`` (a call that could pass it is 429;
tokens are held as compact arrays, :class:`~.sessions.Segment`). Bodies are bounded by :mod:`agentgym_envs.core.httpd` (413 beyond ``max_body_bytes``).
Sampling runs one call at a time, or batches concurrent sessions' calls (``max_batch``, :mod:`.batcher`); two
concurrent calls on one session get 409 for the second.
"""

from __future__ import annotations

import math
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from agentgym_envs.core.httpd import HardenedHandler, HardenedHTTPServer, HTTPRequestError, ServerLimits
from agentgym_envs.policies import Completion, SamplingConfig

from ...seeding import derive_seed
from . import wire
from .batcher import Batcher
from .sessions import Session, SessionError

_SID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_ROUTE = re.compile(r"/sessions/([^/]+)(/.*)?")


@dataclass(frozen=True)
class GatewayLimits:
    max_sessions: int = 256
    session_ttl_s: float = 600.0
    finished_grace_s: float = 60.0
    """A finished session nobody took (no exporter, no trainer) is released this long after it ended, so that
    finished sessions never hold the cap; until then ``GET /sessions/{sid}`` still reads it."""
    max_calls: int = 256
    max_context_tokens: int = 4096
    max_tokens_limit: int = 4096
    assign_wait_s: float = 10.0
    max_body_bytes: int = 8 << 20
    max_held_tokens: int = 8_000_000
    """Tokens all held sessions together may hold (ids, mask, log-probs and turns: ~13 bytes each, plus the
    rendered text): a call that could pass it is refused with 429 until sessions end, are taken or deleted."""


class GatewayServer(HardenedHTTPServer):
    """Serves ``policy`` (a token policy: ``generate(prompt_ids, sampling=...)`` with ids and log-probs).

    Args:
        policy: the sampler (the trainer's :class:`~trainer.models.backends.hf.HFPolicy` or vLLM policy).
        sampling: fixed sampling settings (training: the trainer's temperature and top-p, whatever a request
            asks, so sampling log-probs are the ones the loss assumes; ``max_tokens`` is capped by it). ``None``
            honours each request's settings.
        envs: env-driven mode: ``envs(session)`` starts the session's env and returns its first messages
            (:class:`trainer.serve.gateway.envs.EnvDriver`); ``None``: the harness reports rewards.
        on_finish: called with each session as it ends (the trainer's collector, the exporter).
        max_batch: concurrent calls sampled together (:mod:`trainer.serve.gateway.batcher`); 1: one at a time.
    """

    def __init__(self, policy: Any, *, model_name: str = "agentgym", host: str = "127.0.0.1", port: int = 0,
                 api_key: str | None = None, allow_remote: bool = False, limits: GatewayLimits | None = None,
                 sampling: SamplingConfig | None = None, envs: Any = None,
                 on_finish: Callable[[Session], None] | None = None, seed: int = 0, max_batch: int = 1):
        self.gateway_limits = limits or GatewayLimits()
        super().__init__((host, port), _Handler, what="gateway", api_key=api_key, allow_remote=allow_remote,
                         limits=ServerLimits(max_body_bytes=self.gateway_limits.max_body_bytes))
        self.policy, self.model_name, self.sampling, self.envs = policy, model_name, sampling, envs
        self.on_finish, self.seed, self.version = on_finish, seed, 0
        self.lock = threading.Lock()  # prompts built and calls recorded one at a time (the tokenizer is shared)
        self.batcher = Batcher(policy, max_batch=max_batch)  # sampling: one call at a time, or batched
        self.sessions: dict[str, Session] = {}
        self._state = threading.Condition()
        self._work: deque[dict[str, Any]] | None = None  # a training gateway's assignments; None: open sessions freely
        self._closed = False
        self._created = 0
        self._reserved = 0  # tokens of the budget held for calls in flight (GatewayLimits.max_held_tokens)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in str(host) else host}:{port}"

    def start(self) -> threading.Thread:
        return self.serve_in_thread("gateway")

    # ----------------------------------------------------------------- work (training)
    def assign(self, assignments: list[dict[str, Any]]) -> None:
        """Queue sessions to hand out (one per assignment); from then on ``POST /sessions`` takes them in order."""
        with self._state:
            self._work = deque(assignments) if self._work is None else self._work + deque(assignments)
            self._state.notify_all()

    def close_work(self) -> None:
        """No more work: ``POST /sessions`` answers 410, so a harness loop knows to stop."""
        with self._state:
            self._closed = True
            self._state.notify_all()

    def clear_work(self) -> list[dict[str, Any]]:
        """Withdraw the assignments not handed out yet (a step that timed out); returns them."""
        with self._state:
            left, self._work = list(self._work or ()), deque()
            return left

    def _next_assignment(self) -> dict[str, Any] | None:
        deadline = time.monotonic() + self.gateway_limits.assign_wait_s
        with self._state:
            while True:
                if self._work is None:
                    return None
                if self._work:
                    return self._work.popleft()
                if self._closed:
                    raise HTTPRequestError(410, "the gateway has no more work: training is over", "gone")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise HTTPRequestError(503, "no session to hand out yet (the trainer is updating); retry",
                                           "no_work", headers={"Retry-After": "1"})
                self._state.wait(left)

    # ----------------------------------------------------------------- sessions
    def open_session(self, request: dict[str, Any]) -> dict[str, Any]:
        assignment = self._next_assignment()
        meta = dict(assignment or {})
        if assignment is None and request.get("meta") is not None:
            meta = wire.client_meta(request["meta"])
        with self._state:
            self._expire()
            if len(self.sessions) >= self.gateway_limits.max_sessions:
                if assignment is not None:
                    self._work.appendleft(assignment)
                raise self._full()
            sid = f"s{self._created:06d}-{uuid.uuid4().hex[:8]}"
            seed = int(meta.get("seed", derive_seed(self.seed, self._created)))
            self._created += 1
            session = Session(sid, meta=meta, max_calls=self.gateway_limits.max_calls, seed=seed)
            self.sessions[sid] = session
        body: dict[str, Any] = {"session_id": sid, "base_url": f"{self.url}/sessions/{sid}/v1", "assignment": meta}
        if self.envs is not None:
            body.update(self.envs.start(session))
        return body

    def session(self, sid: str) -> Session:
        if not _SID.fullmatch(sid):
            raise HTTPRequestError(400, f"a session id is 1-64 characters of [A-Za-z0-9_.-], got {sid[:80]!r}")
        with self._state:
            s = self.sessions.get(sid)
        if s is None:
            raise HTTPRequestError(404, f"no session {sid!r}: open one with POST /sessions (it may have been "
                                        "deleted, or taken by the trainer after it finished)", "session_not_found")
        return s

    def forget(self, sid: str) -> None:
        s = self.session(sid)
        with self._state:
            self.sessions.pop(s.sid, None)
        if s.env is not None and self.envs is not None:
            self.envs.close(s)

    def release(self, sid: str) -> Session | None:
        """Remove a finished session and return it (the trainer's collector, the exporter); ``None`` if it is
        unknown or not finished."""
        with self._state:
            s = self.sessions.get(sid)
            return self.sessions.pop(sid) if s is not None and s.outcome.done else None

    def finish(self, session: Session, rewards: list[float], *, won: bool, source: str, error: str | None = None) -> None:
        session.finish(rewards, won=won, source=source, error=error)
        if session.env is not None and self.envs is not None:
            self.envs.close(session)
        if self.on_finish is not None:
            self.on_finish(session)

    def expire(self) -> None:
        """End the sessions idle for ``session_ttl_s`` (a harness that died mid-episode): kept, never trained on."""
        with self._state:
            self._expire()

    def _expire(self) -> None:
        """:meth:`expire` under ``_state`` (also run before each new session)."""
        now = time.monotonic()
        for s in list(self.sessions.values()):
            if not s.outcome.done and not s.busy and now - s.touched > self.gateway_limits.session_ttl_s:
                self.finish(s, [0.0] * len(s.replies), won=False, source="expired",
                            error=f"the harness left the session idle for over {self.gateway_limits.session_ttl_s:g} s")
        grace = self.gateway_limits.finished_grace_s
        for s in [s for s in self.sessions.values() if s.outcome.done and not s.busy]:
            if now - s.finished_at > grace or (s.outcome.source == "expired" and self.on_finish is not None
                                               and len(self.sessions) >= self.gateway_limits.max_sessions):
                self.sessions.pop(s.sid)  # nobody took it within the grace period (or the collector has it)

    def _full(self) -> HTTPRequestError:
        """The 429 for a full gateway: what holds the cap, and when room frees up on its own."""
        limits, now = self.gateway_limits, time.monotonic()
        finished = [s for s in self.sessions.values() if s.outcome.done]
        waits = [s.finished_at + limits.finished_grace_s - now for s in finished]
        waits += [s.touched + limits.session_ttl_s - now for s in self.sessions.values() if not s.outcome.done]
        retry = max(1, math.ceil(min(waits, default=1)))
        return HTTPRequestError(
            429, f"the gateway holds its limit of {limits.max_sessions} sessions ({len(self.sessions) - len(finished)} "
                 f"open, {len(finished)} finished and not taken yet): a finished session is released "
                 f"{limits.finished_grace_s:g} s after it ends and an idle one expires after {limits.session_ttl_s:g} s "
                 f"(room in about {retry} s); DELETE /sessions/{{sid}} frees one now", "too_many_sessions",
            headers={"Retry-After": str(retry)})

    # ----------------------------------------------------------------- calls
    def call(self, session: Session, request: dict[str, Any], kind: str) -> dict[str, Any]:
        """One chat or completions call on ``session``: prompt (token-in), sample, record, respond."""
        session.begin()
        try:
            return self._call(session, request, kind)
        finally:
            session.end()

    def _call(self, session: Session, request: dict[str, Any], kind: str) -> dict[str, Any]:
        if request.get("model") not in (None, self.model_name):
            raise HTTPRequestError(404, f"model {str(request.get('model'))[:100]!r} is not served here; use "
                                        f"{self.model_name!r}", "model_not_found")
        if kind == "chat":
            messages, raw, tools, want_logprobs = wire.chat_request(request)
        else:
            text_or_ids, want_logprobs = wire.completion_request(request)
            if isinstance(text_or_ids, list):
                wire.check_token_ids(text_or_ids, wire.vocab_size(self.policy))
        sampling = self._sampling(request, session)
        with self.lock:  # the tokenizer, one thread at a time; the session itself is this call's (Session.begin)
            if kind == "chat":
                prompt = session.chat_prompt(self.policy, messages, raw, tools)
            else:
                prompt = session.completion_prompt(self.policy, text_or_ids)
            self._check_context(len(prompt.ids), sampling.max_new_tokens)
        need = self._reserve(prompt.added + sampling.max_new_tokens)
        try:
            completion = self._generate(prompt.ids, sampling)
            with self.lock:
                message, finish = wire.assistant_message(completion.text, tools) if kind == "chat" else (None, None)
                session.record(self.policy, prompt, completion, returned=message,
                               wire=raw if kind == "chat" else None, version=self.version)
        finally:
            with self._state:
                self._reserved -= need
        extra = {"session_id": session.sid, "call": len(session.replies) - 1, "segment": len(session.segments) - 1,
                 "new_segment": prompt.new_segment, "policy_version": self.version,
                 "completion_token_ids": list(completion.token_ids)}
        if self.envs is not None:
            extra.update(self.envs.step(self, session, completion.text))
        logprobs = wire.token_logprobs(self.policy, completion) if want_logprobs else None
        if kind == "chat":
            return wire.chat_response(self.model_name, message, finish, completion, len(prompt.ids), logprobs, extra)
        return wire.completion_response(self.model_name, completion, len(prompt.ids), logprobs, extra)

    def _sampling(self, request: dict[str, Any], session: Session) -> SamplingConfig:
        asked = wire.sampling(request, self.gateway_limits.max_tokens_limit)
        seed = derive_seed(session.seed, len(session.replies))
        if self.sampling is None:
            return replace(asked, seed=seed if request.get("seed") is None else asked.seed)
        return replace(self.sampling, max_new_tokens=min(asked.max_new_tokens, self.sampling.max_new_tokens),
                       stop=asked.stop, seed=seed)

    def _reserve(self, tokens: int) -> int:
        """Hold ``tokens`` of the global budget for a call in flight (returned once it is recorded), or 429 when
        the held sessions and the calls in flight leave too little (after releasing what can be released)."""
        budget = self.gateway_limits.max_held_tokens
        with self._state:
            held = sum(s.num_tokens for s in self.sessions.values()) + self._reserved
            if held + tokens > budget:
                self._expire()
                held = sum(s.num_tokens for s in self.sessions.values()) + self._reserved
            if held + tokens > budget:
                raise HTTPRequestError(429, f"this call could add {tokens} tokens (its new prompt ids and max_tokens) "
                                            f"to the {held} the gateway's {len(self.sessions)} sessions hold, past its "
                                            f"budget of {budget} (GatewayLimits.max_held_tokens); end, or DELETE, "
                                            "sessions, or retry once finished ones are released",
                                       "token_budget_exceeded", headers={"Retry-After": "1"})
            self._reserved += tokens
        return tokens

    def _check_context(self, prompt_tokens: int, max_tokens: int) -> None:
        limit = self.gateway_limits.max_context_tokens
        config = getattr(getattr(self.policy, "model", None), "config", None)
        positions = getattr(config, "max_position_embeddings", None)
        if isinstance(positions, int):
            limit = min(limit, positions)
        if prompt_tokens + max_tokens > limit:
            raise HTTPRequestError(400, f"the prompt is {prompt_tokens} tokens and max_tokens {max_tokens}; together "
                                        f"they exceed the gateway's context of {limit} tokens; shorten the chat "
                                        "(a new segment starts from whatever you send)", "context_length_exceeded")

    def _generate(self, ids: list[int], sampling: SamplingConfig) -> Completion:
        if self.batcher.policy is not self.policy:  # the trainer swapped the sampling policy (a new vLLM engine)
            self.batcher.policy = self.policy
        try:
            return self.batcher.generate(ids, sampling)
        except Exception as e:  # the policy itself failed: our machinery, a 500 that says what broke
            raise HTTPRequestError(500, f"the policy failed: {type(e).__name__}: {e}", "server_error") from e


class _Handler(HardenedHandler):
    server: GatewayServer

    def respond(self, method: str) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path == "/health":
            return self.route(method, path, {"/health": {"GET": lambda: self.send_json(200, {"status": "ok"})}})
        if path == "/sessions":
            return self.route(method, path, {"/sessions": {"POST": self._open}})
        match = _ROUTE.fullmatch(path)
        if match is None:
            raise HTTPRequestError(404, f"no route {method} {path[:200]}; the gateway serves /sessions and "
                                        "/sessions/{sid}/v1/chat/completions (see trainer/serve/gateway/server.py)", "not_found")
        sid, rest = match.group(1), match.group(2) or ""
        table = {"": {"GET": lambda: self.send_json(200, self.server.session(sid).summary()), "DELETE": lambda: self._forget(sid)},
                 "/reward": {"POST": lambda: self._reward(sid)},
                 "/v1/models": {"GET": self._models},
                 "/v1/chat/completions": {"POST": lambda: self._call(sid, "chat")},
                 "/v1/completions": {"POST": lambda: self._call(sid, "completion")}}
        methods = table.get(rest)
        if methods is None:
            raise HTTPRequestError(404, f"no route {method} {path[:200]}; under /sessions/{{sid}} the gateway serves "
                                        + ", ".join(table), "not_found")
        self.route(method, rest, {rest: methods})

    def _json_object(self) -> dict[str, Any]:
        body = self.read_json() if self.content_length() else {}
        if not isinstance(body, dict):
            raise HTTPRequestError(400, f"expected a JSON object, got {type(body).__name__}")
        return body

    def _open(self) -> None:
        self.send_json(200, self.server.open_session(self._json_object()))

    def _forget(self, sid: str) -> None:
        self.server.forget(sid)
        self.send_json(200, {"deleted": sid})

    def _models(self) -> None:
        self.send_json(200, {"object": "list", "data": [{"id": self.server.model_name, "object": "model",
                                                          "created": 0, "owned_by": "agentgym"}]})

    def _reward(self, sid: str) -> None:
        session = self.server.session(sid)
        body = self._json_object()
        reward, won = body.get("reward"), body.get("won", False)
        if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not abs(reward) < float("inf"):
            raise HTTPRequestError(400, f"'reward' must be a finite number, got {str(reward)[:40]}")
        if not isinstance(won, bool):
            raise HTTPRequestError(400, f"'won' must be true or false, got {str(won)[:40]}")
        if self.server.envs is not None:
            raise HTTPRequestError(409, "this gateway is env-driven: the env's rewards are the session's outcome, "
                                        "and a harness cannot set them", "env_driven")
        session.begin(call=False)  # not while a call is in flight, and not twice
        try:
            rewards = [0.0] * max(len(session.replies) - 1, 0) + [float(reward)]
            self.server.finish(session, rewards, won=won, source="harness")
        finally:
            session.end()
        self.send_json(200, session.summary())

    def _call(self, sid: str, kind: str) -> None:
        session = self.server.session(sid)
        self.send_json(200, self.server.call(session, self._json_object(), kind))

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        import json

        data = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")  # never NaN in JSON
        self.send_bytes(status, "application/json", data, headers)

    def route(self, method: str, path: str, table: dict) -> None:
        try:
            super().route(method, path, table)
        except SessionError as e:
            raise HTTPRequestError(e.status, e.message, e.code) from None
