"""The shop's web server: a threaded HTTP server on 127.0.0.1 that serves many shopping sessions at once.

Built on the standard library's ``ThreadingHTTPServer`` (one thread per connection, HTTP/1.1 keep-alive):
pages are rendered in a fraction of a millisecond and are pure functions of ``(session, URL)``, so
sessions share nothing but read-only data and need no framework. ``GET /start?split=test&task=3`` opens a
session on a task and redirects to its search page; everything else is under ``/s/<sid>/`` (see
:mod:`.html_view`). Only the purchase is a ``POST``.

The server binds to a loopback address on a free port by default and refuses any other address unless
``allow_remote=True``: it is an environment for agents, not a public site.

    python -m agentgym_envs.web.server --port 8000      # then open http://127.0.0.1:8000/

>>> with ShopServer.for_catalogue(1_000) as server:
...     server.url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

import argparse
import atexit
import ipaddress
import secrets
import socket
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

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


@dataclass
class Session:
    goal: Goal
    show_attributes: bool = False
    purchases: list[Location] = field(default_factory=list)


class ShopServer:
    """A running shop: ``url`` to browse, ``open_session`` to start one in-process, ``close`` to stop."""

    def __init__(self, shop: Shop, goals: GoalSet, *, host: str = "127.0.0.1", port: int = 0,
                 allow_remote: bool = False, max_sessions: int = 10_000):
        check_bind_address(host, allow_remote)
        self.shop, self.goals, self.max_sessions = shop, goals, max_sessions
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.shop_server = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="webshop-server", daemon=True)
        self._thread.start()

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
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> ShopServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_bind_address(host: str, allow_remote: bool) -> None:
    """Refuse to bind anywhere but loopback unless ``allow_remote`` says so explicitly."""
    try:
        address = ipaddress.ip_address(socket.gethostbyname(host))
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot resolve the bind address {host!r} ({e}); use 127.0.0.1") from None
    if not address.is_loopback and not allow_remote:
        raise ValueError(f"refusing to bind the shop server to {host!r} ({address}), which is not a loopback "
                         "address: the shop is for local agents. Use host='127.0.0.1', or pass "
                         "allow_remote=True if you really mean to expose it to your network.")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "WebShop"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._route("GET")

    def do_POST(self) -> None:  # noqa: N802
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 1 << 17
        if length > 1 << 16:
            self.close_connection = True  # what is left unread must not be parsed as the next request
        if length > 0:
            self.rfile.read(min(length, 1 << 16))  # no form field is used; drain a bounded amount
        self._route("POST")

    def _route(self, method: str) -> None:
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

    def _send(self, status: int, body: str) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (414 for a huge URL, 400, 501) in our escaped page, with our headers."""
        self.close_connection = True
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "Error"
        self._send(code, html_view.error_page(code, message or phrase))

    def _redirect(self, location: str) -> None:
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's signature)
        pass  # one line per request would drown a training run's logs


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the web shop for people and agents.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--num-products", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    args = parser.parse_args(argv)
    try:
        server = ShopServer.for_catalogue(args.num_products, args.seed, host=args.host, port=args.port,
                                          allow_remote=args.allow_remote)
    except ValueError as e:
        parser.error(f"{e} (on the command line: --allow-remote)")
    print(f"WebShop at {server.url}/  (Ctrl-C to stop)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
