"""The request side: authentication before the body, bodies read within limits, errors as clear 4xx replies."""

from __future__ import annotations

import hmac
import json
import logging
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Callable

from .limits import HTTPRequestError

if TYPE_CHECKING:
    from .server import HardenedHTTPServer

log = logging.getLogger("agentgym_envs.core.httpd")


class HardenedHandler(BaseHTTPRequestHandler):
    """The request side: subclasses implement :meth:`respond` and may restyle :meth:`error_body`.

    Every method (``GET``, ``POST``, ``PUT``, …) reaches :meth:`respond` after the API key is checked; ``HEAD``
    is answered as ``GET`` without the body. Read the body only through :meth:`read_body` / :meth:`read_json`.
    """

    server: HardenedHTTPServer
    protocol_version = "HTTP/1.1"

    def respond(self, method: str) -> None:
        """Answer the request (``self.path``); raise :class:`HTTPRequestError` for a client's mistake."""
        raise HTTPRequestError(404, f"no route {method} {self.path}", "not_found")

    @classmethod
    def error_body(cls, status: int, message: str, code: str) -> tuple[str, bytes]:
        """Content type and body of an error reply; OpenAI's shape by default."""
        body = {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                          "code": code}}
        return "application/json", json.dumps(body).encode("utf-8")

    # ----------------------------------------------------------------- connection handling
    def setup(self) -> None:
        self.timeout = self.server.limits.read_timeout_s  # StreamRequestHandler applies it to the socket
        super().setup()
        self.park_connection = False

    def handle(self) -> None:
        """Serve requests while the client sends them back to back; park the connection when it goes quiet."""
        while True:
            self.server.lobby.watch(self.connection)
            try:
                self.handle_one_request()
            except OSError:  # the client reset or vanished mid-request (routine), or the read deadline cut it off
                self.close_connection = True
            finally:
                self.server.lobby.unwatch(self.connection)
            if self.close_connection:
                return
            if not self._next_request_buffered():
                self.park_connection = True
                return

    def _next_request_buffered(self) -> bool:
        """Whether the next request has already arrived (without blocking: a quiet connection goes to the lobby)."""
        try:
            self.connection.settimeout(0.0)
            return bool(self.rfile.peek(1))
        except OSError:
            return False
        finally:
            try:
                self.connection.settimeout(self.timeout)
            except OSError:
                pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = do_GET  # noqa: N815

    def _dispatch(self) -> None:
        self.server.lobby.unwatch(self.connection)  # the headers are in; read_body keeps its own deadline
        self._body_read = False
        try:
            self._check_api_key()
            self.respond("GET" if self.command == "HEAD" else self.command)
        except HTTPRequestError as e:
            self.close_connection = self.close_connection or e.close
            self.send_error_reply(e.status, e.message, e.code, e.headers)
        except Exception as e:  # our own code failed, not the client
            log.exception("%s: error answering %s %s", self.server.what, self.command, self.path[:200])
            self.send_error_reply(500, f"the {self.server.what} failed: {type(e).__name__}: {e}", "server_error")
        self._settle_body()

    def _check_api_key(self) -> None:
        key = self.server.api_key
        if key is None:
            return
        given = self.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode("utf-8", "replace"), f"Bearer {key}".encode()):
            raise HTTPRequestError(401, "missing or wrong API key: send the header 'Authorization: Bearer <key>'",
                                   "invalid_api_key", headers={"WWW-Authenticate": "Bearer"})

    # ----------------------------------------------------------------- bodies
    def content_length(self) -> int | None:
        """The declared body length (``None`` without the header), or a 4xx for any framing we do not accept."""
        if self.headers.get("Transfer-Encoding") is not None:
            raise HTTPRequestError(411, "Transfer-Encoding (chunked) request bodies are not supported; send the "
                                   "body with a Content-Length header", "length_required", close=True)
        values = {v.strip() for v in self.headers.get_all("Content-Length") or ()}
        if not values:
            return None
        value = values.pop()
        if values or not (value.isascii() and value.isdigit() and len(value) <= 18):
            raise HTTPRequestError(400, f"Content-Length must be one non-negative integer, got "
                                   f"{self.headers.get_all('Content-Length')!r}", "bad_content_length", close=True)
        length, limit = int(value), self.server.limits.max_body_bytes
        if length > limit:
            raise HTTPRequestError(413, f"the request body of {length:,} bytes exceeds the {self.server.what}'s "
                                   f"limit of {limit:,} bytes", "body_too_large", close=True)
        return length

    def read_body(self) -> bytes:
        """The whole body (``b""`` without one), read within ``read_timeout_s``."""
        length = self.content_length() or 0
        self._body_read = True
        return self._read_exactly(length, keep=True)

    def read_json(self) -> Any:
        """The body as JSON; a missing, undecodable, too deeply nested or absurd body is a 4xx that says why."""
        if self.content_length() is None:
            raise HTTPRequestError(411, f"{self.command} {self.path[:100]} needs a JSON body with a Content-Length "
                                   "header", "length_required")
        body = self.read_body()
        try:
            return json.loads(body.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise HTTPRequestError(400, f"the request body is not UTF-8 ({e})", "invalid_json") from None
        except RecursionError:
            raise HTTPRequestError(400, "the request body is JSON nested too deeply to parse", "invalid_json") from None
        except ValueError as e:  # JSONDecodeError, and int() refusing a number with thousands of digits
            raise HTTPRequestError(400, f"the request body is not valid JSON ({str(e)[:200]})", "invalid_json") from None

    def _read_exactly(self, length: int, *, keep: bool) -> bytes:
        deadline, chunks, left = time.monotonic() + self.server.limits.read_timeout_s, [], length
        try:
            while left:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                self.connection.settimeout(remaining)
                chunk = self.rfile.read1(min(left, 1 << 16))
                if not chunk:
                    raise HTTPRequestError(400, f"the body ended after {length - left} of its {length} bytes",
                                           "incomplete_body", close=True)
                left -= len(chunk)
                if keep:
                    chunks.append(chunk)
        except (TimeoutError, OSError) as e:
            raise HTTPRequestError(408, f"the request body did not arrive within "
                                   f"{self.server.limits.read_timeout_s:g} s ({type(e).__name__})",
                                   "request_timeout", close=True) from None
        finally:
            try:
                self.connection.settimeout(self.timeout)
            except OSError:
                pass
        return b"".join(chunks)

    def _settle_body(self) -> None:
        """Discard a body nobody read (a refused request), so the next request on the connection parses."""
        if self._body_read or self.close_connection:
            return
        try:
            length = self.content_length()
            if length:
                self._read_exactly(length, keep=False)
        except HTTPRequestError:
            self.close_connection = True

    # ----------------------------------------------------------------- replies
    def send_bytes(self, status: int, content_type: str, data: bytes, headers: dict[str, str] | None = None) -> None:
        """One complete reply (no body for ``HEAD``); a client that went away just ends the connection."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self.send_bytes(status, "application/json", json_bytes(payload), headers)

    def send_error_reply(self, status: int, message: str, code: str, headers: dict[str, str] | None = None) -> None:
        content_type, body = self.error_body(status, message, code)
        self.send_bytes(status, content_type, body, headers)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (bad request line, 414, 431, unknown method) in our shape; 501 becomes 405."""
        self.close_connection = True
        if code == HTTPStatus.NOT_IMPLEMENTED:
            code, message = 405, f"method {self.command!r} is not supported here"
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "Error"
        self.send_error_reply(code, message or phrase, phrase.lower().replace(" ", "_"))

    def route(self, method: str, path: str, table: dict[str, dict[str, Callable[[], None]]]) -> None:
        """Call ``table[path][method]``: an unknown path is 404 and a known one with another method 405."""
        methods = table.get(path)
        if methods is None:
            raise HTTPRequestError(404, f"no route {method} {path[:200]}; this server has "
                                   + ", ".join(f"{' or '.join(m)} {p}" for p, m in table.items()), "not_found")
        if method not in methods:
            raise HTTPRequestError(405, f"{method} {path} is not allowed; use {' or '.join(methods)}",
                                   "method_not_allowed", headers={"Allow": ", ".join(methods)})
        methods[method]()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        log.debug("%s: %s", self.server.what, format % args)


def json_bytes(payload: Any) -> bytes:
    """``payload`` as UTF-8 JSON. A string holding a lone surrogate (a model's reply decoded from an endpoint's
    JSON can) has no UTF-8 form: then the whole body is ASCII JSON with ``\\uXXXX`` escapes, which decodes back
    to the same string, instead of an exception that turns the client's request into an infrastructure failure."""
    text = json.dumps(payload, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(payload).encode("ascii")
