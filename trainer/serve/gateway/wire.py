"""The gateway's OpenAI wire format: request fields read (through :mod:`trainer.serve.policy_server`'s checks) and responses built.

Tool calls in a response are parsed from the sampled text by *our* protocol layer
(:class:`~agentgym_envs.protocols.ToolCalls`, the parser the envs use), never by an inference server's parser,
and returned in OpenAI's shape (``tool_calls`` with ``id``, ``type: function`` and ``arguments`` as a JSON
string; ``finish_reason: "tool_calls"``). Log-probs (``logprobs: true``) come back as OpenAI's
``logprobs.content`` list; a non-finite one is written as ``-9999.0`` (OpenAI's own sentinel), so a response
never holds ``NaN``, ``Infinity`` or ``null`` where a number belongs.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from typing import Any

from agentgym_envs.core.httpd import HTTPRequestError
from agentgym_envs.policies import Completion, Message, SamplingConfig
from agentgym_envs.protocols import ToolCalls

from ..policy_server import request_messages, request_sampling, request_tools
from .sessions import NONFINITE_LOGPROB

MAX_PROMPT_CHARS = 4 << 20
_TOOL_CALLS = ToolCalls()


def chat_request(request: Any) -> tuple[list[Message], list[dict], list[dict] | None, bool]:
    """The converted messages, the raw ones (for the fingerprint), the tools and whether log-probs are wanted."""
    _check_common(request)
    raw = request.get("messages")
    messages = request_messages(raw)
    return messages, raw, request_tools(request.get("tools")), _flag(request, "logprobs")


def completion_request(request: Any) -> tuple[str | list[int], bool]:
    """A completions call's prompt (one string, or one list of token ids) and whether log-probs are wanted."""
    _check_common(request)
    prompt = request.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str) and 0 < len(prompt) <= MAX_PROMPT_CHARS:
        pass
    elif not (isinstance(prompt, list) and prompt and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                                          for i in prompt)):
        raise HTTPRequestError(400, f"'prompt' must be one non-empty string (at most {MAX_PROMPT_CHARS:,} characters) "
                                    f"or one non-empty list of token ids, got {str(prompt)[:80]}")
    logprobs = request.get("logprobs")
    if logprobs is not None and (isinstance(logprobs, bool) or not isinstance(logprobs, int) or not 0 <= logprobs <= 5):
        raise HTTPRequestError(400, f"'logprobs' must be an int in 0..5 or null for completions, got {str(logprobs)[:20]}")
    return prompt, logprobs is not None


def check_token_ids(ids: list[int], vocab: int) -> None:
    """A prompt of token ids must lie in ``[0, vocab)``: anything else is the client's mistake (400), refused
    before it reaches the tokenizer (which overflows past int64) or the model's embedding."""
    bad = next((i for i in ids if not 0 <= i < vocab), None)
    if bad is not None:
        raise HTTPRequestError(400, f"'prompt' token ids must lie in the model's vocabulary [0, {vocab}), got "
                                    f"{str(bad)[:40]} at position {ids.index(bad)}")


def sampling(request: dict, max_tokens_limit: int) -> SamplingConfig:
    """The request's sampling settings, checked as ``trainer.serve.policy_server`` checks them."""
    return request_sampling(request, max_tokens_limit)


def _check_common(request: Any) -> None:
    if not isinstance(request, dict):
        raise HTTPRequestError(400, f"expected a JSON object, got {type(request).__name__}")
    if request.get("stream"):
        raise HTTPRequestError(400, "streaming is not supported by the gateway; send stream=false")
    if request.get("n", 1) != 1 or isinstance(request.get("n"), bool):
        raise HTTPRequestError(400, f"only n=1 is supported, got n={str(request.get('n'))[:20]}")


def _flag(request: dict, name: str) -> bool:
    value = request.get(name)
    if value is not None and not isinstance(value, bool):
        raise HTTPRequestError(400, f"'{name}' must be true, false or null, got {str(value)[:20]}")
    return bool(value)


def assistant_message(text: str, tools: list[dict] | None) -> tuple[dict[str, Any], str | None]:
    """The OpenAI assistant message for a sampled reply, and ``"tool_calls"`` when the reply holds a call.

    With ``tools`` in the request the reply is parsed by the ``tool_calls`` protocol: a call becomes
    ``tool_calls`` and the text before it ``content``; a reply without a usable call stays plain ``content``."""
    if tools:
        parsed = _TOOL_CALLS.parse(text)
        if parsed.action is not None:
            call = json.loads(parsed.action)
            arguments = json.dumps(call.get("arguments", {}), ensure_ascii=False)
            content = parsed.thought or None
            return ({"role": "assistant", "content": content,
                     "tool_calls": [{"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                                     "function": {"name": call.get("name", ""), "arguments": arguments}}]},
                    "tool_calls")
    return {"role": "assistant", "content": text}, None


def finite(x: float) -> float:
    return float(x) if math.isfinite(x) else NONFINITE_LOGPROB


def token_logprobs(policy: Any, completion: Completion) -> list[dict[str, Any]]:
    """OpenAI's ``logprobs.content``: one entry per sampled id (its text, log-prob, UTF-8 bytes)."""
    out = []
    for i, lp in zip(completion.token_ids, completion.logprobs):
        token = policy.decode([i])
        out.append({"token": token, "logprob": finite(lp), "bytes": list(token.encode("utf-8")), "top_logprobs": []})
    return out


def chat_response(model: str, message: dict, finish: str | None, completion: Completion, prompt_tokens: int,
                  logprobs: list[dict] | None, extra: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish or completion.finish_reason,
                         "logprobs": None if logprobs is None else {"content": logprobs}}],
            "usage": _usage(prompt_tokens, completion), "agentgym": extra}


def completion_response(model: str, completion: Completion, prompt_tokens: int, logprobs: list[dict] | None,
                        extra: dict[str, Any]) -> dict[str, Any]:
    lp = None if logprobs is None else {"tokens": [e["token"] for e in logprobs],
                                         "token_logprobs": [e["logprob"] for e in logprobs],
                                         "top_logprobs": [{} for _ in logprobs], "text_offset": []}
    return {"id": f"cmpl-{uuid.uuid4().hex[:24]}", "object": "text_completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "text": completion.text, "finish_reason": completion.finish_reason,
                                         "logprobs": lp}],
            "usage": _usage(prompt_tokens, completion), "agentgym": extra}


def _usage(prompt_tokens: int, completion: Completion) -> dict[str, int]:
    n = len(completion.token_ids)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}


def vocab_size(policy: Any) -> int:
    """How many ids the policy's model can embed (an id past it is an ``IndexError`` on CPU and a device-side
    assert that poisons the process on CUDA): vLLM's ``vocab_size``, else the input embedding's rows, else the
    config's or the tokenizer's size."""
    if isinstance(getattr(policy, "vocab_size", None), int):
        return policy.vocab_size
    model = getattr(policy, "model", None)
    embeddings = getattr(model, "get_input_embeddings", lambda: None)()
    if isinstance(getattr(embeddings, "num_embeddings", None), int):
        return embeddings.num_embeddings
    size = getattr(getattr(model, "config", None), "vocab_size", None)
    return size if isinstance(size, int) else len(policy.tokenizer)


#: A client's ``meta`` (its own labels for a session): at most this many bytes of JSON.
MAX_META_BYTES = 4096


def client_meta(meta: Any) -> dict[str, Any]:
    """A session's labels as a client sent them: a small JSON object whose ``seed``, ``task_index`` and
    ``env_seed``, where given, are integers (they seed the sampler and the env-driven mode's env)."""
    if not isinstance(meta, dict) or len(json.dumps(meta)) > MAX_META_BYTES:
        raise HTTPRequestError(400, f"'meta' must be a JSON object of at most {MAX_META_BYTES} bytes, got "
                                    f"{str(meta)[:80]}")
    for key in ("seed", "task_index", "env_seed"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 63):
            raise HTTPRequestError(400, f"meta.{key} must be an integer in [0, 2**63), got {str(value)[:40]}")
    return dict(meta)
