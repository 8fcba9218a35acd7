"""The listening side: a ``ThreadingHTTPServer`` whose quiet connections wait in one lobby thread, with a thread cap."""

from __future__ import annotations

import collections
import logging
import selectors
import socket
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from .limits import ServerLimits, check_bind_address

if TYPE_CHECKING:
    from .handler import HardenedHandler

log = logging.getLogger("agentgym_envs.core.httpd")


class _Lobby:
    """Connections waiting for their next request, all watched by one selector thread instead of a thread each.

    A readable connection leaves the lobby for a handler thread (``server.dispatch``); one silent for
    ``idle_timeout_s`` is closed. The same thread enforces ``read_timeout_s`` on requests being read, by shutting
    their socket down (which wakes the blocked handler), since http.server has no deadline of its own.
    """

    def __init__(self, server: HardenedHTTPServer):
        self.server, self.limits = server, server.limits
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._incoming: collections.deque[tuple[socket.socket, Any]] = collections.deque()
        self._waiting: collections.OrderedDict[socket.socket, float] = collections.OrderedDict()
        self._reading: dict[socket.socket, float] = {}
        self._reading_lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"{server.what}-lobby", daemon=True)
        self._thread.start()

    def admit(self, sock: socket.socket, address: Any) -> None:
        """Hand a connection over (from any thread); it is served when it next sends something."""
        if self._closed:
            self.server.shutdown_request(sock)
            return
        self._incoming.append((sock, address))
        try:
            self._wake_w.send(b"\0")
        except OSError:  # the wake-up pipe is full (the lobby is already awake) or closed
            pass

    def watch(self, sock: socket.socket) -> None:
        """Start the ``read_timeout_s`` clock of a request being read on ``sock``."""
        with self._reading_lock:
            self._reading[sock] = time.monotonic() + self.limits.read_timeout_s

    def unwatch(self, sock: socket.socket) -> None:
        with self._reading_lock:
            self._reading.pop(sock, None)

    def close(self) -> None:
        self._closed = True
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass
        self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            while not self._closed:
                for key, _ in self._selector.select(timeout=0.25):
                    if key.fileobj is self._wake_r:
                        self._drain_wakeups()
                    else:
                        self._leave(key.fileobj, key.data)
                now = time.monotonic()
                self._take_incoming(now)
                self._expire(now)
        finally:
            for sock in list(self._waiting) + [s for s, _ in self._incoming]:
                self.server.shutdown_request(sock)
            self._selector.close()
            self._wake_r.close()
            self._wake_w.close()

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass

    def _leave(self, sock: socket.socket, address: Any) -> None:
        self._selector.unregister(sock)
        self._waiting.pop(sock, None)
        self.server.dispatch(sock, address)

    def _take_incoming(self, now: float) -> None:
        while self._incoming:
            sock, address = self._incoming.popleft()
            while len(self._waiting) >= self.limits.max_idle_connections:
                oldest, _ = self._waiting.popitem(last=False)
                self._selector.unregister(oldest)
                self.server.shutdown_request(oldest)
            try:
                self._selector.register(sock, selectors.EVENT_READ, address)
            except (OSError, ValueError):  # closed meanwhile
                continue
            self._waiting[sock] = now + self.limits.idle_timeout_s

    def _expire(self, now: float) -> None:
        while self._waiting and next(iter(self._waiting.values())) <= now:  # admission order = deadline order
            sock, _ = self._waiting.popitem(last=False)
            self._selector.unregister(sock)
            self.server.shutdown_request(sock)
        with self._reading_lock:
            late = [sock for sock, deadline in self._reading.items() if deadline <= now]
            for sock in late:
                del self._reading[sock]
        for sock in late:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # the handler's blocked read returns; it closes the connection
            except OSError:
                pass


class HardenedHTTPServer(ThreadingHTTPServer):
    """A ``ThreadingHTTPServer`` with the guarantees of this module; ``what`` names it in messages."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[HardenedHandler], *, what: str,
                 limits: ServerLimits | None = None, api_key: str | None = None, allow_remote: bool = False):
        check_bind_address(address[0], what=what, allow_remote=allow_remote, api_key=api_key)
        self.what, self.limits, self.api_key = what, limits or ServerLimits(), api_key
        self.request_queue_size = self.limits.listen_backlog
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self._active, self._active_lock = 0, threading.Lock()
        super().__init__(address, handler)
        self.lobby = _Lobby(self)

    @property
    def active_handlers(self) -> int:
        """Requests being handled right now (each on its own thread)."""
        return self._active

    def serve_in_thread(self, name: str) -> threading.Thread:
        """Serve from a daemon thread; stop with :meth:`close`."""
        self._serving = True
        thread = threading.Thread(target=self.serve_forever, name=name, daemon=True)
        thread.start()
        return thread

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._serving = True
        super().serve_forever(poll_interval)

    def close(self) -> None:
        """Stop serving (if it was) and close every connection this server holds."""
        if getattr(self, "_serving", False):
            self.shutdown()
        self.server_close()

    def server_close(self) -> None:
        super().server_close()
        if hasattr(self, "lobby"):  # absent when binding failed inside __init__
            self.lobby.close()

    def process_request(self, request: socket.socket, client_address: Any) -> None:  # type: ignore[override]
        self.lobby.admit(request, client_address)

    def dispatch(self, sock: socket.socket, address: Any) -> None:
        """Serve a connection that has sent something, on a new thread, or answer 503 if all are busy."""
        with self._active_lock:
            busy = self._active >= self.limits.max_handler_threads
            if not busy:
                self._active += 1
        if busy:
            self._reject_busy(sock)
            return
        threading.Thread(target=self.process_request_thread, args=(sock, address), daemon=True).start()

    def process_request_thread(self, request: socket.socket, client_address: Any) -> None:  # type: ignore[override]
        park = False
        try:
            handler = self.RequestHandlerClass(request, client_address, self)
            park = getattr(handler, "park_connection", False)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            with self._active_lock:
                self._active -= 1
            if park:
                self.lobby.admit(request, client_address)
            else:
                self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that vanished is routine; anything else is our bug and is logged with its traceback."""
        if isinstance(sys.exc_info()[1], OSError):
            log.debug("%s: connection from %s ended: %s", self.what, client_address, sys.exc_info()[1])
        else:
            log.exception("%s: unexpected error serving %s", self.what, client_address)

    def _reject_busy(self, sock: socket.socket) -> None:
        handler: type[HardenedHandler] = self.RequestHandlerClass  # type: ignore[assignment]
        message = (f"the {self.what} is busy: {self.limits.max_handler_threads} requests are being handled "
                   "(its max_handler_threads); retry in a second")
        content_type, body = handler.error_body(503, message, "server_busy")
        head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}"
                "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n").encode("ascii")
        try:
            sock.settimeout(0.0)
            try:
                sock.recv(1 << 16)  # take what the client sent, so that closing does not reset the reply away
            except OSError:
                pass
            sock.sendall(head + body)
        except OSError:
            pass
        self.shutdown_request(sock)
