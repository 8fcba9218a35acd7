"""A local HTTP ``/retrieve`` service, so that many env workers share one index, and its client.

The wire format is Search-R1's retrieval server's, so either side interoperates with Search-R1 tooling
(an e5 server over wiki-18 can back this env, and Search-R1's trainer can query this server):

    POST /retrieve  {"queries": ["..."], "topk": 3, "return_scores": true}
    ->  {"result": [[{"document": {"id": "p7", "contents": "\\"Title\\"\\ntext", "title": ..., "text": ...},
                      "score": 12.3}, ...]]}
    GET /health     -> {"status": "ok", "passages": N}

The server is :mod:`agentgym_envs.core.httpd`'s hardened ``ThreadingHTTPServer`` bound to 127.0.0.1 (a free port
by default): a non-loopback ``--host`` needs ``--allow-remote`` and ``--api-key-env``; bodies are at most
``MAX_REQUEST_BYTES``; one request asks for at most ``MAX_QUERIES`` queries, ``MAX_TOPK`` per query and
``MAX_RESULTS`` results in all, and is answered with at most ``MAX_RESPONSE_BYTES`` (413 naming the limit
beyond); malformed requests are 4xx ``{"error": "...", "code": "..."}``, and 500 means the index failed.
The client (:class:`RemoteRetriever`) raises :class:`~agentgym_envs.core.errors.InfraError` when the
service is unreachable, slow or answers garbage; the env reports that as ``info["infra_error"]`` and the
agent is never blamed. Run a shared server from the command line:

    python -m agentgym_envs.search.service --size large --port 8000
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from ..core.errors import InfraError
from ..core.httpd import (HardenedHandler, HardenedHTTPServer, HTTPRequestError, ServerLimits, add_bind_arguments,
                          bind_settings)
from .retrieval import Document, Retriever

#: Largest request body the server reads (bounds memory per request).
MAX_REQUEST_BYTES = 1 << 20
MAX_TOPK = 100
#: Most queries in one request; Search-R1 batches one query per active rollout, so a few thousand is normal.
MAX_QUERIES = 4096
#: Most results (queries x topk) in one request: 4,000 queries x topk 100 would be a 200 MB answer.
MAX_RESULTS = 20_000
#: Largest answer the server sends; a corpus of long passages reaches it before ``MAX_RESULTS`` does.
MAX_RESPONSE_BYTES = 32 << 20
API_KEY_ENV = "AGENTGYM_SEARCH_API_KEY"


class RetrievalService:
    """Serve ``retriever`` over HTTP in a background thread; use as a context manager or call ``close``.

    Loopback only unless ``allow_remote=True`` with an ``api_key``; ``limits`` bound bodies, threads and
    timeouts (:mod:`agentgym_envs.core.httpd`); ``max_queries``, ``max_results`` (queries x topk) and
    ``max_response_bytes`` bound one request's fan-out, each refused with HTTP 413 naming the limit.
    """

    def __init__(self, retriever: Retriever, *, host: str = "127.0.0.1", port: int = 0, passages: int | None = None,
                 api_key: str | None = None, allow_remote: bool = False, limits: ServerLimits | None = None,
                 max_queries: int = MAX_QUERIES, max_results: int = MAX_RESULTS,
                 max_response_bytes: int = MAX_RESPONSE_BYTES):
        self.retriever, self.passages = retriever, passages
        self.max_queries, self.max_results, self.max_response_bytes = max_queries, max_results, max_response_bytes
        self.server = HardenedHTTPServer((host, port), _Handler, what="search service", api_key=api_key,
                                         allow_remote=allow_remote,
                                         limits=limits or ServerLimits(max_body_bytes=MAX_REQUEST_BYTES))
        self.server.service = self  # type: ignore[attr-defined]
        self._thread = self.server.serve_in_thread("search-retrieve")

    @property
    def url(self) -> str:
        """The ``/retrieve`` endpoint, e.g. ``http://127.0.0.1:41237/retrieve``."""
        host, port = self.server.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in str(host) else host}:{port}/retrieve"

    def close(self) -> None:
        self.server.close()
        self._thread.join(timeout=5)

    def __enter__(self) -> RetrievalService:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def answer(self, body: Any) -> bytes:
        """The encoded answer to a ``/retrieve`` body, or an :class:`HTTPRequestError` naming what is wrong."""
        queries, topk = self._request(body)
        results = self.retriever.search_batch(queries, topk)
        data = json.dumps({"result": [[_wire(d) for d in docs] for docs in results]}, ensure_ascii=False).encode()
        if len(data) > self.max_response_bytes:
            raise HTTPRequestError(413, f"the answer would be {len(data):,} bytes, over this service's limit of "
                                   f"{self.max_response_bytes:,} (max_response_bytes); ask for fewer queries or a "
                                   "smaller topk", "response_too_large")
        return data

    def _request(self, body: Any) -> tuple[list[str], int]:
        queries = body.get("queries") if isinstance(body, dict) else None
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise HTTPRequestError(400, 'expected {"queries": [str, ...], "topk": int}, got '
                                   f"{json.dumps(body)[:100]}")
        topk = body.get("topk", 3)
        if isinstance(topk, bool) or not isinstance(topk, int) or not 1 <= topk <= MAX_TOPK:
            raise HTTPRequestError(400, f"topk must be an int in 1..{MAX_TOPK}, got {str(topk)[:40]}")
        if len(queries) > self.max_queries:
            raise HTTPRequestError(413, f"{len(queries):,} queries in one request exceed this service's limit of "
                                   f"{self.max_queries:,} (max_queries); send smaller batches", "too_many_queries")
        if len(queries) * topk > self.max_results:
            raise HTTPRequestError(413, f"{len(queries):,} queries x topk {topk} = {len(queries) * topk:,} results "
                                   f"exceed this service's limit of {self.max_results:,} per request (max_results); "
                                   "send smaller batches or a smaller topk", "too_many_results")
        return queries, topk


class _Handler(HardenedHandler):
    server: HardenedHTTPServer

    def respond(self, method: str) -> None:
        self.route(method, self.path.split("?")[0].rstrip("/") or "/",
                   {"/retrieve": {"POST": self._retrieve}, "/health": {"GET": self._health}})

    @classmethod
    def error_body(cls, status: int, message: str, code: str) -> tuple[str, bytes]:
        """Search-R1's servers answer errors as ``{"error": "..."}``; so do we, with a code beside it."""
        return "application/json", json.dumps({"error": message, "code": code}).encode("utf-8")

    def _health(self) -> None:
        self.send_json(200, {"status": "ok", "passages": self.server.service.passages})  # type: ignore[attr-defined]

    def _retrieve(self) -> None:
        data = self.server.service.answer(self.read_json())  # type: ignore[attr-defined]
        self.send_bytes(200, "application/json", data)


def _wire(document: Document) -> dict[str, Any]:
    contents = f'"{document.title}"\n{document.text}'
    return {"document": {"id": document.id, "contents": contents, "title": document.title, "text": document.text},
            "score": document.score}


class RemoteRetriever:
    """A client of a ``/retrieve`` service (ours or Search-R1's); failures raise ``InfraError``.

    ``api_key`` (default: the ``AGENTGYM_SEARCH_API_KEY`` environment variable, if set) is sent as
    ``Authorization: Bearer <key>``, for a service started with ``--api-key-env``.
    """

    def __init__(self, url: str, *, timeout: float = 10.0, api_key: str | None = None):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"retriever_url must be an http(s) URL such as http://127.0.0.1:8000/retrieve, "
                             f"got {url!r}")
        self.url, self.timeout = url, timeout
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV) or None

    def search(self, query: str, k: int) -> list[Document]:
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Document]]:
        body = json.dumps({"queries": list(queries), "topk": k, "return_scores": True}).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.loads(response.read())
        except (urllib.error.URLError, http.client.HTTPException, OSError, TimeoutError) as e:
            raise InfraError(f"retrieval service at {self.url} is unreachable ({type(e).__name__}: {e})") from e
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InfraError(f"retrieval service at {self.url} answered with invalid JSON ({e})") from e
        try:
            return [[_document(item) for item in docs] for docs in payload["result"]][: len(queries)]
        except (KeyError, TypeError, IndexError, AttributeError) as e:
            raise InfraError(f"retrieval service at {self.url} answered in an unexpected shape ({e!r})") from e


def _document(item: dict[str, Any]) -> Document:
    """A :class:`Document` from a wire item; titles come from ``contents``' first line as Search-R1 does."""
    doc = item["document"]
    if "title" in doc and "text" in doc:
        title, text = str(doc["title"]), str(doc["text"])
    else:
        first, _, rest = str(doc["contents"]).partition("\n")
        title, text = first.strip().strip('"'), rest
    return Document(str(doc.get("id", "")), title, text, float(item.get("score", 0.0)))


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a generated world's corpus (BM25 or dense) until interrupted."""
    from .dataset import build_retriever, load_dataset

    parser = argparse.ArgumentParser(description="Serve a search corpus at POST /retrieve (Search-R1 format).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", default="small", help="tiny, small, medium, large or an entity count")
    parser.add_argument("--corpus", default=None, help="serve a jsonl corpus instead of a generated world")
    parser.add_argument("--retriever", default="bm25", choices=("bm25", "dense", "dense-faiss"))
    add_bind_arguments(parser, port=8000)
    args = parser.parse_args(argv)
    api_key = bind_settings(parser, args, what="search service")  # before building an index: fail fast
    size = int(args.size) if args.size.isdigit() else args.size
    data = load_dataset(world_seed=args.seed, world_size=size, corpus_path=args.corpus)
    try:
        service = RetrievalService(build_retriever(data, args.retriever), host=args.host, port=args.port,
                                   passages=len(data.corpus), api_key=api_key, allow_remote=args.allow_remote)
    except OSError as e:
        parser.error(f"cannot listen on {args.host}:{args.port}: {e}")
    print(f"serving {len(data.corpus):,} passages at {service.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        service.close()


if __name__ == "__main__":
    main()
