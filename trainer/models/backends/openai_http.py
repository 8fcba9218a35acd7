"""An OpenAI-compatible chat-completions endpoint as a :class:`~agentgym_envs.policies.Policy` (evaluation only).

Talks to any server that speaks ``POST {base_url}/chat/completions`` (OpenAI, vLLM's ``vllm serve``, llama.cpp,
``python -m trainer.serve``) with the standard library only. Text comes back without token ids or
log-probs, so this backend evaluates; it cannot train. Token counts come from the response's ``usage`` and
are kept on :class:`HTTPCompletion`.

A chat that carries tools (:class:`~agentgym_envs.chat.Chat`, the ``tool_calls`` protocol) sends them as the
request's ``tools``, and its messages in the API's tool-calling shape (:func:`wire_messages`): an assistant
reply holding a call gets ``tool_calls`` with an id, and the ``tool`` message after it answers that id; an
observation after a reply without a call is sent as a ``user`` message. Native ``tool_calls`` in a response
come back as ``<tool_call>`` text, which the protocol parses.

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

from agentgym_envs.chat import chat_tools
from agentgym_envs.policies import Completion, Message, SamplingConfig
from agentgym_envs.protocols import ToolCalls

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
        payload: dict[str, Any] = {"model": self.model, "messages": wire_messages(messages),
                                   "temperature": sampling.temperature, "top_p": sampling.top_p,
                                   "max_tokens": sampling.max_new_tokens, "n": 1}
        tools = chat_tools(messages)
        if tools:
            payload["tools"] = tools
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
        text = tool_calls_text(message["tool_calls"])
    usage = body.get("usage") or {}
    finish = "length" if choice.get("finish_reason") == "length" else "stop"
    return HTTPCompletion(text, finish_reason=finish, prompt_tokens=_int(usage.get("prompt_tokens")),
                          completion_tokens=_int(usage.get("completion_tokens")))


def wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """``messages`` as the chat-completions API takes them (see the module docstring): without tool messages,
    plain copies; with them, each ``tool`` message answers the call (by id) of the assistant reply before it.

    >>> wire = wire_messages([{"role": "user", "content": "go"},
    ...                       {"role": "assistant", "content": '<tool_call>{"name": "go", "arguments": {}}</tool_call>'},
    ...                       {"role": "tool", "content": "ok"}, {"role": "assistant", "content": "hm"},
    ...                       {"role": "tool", "content": "No tool call found."}])
    >>> wire[1]["content"], wire[1]["tool_calls"][0]["function"], wire[4]["role"]
    ('', {'name': 'go', 'arguments': '{}'}, 'user')
    >>> wire[2]
    {'role': 'tool', 'content': 'ok', 'tool_call_id': 'call_1'}
    """
    if not any(m["role"] == "tool" for m in messages):
        return [dict(m) for m in messages]
    wire: list[dict[str, Any]] = []
    answering: str | None = None  # the id of the call the next tool message answers
    for k, message in enumerate(messages):
        message = dict(message)
        if message["role"] == "assistant":
            answering = None
            call, prose = _reply_call(message.get("content") or "")
            if call is not None:  # the call moves to tool_calls (a server's template renders it in its format)
                answering = f"call_{k}"
                message["content"], message["tool_calls"] = prose, [{"id": answering, "type": "function", "function": call}]
        elif message["role"] == "tool":
            if answering is None:
                message["role"] = "user"
            else:
                message["tool_call_id"], answering = answering, None
        wire.append(message)
    return wire


def _reply_call(text: str) -> tuple[dict[str, str] | None, str]:
    """The call in a reply as the API's ``function`` object (``arguments`` a JSON string; ``None`` without a
    call), and the reply's text besides the call (its reasoning or prose, ``""`` if none)."""
    parsed = ToolCalls().parse(text)
    if parsed.action is None:
        return None, text
    call = json.loads(parsed.action)  # the protocol's canonical {"name", "arguments"} JSON
    return {"name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)}, parsed.thought or ""


def tool_calls_text(calls: list[Any]) -> str:
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
