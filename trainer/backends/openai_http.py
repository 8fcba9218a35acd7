"""An OpenAI-compatible chat-completions endpoint as a :class:`~agentgym_envs.policies.Policy` (evaluation only).

Talks to any server that speaks ``POST {base_url}/chat/completions`` (OpenAI, vLLM's ``vllm serve``, llama.cpp,
``python -m trainer.serve``) with the standard library only. Text comes back without token ids or
log-probs, so this backend evaluates; it cannot train. Token counts come from the response's ``usage`` and
are kept on :class:`HTTPCompletion`.

Failures are :class:`EndpointError` with a message saying what to do. ``transient`` marks the ones worth
retrying (connection refused, timeouts, HTTP 429 and 5xx); the client retries those itself a few times with
backoff, and callers such as the leaderboard runner treat a still-failing transient error as an
infrastructure failure (retried, never scored), and any other as fatal (a wrong URL, model or key).

>>> policy = OpenAIHTTPPolicy("http://127.0.0.1:8000/v1", "my-model")
>>> policy.url("chat/completions")
'http://127.0.0.1:8000/v1/chat/completions'
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from agentgym_envs.policies import Completion, Message, SamplingConfig

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class EndpointError(RuntimeError):
    """The endpoint failed or refused the request; ``transient`` says whether trying again may help."""

    def __init__(self, message: str, *, status: int | None = None, transient: bool = False):
        super().__init__(message)
        self.status, self.transient = status, transient


@dataclass
class HTTPCompletion(Completion):
    """A completion with the token counts the server reported (``None`` when it reported none)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class OpenAIHTTPPolicy:
    """Chats in, completions out, through an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        base_url: the API root, usually ending in ``/v1`` (``http://127.0.0.1:8000/v1``).
        model: the model name the server knows.
        api_key: the key; by default read from the environment variable ``api_key_env``. No key sends no
            ``Authorization`` header (local servers). The key is never logged or stored.
        api_key_env: the variable holding the key (default ``OPENAI_API_KEY``).
        timeout: seconds to wait for one response (connect and read).
        retries: extra tries for transient failures, with exponential backoff from ``backoff`` seconds.
        concurrency: requests in flight at once when ``act`` gets a batch of several chats.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, api_key_env: str = DEFAULT_KEY_ENV,
                 timeout: float = 120.0, retries: int = 2, backoff: float = 0.5, concurrency: int = 8):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ValueError("model must be the non-empty name the server serves (see GET {base_url}/models)")
        if timeout <= 0 or retries < 0 or concurrency < 1:
            raise ValueError(f"expected timeout > 0, retries >= 0, concurrency >= 1; "
                             f"got {timeout}, {retries}, {concurrency}")
        self.base_url, self.model = base_url.rstrip("/"), model
        self.timeout, self.retries, self.backoff, self.concurrency = timeout, retries, backoff, concurrency
        self._key = api_key if api_key is not None else os.environ.get(api_key_env) or None

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    # ----------------------------------------------------------------- Policy
    def act(self, batch: list[list[Message]], *, sampling: SamplingConfig) -> list[Completion]:
        """One completion per chat; several chats are sent concurrently (results keep the batch order)."""
        if len(batch) <= 1 or self.concurrency == 1:
            return [self.complete(messages, sampling) for messages in batch]
        with ThreadPoolExecutor(min(self.concurrency, len(batch))) as pool:
            return list(pool.map(lambda messages: self.complete(messages, sampling), batch))

    def complete(self, messages: list[Message], sampling: SamplingConfig) -> HTTPCompletion:
        payload: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages],
                                   "temperature": sampling.temperature, "top_p": sampling.top_p,
                                   "max_tokens": sampling.max_new_tokens, "n": 1}
        if sampling.seed is not None:
            payload["seed"] = int(sampling.seed)
        if sampling.stop:
            payload["stop"] = list(sampling.stop)
        return _parse_completion(self._request("POST", "chat/completions", payload), self.url("chat/completions"))

    # ----------------------------------------------------------------- checks
    def check(self) -> list[str]:
        """The served model names; raises :class:`EndpointError` if unreachable or ``model`` is not served."""
        body = self._request("GET", "models", None)
        names = [m.get("id") for m in body.get("data", []) if isinstance(m, dict)] if isinstance(body, dict) else []
        if names and self.model not in names:
            raise EndpointError(f"{self.base_url} does not serve a model named {self.model!r}; it serves "
                                f"{', '.join(map(str, names))}. Fix the name after '#' in the policy spec.")
        return names

    # ----------------------------------------------------------------- transport
    def _request(self, method: str, path: str, payload: dict[str, Any] | None) -> Any:
        """One request with bounded retries of transient failures."""
        for attempt in range(self.retries + 1):
            try:
                return self._request_once(method, path, payload)
            except EndpointError as e:
                if not e.transient or attempt == self.retries:
                    raise
                time.sleep(self.backoff * 2 ** attempt)
        raise AssertionError("unreachable")

    def _request_once(self, method: str, path: str, payload: dict[str, Any] | None) -> Any:
        url = self.url(path)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            raise _http_error(url, e) from None
        except (urllib.error.URLError, OSError) as e:
            raise _connection_error(url, e, self.timeout) from None
        try:
            return json.loads(raw)
        except ValueError:
            raise EndpointError(f"{url} answered with something that is not JSON ({raw[:120]!r}); is this an "
                                "OpenAI-compatible API root (usually ending in /v1)?") from None


def _connection_error(url: str, e: BaseException, timeout: float) -> EndpointError:
    reason = getattr(e, "reason", e)
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return EndpointError(f"no answer from {url} within {timeout:g} s; the server may be overloaded "
                             "(raise the timeout) or stuck", transient=True)
    return EndpointError(f"cannot reach {url} ({reason}); is the server running and the base URL right?",
                         transient=True)


def _http_error(url: str, e: urllib.error.HTTPError) -> EndpointError:
    try:
        detail = json.loads(e.read() or b"{}").get("error", {})
        message = detail.get("message") if isinstance(detail, dict) else str(detail)
    except (ValueError, AttributeError, OSError):
        message = None
    said = f": {message}" if message else ""
    if e.code in (401, 403):
        return EndpointError(f"{url} refused the API key (HTTP {e.code}{said}); set {DEFAULT_KEY_ENV} or the "
                             "variable named by --api-key-env", status=e.code)
    if e.code == 404:
        return EndpointError(f"{url} was not found (HTTP 404{said}); check that the base URL is the API root "
                             "(usually ending in /v1) and the model name", status=404)
    transient = e.code == 429 or e.code >= 500
    return EndpointError(f"{url} answered HTTP {e.code}{said}", status=e.code, transient=transient)


def _parse_completion(body: Any, url: str) -> HTTPCompletion:
    try:
        choice = body["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise EndpointError(f"{url} answered without choices[0].message; not an OpenAI-compatible chat completion "
                            f"({str(body)[:160]})") from None
    text = message.get("content") or ""
    if not text and message.get("tool_calls"):
        text = _tool_calls_text(message["tool_calls"])
    usage = body.get("usage") or {}
    finish = "length" if choice.get("finish_reason") == "length" else "stop"
    return HTTPCompletion(text, finish_reason=finish, prompt_tokens=_int(usage.get("prompt_tokens")),
                          completion_tokens=_int(usage.get("completion_tokens")))


def _tool_calls_text(calls: list[Any]) -> str:
    """Native tool calls as ``<tool_call>`` blocks, the text form the ``tool_calls`` protocol parses."""
    blocks = []
    for call in calls:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        arguments = function.get("arguments", "{}")
        try:
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            pass
        call = json.dumps({"name": function.get("name"), "arguments": arguments})
        blocks.append(f"<tool_call>\n{call}\n</tool_call>")
    return "\n".join(blocks)


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
