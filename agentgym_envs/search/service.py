"""A local HTTP ``/retrieve`` service, so that many env workers share one index, and its client.

The wire format is Search-R1's retrieval server's, so either side interoperates with Search-R1 tooling
(an e5 server over wiki-18 can back this env, and Search-R1's trainer can query this server):

    POST /retrieve  {"queries": ["..."], "topk": 3, "return_scores": true}
    ->  {"result": [[{"document": {"id": "p7", "contents": "\\"Title\\"\\ntext", "title": ..., "text": ...},
                      "score": 12.3}, ...]]}
    GET /health     -> {"status": "ok", "passages": N}

The server is the standard library's ``ThreadingHTTPServer`` bound to 127.0.0.1 (a free port by default).
The client (:class:`RemoteRetriever`) raises :class:`~agentgym_envs.core.errors.InfraError` when the
service is unreachable, slow or answers garbage; the env reports that as ``info["infra_error"]`` and the
agent is never blamed. Run a shared server from the command line:

    python -m agentgym_envs.search.service --size large --port 8000
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..core.errors import InfraError
from .retrieval import Document, Retriever

#: Largest request body the server reads (bounds memory per request).
MAX_REQUEST_BYTES = 1 << 20
MAX_TOPK = 100


class RetrievalService:
    """Serve ``retriever`` over HTTP in a background thread; use as a context manager or call ``close``."""

    def __init__(self, retriever: Retriever, *, host: str = "127.0.0.1", port: int = 0, passages: int | None = None):
        self.retriever = retriever
        handler = type("Handler", (_Handler,), {"service": self})
        self.server = ThreadingHTTPServer((host, port), handler)
        self.server.daemon_threads = True
        self.passages = passages
        self._thread = threading.Thread(target=self.server.serve_forever, name="search-retrieve", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The ``/retrieve`` endpoint, e.g. ``http://127.0.0.1:41237/retrieve``."""
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/retrieve"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> RetrievalService:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Handler(BaseHTTPRequestHandler):
    service: RetrievalService

    def do_GET(self) -> None:  # noqa: N802 (the http.server naming)
        if self.path.rstrip("/") == "/health":
            self._reply(200, {"status": "ok", "passages": self.service.passages})
        else:
            self._reply(404, {"error": f"unknown path {self.path!r}; use POST /retrieve or GET /health"})

    def do_POST(self) -> None:  # noqa: N802
        if self.path.rstrip("/") != "/retrieve":
            self._reply(404, {"error": f"unknown path {self.path!r}; use POST /retrieve"})
            return
        try:
            queries, topk = self._request()
        except ValueError as e:
            self._reply(400, {"error": str(e)})
            return
        results = self.service.retriever.search_batch(queries, topk)
        self._reply(200, {"result": [[_wire(d) for d in docs] for docs in results]})

    def _request(self) -> tuple[list[str], int]:
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_REQUEST_BYTES:
            raise ValueError(f"expected a JSON body of 1..{MAX_REQUEST_BYTES} bytes, got {length}")
        try:
            body = json.loads(self.rfile.read(length))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"the body is not JSON ({e})") from None
        queries = body.get("queries") if isinstance(body, dict) else None
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise ValueError('expected {"queries": [str, ...], "topk": int}')
        topk = body.get("topk", 3)
        if not isinstance(topk, int) or not 1 <= topk <= MAX_TOPK:
            raise ValueError(f"topk must be an int in 1..{MAX_TOPK}, got {topk!r}")
        return queries, topk

    def _reply(self, status: int, payload: dict) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # keep test and worker logs quiet
        pass


def _wire(document: Document) -> dict[str, Any]:
    contents = f'"{document.title}"\n{document.text}'
    return {"document": {"id": document.id, "contents": contents, "title": document.title, "text": document.text},
            "score": document.score}


class RemoteRetriever:
    """A client of a ``/retrieve`` service (ours or Search-R1's); failures raise ``InfraError``."""

    def __init__(self, url: str, *, timeout: float = 10.0):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"retriever_url must be an http(s) URL such as http://127.0.0.1:8000/retrieve, "
                             f"got {url!r}")
        self.url, self.timeout = url, timeout

    def search(self, query: str, k: int) -> list[Document]:
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Document]]:
        body = json.dumps({"queries": list(queries), "topk": k, "return_scores": True}).encode("utf-8")
        request = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
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
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    size = int(args.size) if args.size.isdigit() else args.size
    data = load_dataset(world_seed=args.seed, world_size=size, corpus_path=args.corpus)
    service = RetrievalService(build_retriever(data, args.retriever), host=args.host, port=args.port,
                               passages=len(data.corpus))
    print(f"serving {len(data.corpus):,} passages at {service.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        service.close()


if __name__ == "__main__":
    main()
