"""``agentgym view``'s server: the episode viewer over loopback HTTP, turns fetched per episode.

For stores too large to embed whole: the page holds only the episode list (read once, at start) and asks
``/episodes/<row>/steps.json`` for an episode's turns when it is opened (with its start, from the store, or
for an old store replayed from its seed where :mod:`leaderboards.replay` allows), and ``/search.json?q=TEXT``
for the rows whose turns contain a text. Read-only and loopback only: the server refuses to bind anything
else, and answers 403 to a request whose ``Host`` header names another host (a web page that rebinds its own
DNS name to 127.0.0.1 cannot read the episodes). Nothing in a request reaches SQL but an integer row number.

It is built on :class:`~agentgym_envs.core.httpd.HardenedHTTPServer`, like every other server here: silent
connections wait in one lobby thread and are closed after ``idle_timeout_s``, a request must arrive within
``read_timeout_s``, and at most ``max_handler_threads`` are handled at once (503 beyond).
"""

from __future__ import annotations

import ipaddress
import json
import re
import threading
import urllib.parse
from pathlib import Path

from agentgym_envs.core.httpd import HardenedHandler, HTTPRequestError, ServerLimits, HardenedHTTPServer

from .episodes_view import StartReader
from .errors import LeaderboardError
from .store import Store, open_store
from .viewer import SERVED_MAX_CHARS, EpisodeIndex, read_index, read_start, read_steps, render_viewer

STEPS_PATH = re.compile(r"^/episodes/(\d{1,9})/steps\.json$")
MAX_QUERY = 200
"""Longest turn-text search the server runs (characters); longer ones are cut."""
VIEWER_LIMITS = ServerLimits(max_body_bytes=1024, max_handler_threads=16, max_idle_connections=64,
                             read_timeout_s=10.0, idle_timeout_s=30.0)
"""One person's browser: a few parallel fetches, no request bodies."""


class ViewerError(LeaderboardError):
    """The viewer cannot be served as asked (a non-loopback address)."""


class ViewerServer(HardenedHTTPServer):
    """Serves one page and the turns of its episodes; :meth:`close` also closes the stores."""

    def __init__(self, stores: list[str | Path], host: str = "127.0.0.1", port: int = 0, *,
                 max_chars: int = SERVED_MAX_CHARS, limits: ServerLimits = VIEWER_LIMITS):
        host = "127.0.0.1" if host == "localhost" else host
        if not _is_loopback(host):
            raise ViewerError(f"expected a loopback IPv4 address (127.0.0.1 or localhost), got {host!r}: the viewer "
                              "shows model outputs and store paths, so it is never served to the network")
        self.index: EpisodeIndex = read_index(stores)
        self.max_chars = max_chars
        self.page = render_viewer(self.index, None, served=True, max_chars=max_chars).encode()
        self.stores: list[Store] = [open_store(path, create=False) for path in stores]
        self.reader = StartReader()  # stored starts; for old stores an allowed replay (one env per entry, kept)
        self.lock = threading.Lock()  # one sqlite connection per store and the replayer's envs: shared by threads
        super().__init__((host, port), _Handler, what="episode viewer", limits=limits)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"

    def steps_json(self, row: int) -> bytes | None:
        """The turns of list row ``row`` as JSON, or ``None`` if there is no such row."""
        if not 0 <= row < len(self.index.where):
            return None
        source, episode_id = self.index.where[row]
        with self.lock:
            turns = read_steps(self.stores[source].db, [episode_id], max_chars=self.max_chars).get(episode_id, [])
            start = read_start(self.reader, self.index, row, self.max_chars, self.stores[source].db)
        return json.dumps({"turns": turns, "start": start}, ensure_ascii=False, allow_nan=False).encode()

    def search_json(self, query: str) -> bytes:
        """Rows whose turns (reply, action, observation, parse error) contain ``query``, any case, as JSON."""
        needle = query[:MAX_QUERY].lower()
        if not needle:
            return b"[]"
        rows = {where: n for n, where in enumerate(self.index.where)}
        found = []
        with self.lock:
            for source, store in enumerate(self.stores):
                hits = store.db.execute(
                    "SELECT DISTINCT episode_id FROM steps WHERE instr(lower(reply), ?1) OR instr(lower(action), ?1)"
                    " OR instr(lower(observation), ?1) OR instr(lower(parse_error), ?1)", (needle,))
                found += [rows[(source, e)] for (e,) in hits if (source, e) in rows]
        return json.dumps(sorted(found)).encode()

    def allowed_hosts(self) -> set[str]:
        port = self.server_address[1]
        return {f"{self.server_address[0]}:{port}", f"localhost:{port}"}

    def close(self) -> None:
        super().close()
        with self.lock:
            self.reader.close()
            for store in self.stores:
                store.db.close()  # read-only: nothing to fold back


_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


class _Handler(HardenedHandler):
    server: ViewerServer

    @classmethod
    def error_body(cls, status: int, message: str, code: str) -> tuple[str, bytes]:
        return "text/plain; charset=utf-8", message.encode("utf-8")

    def respond(self, method: str) -> None:
        if self.headers.get("Host", "") not in self.server.allowed_hosts():
            raise HTTPRequestError(403, "expected Host 127.0.0.1:PORT or localhost:PORT", "forbidden")
        if method != "GET":
            raise HTTPRequestError(405, f"the viewer is read-only: {method} is not allowed; use GET",
                                   "method_not_allowed", headers={"Allow": "GET, HEAD"})
        path = self.path.split("?", 1)[0]
        if path in ("/", "/index.html"):
            self.send_bytes(200, "text/html; charset=utf-8", self.server.page, _HEADERS)
            return
        if path == "/search.json":
            query = urllib.parse.parse_qs(self.path.partition("?")[2]).get("q", [""])[0]
            self.send_bytes(200, "application/json; charset=utf-8", self.server.search_json(query), _HEADERS)
            return
        match = STEPS_PATH.match(path)
        body = self.server.steps_json(int(match.group(1))) if match else None
        if body is None:
            raise HTTPRequestError(404, "not found: the viewer serves /, /episodes/<row>/steps.json and "
                                   "/search.json?q=", "not_found")
        self.send_bytes(200, "application/json; charset=utf-8", body, _HEADERS)

    def send_bytes(self, status: int, content_type: str, data: bytes, headers: dict[str, str] | None = None) -> None:
        super().send_bytes(status, content_type, data, {**_HEADERS, **(headers or {})})

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (quiet: the CLI prints the URL)
        pass


def _is_loopback(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
        return address.version == 4 and address.is_loopback
    except ValueError:
        return False
