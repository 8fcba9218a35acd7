"""``agentgym view``'s server: the episode viewer over loopback HTTP, turns fetched per episode.

For stores too large to embed whole: the page holds only the episode list (read once, at start) and asks
``/episodes/<row>/steps.json`` for an episode's turns when it is opened (with its start, replayed from its
seed then), and ``/search.json?q=TEXT`` for the rows whose turns contain a text. Standard library only
(:mod:`http.server`), read-only, and loopback only: the server refuses to bind anything else, and answers
403 to a request whose ``Host`` header names another host (a web page that rebinds its own DNS name to
127.0.0.1 cannot read the episodes). Nothing in a request reaches SQL but an integer row number.
"""

from __future__ import annotations

import ipaddress
import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .errors import LeaderboardError
from .store import Store, open_store
from .episodes_view import StartReplayer
from .viewer import SERVED_MAX_CHARS, EpisodeIndex, read_index, read_start, read_steps, render_viewer

STEPS_PATH = re.compile(r"^/episodes/(\d{1,9})/steps\.json$")
MAX_QUERY = 200
"""Longest turn-text search the server runs (characters); longer ones are cut."""


class ViewerError(LeaderboardError):
    """The viewer cannot be served as asked (a non-loopback address)."""


class ViewerServer(ThreadingHTTPServer):
    """Serves one page and the turns of its episodes; :meth:`close` also closes the stores."""

    daemon_threads = True

    def __init__(self, stores: list[str | Path], host: str = "127.0.0.1", port: int = 0, *,
                 max_chars: int = SERVED_MAX_CHARS):
        host = "127.0.0.1" if host == "localhost" else host
        if not _is_loopback(host):
            raise ViewerError(f"expected a loopback IPv4 address (127.0.0.1 or localhost), got {host!r}: the viewer "
                              "shows model outputs and store paths, so it is never served to the network")
        self.index: EpisodeIndex = read_index(stores)
        self.max_chars = max_chars
        self.page = render_viewer(self.index, None, served=True, max_chars=max_chars).encode()
        self.stores: list[Store] = [open_store(path, create=False) for path in stores]
        self.replayer = StartReplayer()  # one env per entry, kept: replays each opened episode's start
        self.lock = threading.Lock()  # one sqlite connection per store and the replayer's envs: shared by threads
        super().__init__((host, port), _Handler)

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
            start = read_start(self.replayer, self.index, row, self.max_chars)
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
        self.server_close()
        self.replayer.close()
        for store in self.stores:
            store.db.close()  # read-only: nothing to fold back


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802  (http.server's name)
        if self.headers.get("Host", "") not in self.server.allowed_hosts():
            self._send(403, b"expected Host 127.0.0.1:PORT or localhost:PORT", "text/plain")
            return
        path = self.path.split("?", 1)[0]
        if path in ("/", "/index.html"):
            self._send(200, self.server.page, "text/html; charset=utf-8")
            return
        if path == "/search.json":
            query = urllib.parse.parse_qs(self.path.partition("?")[2]).get("q", [""])[0]
            self._send(200, self.server.search_json(query), "application/json; charset=utf-8")
            return
        match = STEPS_PATH.match(path)
        body = self.server.steps_json(int(match.group(1))) if match else None
        if body is None:
            self._send(404, b"not found: the viewer serves /, /episodes/<row>/steps.json and /search.json?q=", "text/plain")
        else:
            self._send(200, body, "application/json; charset=utf-8")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (quiet: the CLI prints the URL)
        pass


def _is_loopback(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
        return address.version == 4 and address.is_loopback
    except ValueError:
        return False
