"""A small OpenAI-compatible HTTP server that exposes any :class:`~trainer.policy.Policy`.

``POST /v1/chat/completions`` and ``GET /v1/models`` (plus ``GET /health``), on 127.0.0.1 by default, with
the standard library's ``ThreadingHTTPServer``. It exists so that the HTTP evaluation path is tested against
a real server, and so that a local model (the tiny policy, a Hugging Face directory) can be evaluated by
anything that speaks the OpenAI API. It is not a production server: one policy call at a time (the lock
keeps non-thread-safe policies safe), no streaming, ``n = 1``.

    python -m trainer.serve --tiny --port 8000          # the embedded tiny policy
    python -m trainer.serve --hf ./my-model --port 8000
    python -m trainer.serve --reply "Action: look"      # a scripted policy (tests, demos)

The first line printed is ``serving <model> at http://<host>:<port>/v1`` (with ``--port 0``, the port the OS chose).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .policy import Completion, Message, Policy, SamplingConfig, TokenPolicy

MAX_BODY_BYTES = 8 << 20
DEFAULT_MAX_TOKENS = 256


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


class PolicyServer(ThreadingHTTPServer):
    """Serves ``policy`` under ``model_name``; ``url`` is the API root (``…/v1``).

    With ``api_key`` set, requests must carry ``Authorization: Bearer <api_key>`` (else HTTP 401).
    """

    daemon_threads = True

    def __init__(self, policy: Policy, *, model_name: str = "agentgym", host: str = "127.0.0.1", port: int = 0,
                 api_key: str | None = None, verbose: bool = False):
        super().__init__((host, port), _Handler)
        self.policy, self.model_name, self.verbose = policy, model_name, verbose
        self.api_key = api_key
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> threading.Thread:
        """Serve in a daemon thread (tests); stop with ``shutdown()`` then ``server_close()``."""
        thread = threading.Thread(target=self.serve_forever, name="policy-server", daemon=True)
        thread.start()
        return thread

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """The chat-completion response body for a validated request body."""
        messages = _messages(request.get("messages"))
        sampling = _sampling(request)
        with self.lock:
            completion = self.policy.act([messages], sampling=sampling)[0]
            prompt_tokens = _prompt_tokens(self.policy, messages)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": self.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": completion.text},
                         "finish_reason": completion.finish_reason, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(completion.token_ids),
                      "total_tokens": prompt_tokens + len(completion.token_ids)},
        }


class RequestError(ValueError):
    """A bad request: answered with HTTP ``status`` and an OpenAI-style error body."""

    def __init__(self, message: str, status: int = 400, code: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.code = status, code


class _Handler(BaseHTTPRequestHandler):
    server: PolicyServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if not self._authorised():
            return
        if path == "/v1/models":
            data = [{"id": self.server.model_name, "object": "model", "created": 0, "owned_by": "agentgym"}]
            self._send(200, {"object": "list", "data": data})
        elif path == "/health":
            self._send(200, {"status": "ok"})
        else:
            self._error(RequestError(f"no route GET {path}; try /v1/models", 404, "not_found"))

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if not self._authorised():
            return
        try:
            if path != "/v1/chat/completions":
                raise RequestError(f"no route POST {path}; the API is POST /v1/chat/completions", 404, "not_found")
            request = self._body()
            if request.get("model") != self.server.model_name:
                raise RequestError(f"model {request.get('model')!r} is not served here; use "
                                   f"{self.server.model_name!r}", 404, "model_not_found")
            self._send(200, self.server.complete(request))
        except RequestError as e:
            self._error(e)
        except Exception as e:  # the policy failed: a server error, reported to the client
            self._error(RequestError(f"the policy failed: {type(e).__name__}: {e}", 500, "server_error"))

    def _authorised(self) -> bool:
        key = self.server.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        if self.command == "POST":  # keep the connection usable: read the body we are refusing
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._error(RequestError("missing or wrong API key", 401, "invalid_api_key"))
        return False

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise RequestError(f"request body of {length} bytes exceeds {MAX_BODY_BYTES}", 413)
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            raise RequestError("the request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise RequestError("expected a JSON object with 'model' and 'messages'")
        if body.get("stream"):
            raise RequestError("streaming is not supported by this server; send stream=false")
        if body.get("n", 1) != 1:
            raise RequestError("only n=1 is supported")
        return body

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, e: RequestError) -> None:
        self._send(e.status, {"error": {"message": str(e), "type": "invalid_request_error", "code": e.code}})

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)


def _messages(value: Any) -> list[Message]:
    if not isinstance(value, list) or not value:
        raise RequestError("'messages' must be a non-empty list of {role, content} objects")
    out: list[Message] = []
    for m in value:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant"):
            raise RequestError(f"each message needs a role of system, user or assistant; got {str(m)[:80]}")
        content = m.get("content") or ""
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise RequestError("message content must be a string or a list of text parts")
        out.append(Message(role=m["role"], content=content))
    return out


def _sampling(request: dict[str, Any]) -> SamplingConfig:
    stop = request.get("stop") or ()
    try:
        return SamplingConfig(
            temperature=float(request.get("temperature", 1.0)), top_p=float(request.get("top_p", 1.0)),
            max_new_tokens=int(request.get("max_tokens") or request.get("max_completion_tokens") or DEFAULT_MAX_TOKENS),
            stop=(stop,) if isinstance(stop, str) else tuple(stop), seed=request.get("seed", 0))
    except (TypeError, ValueError) as e:
        raise RequestError(f"bad sampling parameters: {e}") from None


def _prompt_tokens(policy: Policy, messages: list[Message]) -> int:
    """Prompt length in tokens for token policies (0 for text-only ones, which have no tokenizer)."""
    if isinstance(policy, TokenPolicy):
        return len(policy.encode(policy.render_chat(messages)))
    return 0


def load_policy(args: argparse.Namespace) -> tuple[Policy, str]:
    """The policy the command line asks for, and its default served name."""
    if args.reply:
        return ScriptedReplyPolicy(args.reply), "scripted"
    import torch

    from .backends.hf import HFPolicy

    torch.set_num_threads(args.threads)
    if args.tiny:
        from .tiny import build_tiny

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
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 lets the OS choose (printed on the first line)")
    parser.add_argument("--model-name", default=None, help="the name clients must send (default: from the model)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--api-key-env", default=None, metavar="VAR",
                        help="require the key held in this environment variable (default: no key)")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    policy, name = load_policy(args)
    api_key = None
    if args.api_key_env:
        import os

        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            parser.error(f"--api-key-env names {args.api_key_env}, which is not set")
    server = PolicyServer(policy, model_name=args.model_name or name, host=args.host, port=args.port,
                          api_key=api_key, verbose=args.verbose)
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
