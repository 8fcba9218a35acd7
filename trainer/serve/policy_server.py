"""A small OpenAI-compatible HTTP server that exposes any :class:`~agentgym_envs.policies.Policy`.

``POST /v1/chat/completions`` and ``GET /v1/models`` (plus ``GET /health``), on 127.0.0.1 by default, built
on :mod:`agentgym_envs.core.httpd` (its guarantees: API key checked before any body is read, bodies of at most
``MAX_BODY_BYTES`` with a valid ``Content-Length``, a thread cap answered 503, idle and read timeouts, client
mistakes answered 4xx; a non-loopback ``--host`` needs ``--allow-remote`` and ``--api-key-env``). It exists so
that the HTTP evaluation path is tested against a real server, and so that a local model (the tiny policy, a
Hugging Face directory) can be evaluated by anything that speaks the OpenAI API. It is not a production
server: one policy call at a time (the lock keeps non-thread-safe policies safe), no streaming, ``n = 1``.
HTTP 500 means the policy (or this server) failed; anything the client got wrong is a 4xx. A request's
``tools`` ride with the chat to the policy (a token policy renders them with its template), ``tool`` messages
are tool results, and an assistant message's ``tool_calls`` become ``<tool_call>{json}</tool_call>`` text
after its content, as the ``tool_calls`` protocol writes a call.

    python -m trainer.serve --tiny --port 8000          # the embedded tiny policy
    python -m trainer.serve --hf ./my-model --port 8000
    python -m trainer.serve --reply "Action: look"      # a scripted policy (tests, demos)

The first line printed is ``serving <model> at http://<host>:<port>/v1`` (with ``--port 0``, the port the OS chose).
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from agentgym_envs.core.httpd import (BindRefused, HardenedHandler, HardenedHTTPServer, HTTPRequestError,
                                      ServerLimits, add_bind_arguments, bind_settings)

from agentgym_envs.chat import Chat
from agentgym_envs.policies import Completion, Message, Policy, SamplingConfig, TokenPolicy

from ..models.backends.openai_http import tool_calls_text

MAX_BODY_BYTES = 8 << 20
DEFAULT_MAX_TOKENS = 256
MAX_TOKENS_LIMIT = 8192
MAX_MESSAGES = 4096
MAX_TOOLS = 128
MAX_STOP = 4


class ScriptedReplyPolicy:
    """Replies with ``replies[k % len(replies)]`` where ``k`` counts the assistant turns already in the chat.

    Stateless, so concurrent chats and repeated requests get the same answers.
    """

    def __init__(self, replies: Sequence[str]):
        if not replies:
            raise ValueError("ScriptedReplyPolicy needs at least one reply")
        self.replies = list(replies)

    def act(self, batch: list[list[Message]], *, sampling: SamplingConfig) -> list[Completion]:
        return [Completion(self.replies[sum(m["role"] == "assistant" for m in chat) % len(self.replies)])
                for chat in batch]


class PolicyServer(HardenedHTTPServer):
    """Serves ``policy`` under ``model_name``; ``url`` is the API root (``…/v1``).

    With ``api_key`` set, requests must carry ``Authorization: Bearer <api_key>`` (else HTTP 401, answered
    from the headers before any body is read). Binding beyond loopback needs ``allow_remote=True`` and an
    ``api_key``. ``limits`` bound bodies, threads and timeouts (:mod:`agentgym_envs.core.httpd`);
    ``max_tokens_limit`` bounds ``max_tokens``, and a token policy's prompt plus ``max_tokens`` must fit
    the model's context (``max_position_embeddings``), else HTTP 400.
    """

    def __init__(self, policy: Policy, *, model_name: str = "agentgym", host: str = "127.0.0.1", port: int = 0,
                 api_key: str | None = None, allow_remote: bool = False, verbose: bool = False,
                 limits: ServerLimits | None = None, max_tokens_limit: int = MAX_TOKENS_LIMIT):
        super().__init__((host, port), _Handler, what="policy server", api_key=api_key, allow_remote=allow_remote,
                         limits=limits or ServerLimits(max_body_bytes=MAX_BODY_BYTES))
        self.policy, self.model_name, self.verbose = policy, model_name, verbose
        self.max_tokens_limit = max_tokens_limit
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in str(host) else host}:{port}/v1"

    def start(self) -> threading.Thread:
        """Serve in a daemon thread (tests); stop with ``shutdown()`` then ``server_close()`` (or ``close()``)."""
        return self.serve_in_thread("policy-server")

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """The chat-completion response body for a request body (a 4xx :class:`HTTPRequestError` if invalid)."""
        messages = Chat(request_messages(request.get("messages")), tools=request_tools(request.get("tools")))
        sampling = request_sampling(request, self.max_tokens_limit)
        with self.lock:
            prompt_tokens = _prompt_tokens(self.policy, messages)
            _check_context(self.policy, prompt_tokens, sampling.max_new_tokens)
            try:
                completion = self.policy.act([messages], sampling=sampling)[0]
            except Exception as e:  # the policy itself failed: our machinery, so a 500 that says what broke
                raise HTTPRequestError(500, f"the policy failed: {type(e).__name__}: {e}", "server_error") from e
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": self.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": completion.text},
                         "finish_reason": completion.finish_reason, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(completion.token_ids),
                      "total_tokens": prompt_tokens + len(completion.token_ids)},
        }


class _Handler(HardenedHandler):
    server: PolicyServer

    def respond(self, method: str) -> None:
        path = self.path.split("?")[0].rstrip("/")
        self.route(method, path, {"/v1/models": {"GET": self._models}, "/health": {"GET": self._health},
                                  "/v1/chat/completions": {"POST": self._chat}})

    def _models(self) -> None:
        data = [{"id": self.server.model_name, "object": "model", "created": 0, "owned_by": "agentgym"}]
        self.send_json(200, {"object": "list", "data": data})

    def _health(self) -> None:
        self.send_json(200, {"status": "ok"})

    def _chat(self) -> None:
        request = self.read_json()
        if not isinstance(request, dict):
            raise HTTPRequestError(400, f"expected a JSON object with 'model' and 'messages', got {type(request).__name__}")
        if request.get("model") != self.server.model_name:
            raise HTTPRequestError(404, f"model {str(request.get('model'))[:100]!r} is not served here; use "
                                   f"{self.server.model_name!r}", "model_not_found")
        if request.get("stream"):
            raise HTTPRequestError(400, "streaming is not supported by this server; send stream=false")
        if request.get("n", 1) != 1 or isinstance(request.get("n"), bool):
            raise HTTPRequestError(400, f"only n=1 is supported, got n={str(request.get('n'))[:20]}")
        self.send_json(200, self.server.complete(request))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        if self.server.verbose:
            BaseHTTPRequestHandler.log_message(self, format, *args)


def request_messages(value: Any) -> list[Message]:
    """The request's ``messages``, checked (HTTP 400 naming the problem); the gateway uses these checks too."""
    if not isinstance(value, list) or not value:
        raise HTTPRequestError(400, "'messages' must be a non-empty list of {role, content} objects")
    if len(value) > MAX_MESSAGES:
        raise HTTPRequestError(400, f"expected at most {MAX_MESSAGES} messages, got {len(value)}")
    out: list[Message] = []
    for m in value:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            raise HTTPRequestError(400, f"each message needs a role of system, user, assistant or tool; got {str(m)[:80]}")
        content = _content(m.get("content"))
        calls = m.get("tool_calls") if m["role"] == "assistant" else None
        if calls:  # the reply as the model wrote it: its text, then each call as <tool_call> text (what it samples)
            if not isinstance(calls, list) or len(calls) > MAX_TOOLS:
                raise HTTPRequestError(400, f"'tool_calls' must be a list of at most {MAX_TOOLS} calls")
            content = "\n".join(part for part in (content, tool_calls_text(calls)) if part)
        out.append(Message(role=m["role"], content=content))
    return out


def request_tools(value: Any) -> list[dict[str, Any]] | None:
    """The request's ``tools`` (OpenAI function schemas), passed to the policy with the chat."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_TOOLS or not all(isinstance(t, dict) for t in value):
        raise HTTPRequestError(400, f"'tools' must be a list of at most {MAX_TOOLS} function objects, got {str(value)[:80]}")
    return value


def _content(content: Any) -> str:
    """A message's text: a string, or the text parts of a content-part list (OpenAI's two shapes)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("text", ""), str) for p in content):
        return "".join(p.get("text", "") for p in content)
    raise HTTPRequestError(400, f"message content must be a string or a list of {{type, text}} parts, got "
                           f"{str(content)[:80]}")


def _number(request: dict[str, Any], name: str, default: float) -> float:
    value = request.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise HTTPRequestError(400, f"'{name}' must be a finite number, got {str(value)[:40]}")
    return float(value)


def request_sampling(request: dict[str, Any], max_tokens_limit: int) -> SamplingConfig:
    """The request's sampling fields as a :class:`SamplingConfig`, checked against this server's limits."""
    max_tokens = request.get("max_tokens") or request.get("max_completion_tokens") or DEFAULT_MAX_TOKENS
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= max_tokens_limit:
        raise HTTPRequestError(400, f"'max_tokens' must be an int in 1..{max_tokens_limit} (this server's limit), "
                               f"got {str(max_tokens)[:40]}")
    stop = request.get("stop") or ()
    stop = (stop,) if isinstance(stop, str) else stop
    if not isinstance(stop, list | tuple) or len(stop) > MAX_STOP or not all(isinstance(s, str) and s for s in stop):
        raise HTTPRequestError(400, f"'stop' must be a string or a list of at most {MAX_STOP} non-empty strings, "
                               f"got {str(stop)[:80]}")
    seed = request.get("seed", 0)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not -(1 << 63) <= seed < 1 << 64):
        raise HTTPRequestError(400, f"'seed' must be a 64-bit integer or null, got {str(seed)[:40]}")
    try:
        return SamplingConfig(temperature=_number(request, "temperature", 1.0), top_p=_number(request, "top_p", 1.0),
                              max_new_tokens=max_tokens, stop=tuple(stop), seed=seed)
    except ValueError as e:
        raise HTTPRequestError(400, f"bad sampling parameters: {e}") from None


def _check_context(policy: Policy, prompt_tokens: int, max_tokens: int) -> None:
    """A prompt the model cannot read is the client's mistake (400), not a policy failure (500)."""
    config = getattr(getattr(policy, "model", None), "config", None)
    context = getattr(config, "max_position_embeddings", None)
    if isinstance(context, int) and prompt_tokens + max_tokens > context:
        raise HTTPRequestError(400, f"the prompt is {prompt_tokens} tokens and max_tokens {max_tokens}; together "
                               f"they exceed the model's context of {context} tokens", "context_length_exceeded")


def _prompt_tokens(policy: Policy, messages: list[Message]) -> int:
    """Prompt length in tokens for token policies (0 for text-only ones, which have no tokenizer). A chat the
    model's template refuses (roles out of the order it allows, tools it cannot read) is the client's: HTTP 400."""
    if not isinstance(policy, TokenPolicy):
        return 0
    try:
        rendered = policy.render_chat(messages)
    except Exception as e:  # templates raise their own errors (jinja's TemplateError, raise_exception) on such chats
        raise HTTPRequestError(400, f"the model's chat template cannot render these messages: {type(e).__name__}: "
                                    f"{str(e)[:200]}") from e
    return len(policy.encode(rendered))


def load_policy(args: argparse.Namespace) -> tuple[Policy, str]:
    """The policy the command line asks for, and its default served name."""
    if args.reply:
        return ScriptedReplyPolicy(args.reply), "scripted"
    import torch

    from ..models.backends.hf import HFPolicy

    torch.set_num_threads(args.threads)
    if args.tiny:
        from ..models.tiny import build_tiny

        return HFPolicy(*build_tiny()), "tiny"
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(args.hf, dtype=torch.float32)
    return HFPolicy(model, AutoTokenizer.from_pretrained(args.hf)), args.hf.rstrip("/").split("/")[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainer.serve", description=__doc__.split("\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--tiny", action="store_true", help="serve the embedded tiny policy (built locally, cached)")
    which.add_argument("--hf", metavar="DIR", help="serve a local Hugging Face model directory")
    which.add_argument("--reply", action="append", metavar="TEXT", help="serve a scripted policy cycling these replies")
    add_bind_arguments(parser, port=8000)
    parser.add_argument("--model-name", default=None, help="the name clients must send (default: from the model)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--max-tokens-limit", type=int, default=MAX_TOKENS_LIMIT,
                        help=f"largest max_tokens a request may ask for (default {MAX_TOKENS_LIMIT})")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    api_key = bind_settings(parser, args, what="policy server")  # before loading a model: fail fast
    from agentgym_envs.cli.errors import UsageError, require_free_port, require_model_dir

    try:
        if args.hf:
            require_model_dir(args.hf, "--hf")
        require_free_port(args.host, args.port)
    except UsageError as e:
        print(f"{parser.prog}: {e}", file=sys.stderr)
        return 2
    policy, name = load_policy(args)
    try:
        server = PolicyServer(policy, model_name=args.model_name or name, host=args.host, port=args.port,
                              api_key=api_key, allow_remote=args.allow_remote, verbose=args.verbose,
                              max_tokens_limit=args.max_tokens_limit)
    except (BindRefused, OSError) as e:
        parser.error(f"cannot listen on {args.host}:{args.port}: {e}")
    print(f"serving {server.model_name} at {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
