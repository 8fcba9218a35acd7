"""The shop's web server: a threaded HTTP server on 127.0.0.1 that serves many shopping sessions at once.

Built on the standard library's ``ThreadingHTTPServer`` (one thread per connection, HTTP/1.1 keep-alive):
pages are rendered in a fraction of a millisecond and are pure functions of ``(session, URL)``, so
sessions share nothing but read-only data and need no framework. ``GET /start?split=test&task=3`` opens a
session on a task and redirects to its search page; everything else is under ``/s/<sid>/`` (see
:mod:`.html_view`). Only the purchase is a ``POST``.

The server binds to a loopback address on a free port by default and refuses any other address unless
``allow_remote=True`` (``--allow-remote``) *and* an API key (``--api-key-env VAR``; clients then send
``Authorization: Bearer <key>``): it is an environment for agents, not a public site. It is built on
:mod:`agentgym_envs.core.httpd`: bounded bodies (``MAX_BODY_BYTES``; no form field is read), quiet connections
held without threads, a thread cap answered 503, timeouts, and every client mistake a 4xx page.

    python -m agentgym_envs.web.server --port 8000      # then open http://127.0.0.1:8000/

>>> with ShopServer.for_catalogue(1_000) as server:
...     server.url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

import argparse
import atexit
import os
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

from ..core import httpd
from ..core.httpd import HardenedHandler, HardenedHTTPServer, HTTPRequestError, ServerLimits
from . import html_view
from .shop import DONE, Location, Shop
from .tasks import SPLITS, Goal, GoalSet, load_goals

#: Scripts are never served; the policy makes sure none would run even if some text escaped escaping.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
#: The purchase form has no fields; a larger POST body is refused (413) unread.
MAX_BODY_BYTES = 1 << 16


@dataclass
class Session:
    goal: Goal
    show_attributes: bool = False
    purchases: list[Location] = field(default_factory=list)


class ShopServer:
    """A running shop: ``url`` to browse, ``open_session`` to start one in-process, ``close`` to stop."""

    def __init__(self, shop: Shop, goals: GoalSet, *, host: str = "127.0.0.1", port: int = 0,
                 allow_remote: bool = False, api_key: str | None = None, max_sessions: int = 10_000,
                 limits: ServerLimits | None = None):
        self.shop, self.goals, self.max_sessions = shop, goals, max_sessions
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self.httpd = HardenedHTTPServer((host, port), _Handler, what="shop server", api_key=api_key,
                                        allow_remote=allow_remote,
                                        limits=limits or ServerLimits(max_body_bytes=MAX_BODY_BYTES))
        self.httpd.shop_server = self  # type: ignore[attr-defined]
        self._thread = self.httpd.serve_in_thread("webshop-server")

    @classmethod
    def for_catalogue(cls, num_products: int = 10_000, seed: int = 0, **kwargs) -> ShopServer:
        shop = Shop.shared(num_products, seed)
        return cls(shop, load_goals(shop.catalogue), **kwargs)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in str(host) else host}:{port}"

    def open_session(self, split: str, task_index: int, *, show_attributes: bool = False) -> str:
        """Start a session on task ``task_index`` of ``split``; returns its id (unguessable, never shown)."""
        ids = self.goals.split(split)
        if not 0 <= task_index < len(ids):
            raise ValueError(f"task must be in [0, {len(ids)}) for split {split!r}, got {task_index}")
        sid = secrets.token_hex(8)
        with self._lock:
            self.sessions[sid] = Session(self.goals.goals[ids[task_index]], show_attributes)
            while len(self.sessions) > self.max_sessions:  # forget the oldest, bounding memory
                self.sessions.popitem(last=False)
        return sid

    def session(self, sid: str) -> Session | None:
        with self._lock:
            return self.sessions.get(sid)

    def close_session(self, sid: str) -> None:
        with self._lock:
            self.sessions.pop(sid, None)

    def close(self) -> None:
        self.httpd.close()

    def __enter__(self) -> ShopServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_bind_address(host: str, allow_remote: bool, api_key: str | None = None) -> None:
    """Refuse to bind anywhere but loopback unless ``allow_remote`` and an API key say so explicitly."""
    httpd.check_bind_address(host, what="shop server", allow_remote=allow_remote, api_key=api_key)


class _Handler(HardenedHandler):
    server_version = "WebShop"

    def respond(self, method: str) -> None:
        if method not in ("GET", "POST"):
            raise HTTPRequestError(405, f"{method} is not used by the shop; browse with GET, buy with POST",
                                   "method_not_allowed", headers={"Allow": "GET, POST"})
        if method == "POST":
            self.read_body()  # no form field is used; reading it (bounded) keeps the connection in step
        server: ShopServer = self.server.shop_server  # type: ignore[attr-defined]
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        if parts == [""] and method == "GET":
            return self._send(200, html_view.index_page({s: len(server.goals.split(s)) for s in SPLITS}))
        if parts == ["start"] and method == "GET":
            return self._start(server, url.query)
        if len(parts) >= 2 and parts[0] == "s":
            return self._session_page(server, method, parts[1], parts[2:], url.query)
        self._send(404, html_view.error_page(404, "No such page."))

    def _start(self, server: ShopServer, query: str) -> None:
        params = parse_qs(query, max_num_fields=16)
        split = params.get("split", ["test"])[0]
        try:
            sid = server.open_session(split, int(params.get("task", ["0"])[0][:9]),
                                      show_attributes=params.get("attrs", ["0"])[0] == "1")
        except ValueError as e:
            return self._send(400, html_view.error_page(400, str(e)))
        self._redirect(f"/s/{sid}/")

    def _session_page(self, server: ShopServer, method: str, sid: str, rest: list[str], query: str) -> None:
        session = server.session(sid)
        location = html_view.parse_location(rest, query)
        if session is None:
            return self._send(404, html_view.error_page(404, "This shopping session has ended or never existed."))
        if location is not None:
            location = server.shop.validate(location, show_attributes=session.show_attributes)
        buying = bool(rest) and rest[0] == "buy"
        if location is None or buying != (method == "POST") or (method == "POST" and location.kind != DONE):
            return self._send(404, html_view.error_page(404, "No such page."))
        if buying:
            session.purchases.append(location)
            return self._redirect(html_view.location_url(sid, location))
        page = server.shop.page(session.goal, location, show_attributes=session.show_attributes)
        self._send(200, html_view.render_page(page, sid))

    @classmethod
    def error_body(cls, status: int, message: str, code: str) -> tuple[str, bytes]:
        """Errors (ours and http.server's: 414 for a huge URL, 400, 405) as our escaped page."""
        return "text/html; charset=utf-8", html_view.error_page(status, message).encode("utf-8")

    def send_bytes(self, status: int, content_type: str, data: bytes, headers: dict[str, str] | None = None) -> None:
        super().send_bytes(status, content_type, data, {**SECURITY_HEADERS, **(headers or {})})

    def _send(self, status: int, body: str) -> None:
        self.send_bytes(status, "text/html; charset=utf-8", body.encode("utf-8"))

    def _redirect(self, location: str) -> None:
        self.send_bytes(303, "text/html; charset=utf-8", b"", {"Location": location})


_SHARED: dict[tuple[int, int], ShopServer] = {}
_SHARED_LOCK = threading.Lock()


def shared_server(num_products: int = 10_000, seed: int = 0) -> ShopServer:
    """This process's server for a catalogue, started on first use (by any thread) and stopped at exit."""
    with _SHARED_LOCK:
        key = (int(num_products), int(seed))
        if key not in _SHARED:
            _SHARED[key] = ShopServer.for_catalogue(*key)
            atexit.register(_SHARED[key].close)
        return _SHARED[key]


def _forget_shared_servers_in_child() -> None:
    """After ``fork`` the serving threads stay in the parent: a child starts its own servers on first use."""
    global _SHARED_LOCK
    for server in _SHARED.values():
        atexit.unregister(server.close)  # closing the parent's server from the child would wait forever
    _SHARED.clear()
    _SHARED_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_shared_servers_in_child)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the web shop for people and agents.")
    httpd.add_bind_arguments(parser, port=8000)
    parser.add_argument("--num-products", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    api_key = httpd.bind_settings(parser, args, what="shop server")  # before building the catalogue: fail fast
    try:
        server = ShopServer.for_catalogue(args.num_products, args.seed, host=args.host, port=args.port,
                                          allow_remote=args.allow_remote, api_key=api_key)
    except OSError as e:
        parser.error(f"cannot listen on {args.host}:{args.port}: {e}")
    print(f"WebShop at {server.url}/  (Ctrl-C to stop)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
