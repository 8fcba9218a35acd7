"""What a client may use (:class:`ServerLimits`), who may connect (:func:`check_bind_address`), and the errors."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

from ..errors import AgentGymError


@dataclass(frozen=True)
class ServerLimits:
    """What one server lets a client use; the defaults suit a local service with a few dozen clients."""

    max_body_bytes: int = 1 << 20
    """Largest request body read; a longer declared ``Content-Length`` is answered 413 unread."""
    max_handler_threads: int = 64
    """Requests handled at once; one more is answered 503 (``Retry-After: 1``) without a thread."""
    max_idle_connections: int = 512
    """Silent connections kept in the lobby; beyond it the longest-waiting one is closed."""
    read_timeout_s: float = 30.0
    """A request (line, headers and body) must arrive whole within this time once it has started."""
    idle_timeout_s: float = 60.0
    """A connection that sends nothing (new, or between keep-alive requests) is closed after this."""
    listen_backlog: int = 128
    """Connections the kernel queues before ``accept``; socketserver's default of 5 resets some under load."""

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_handler_threads", "max_idle_connections", "listen_backlog"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"ServerLimits.{name} must be an int >= 1, got {getattr(self, name)!r}")
        if not (self.read_timeout_s > 0 and self.idle_timeout_s > 0):
            raise ValueError(f"timeouts must be > 0 seconds, got read_timeout_s={self.read_timeout_s}, "
                             f"idle_timeout_s={self.idle_timeout_s}")


class HTTPRequestError(AgentGymError):
    """A request we answer with ``status`` (4xx for the client's mistakes) and ``message``."""

    def __init__(self, status: int, message: str, code: str = "invalid_request_error", *,
                 headers: dict[str, str] | None = None, close: bool = False):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code
        self.headers, self.close = dict(headers or {}), close


class BindRefused(AgentGymError, ValueError):
    """A server was asked to listen beyond loopback without ``allow_remote`` and an API key."""


def check_bind_address(host: str, *, what: str, allow_remote: bool, api_key: str | None) -> None:
    """Refuse a non-loopback ``host`` unless ``allow_remote`` is set *and* an API key protects the server."""
    try:
        infos = socket.getaddrinfo(host or "0.0.0.0", None, type=socket.SOCK_STREAM)
        addresses = {ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos}
    except (OSError, ValueError) as e:
        raise BindRefused(f"cannot resolve the bind address {host!r} for the {what} ({e}); use 127.0.0.1") from None
    remote = sorted(str(a) for a in addresses if not a.is_loopback)
    if not remote:
        return
    if not allow_remote:
        raise BindRefused(
            f"refusing to bind the {what} to {host!r} ({', '.join(remote)}), which is not a loopback address: "
            f"the {what} is for local clients. Use 127.0.0.1, or pass --allow-remote (allow_remote=True) "
            "together with an API key (--api-key-env VAR, api_key=...) to expose it to your network.")
    if not api_key:
        raise BindRefused(
            f"refusing to bind the {what} to {host!r} ({', '.join(remote)}) without an API key: anyone on your "
            "network could use it. Set one with --api-key-env VAR (api_key=...), or bind 127.0.0.1.")
