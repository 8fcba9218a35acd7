"""The hardened HTTP/1.1 server under our local services: the web shop, the search ``/retrieve`` service
and ``trainer.serve.policy_server`` each subclass :class:`HardenedHTTPServer` and :class:`HardenedHandler`, so that every
guarantee below is written, and tested, once.

The standard library's ``ThreadingHTTPServer`` alone spends a thread on every open connection (300 silent
sockets hold 300 threads), listens with a backlog of 5 (connections reset under 50 concurrent clients),
trusts ``Content-Length`` (``-1`` reads until the client stops) and reads bodies before anyone checks a key.
What a server built here guarantees instead (the numbers are fields of :class:`ServerLimits`):

* **Binding.** Loopback only, unless the caller passes ``allow_remote=True`` (``--allow-remote``) *and* an
  API key; :func:`check_bind_address` words the refusal the same way for every server.
* **Authentication first.** With an API key set, ``Authorization: Bearer <key>`` is checked from the headers,
  before one byte of the body is read; anything else is HTTP 401.
* **Bodies.** Read only with a valid ``Content-Length`` (ASCII digits, at most ``max_body_bytes``) and within
  ``read_timeout_s``: a negative, malformed or conflicting length is 400, an oversized one 413, chunked
  ``Transfer-Encoding`` 411; after those the connection is closed with the body unread.
* **Connections.** A connection that is silent (new, or idle between keep-alive requests) waits in one
  selector thread (the *lobby*), not in a thread of its own, and is closed after ``idle_timeout_s``; at most
  ``max_idle_connections`` wait (the oldest is closed first). A request must arrive whole within
  ``read_timeout_s``. At most ``max_handler_threads`` requests are handled at once; beyond that the server
  answers 503 with ``Retry-After`` straight away. The listen backlog is ``listen_backlog``.
* **Errors.** A client's mistake (bad framing, unknown route, wrong method, bad JSON, wrong types) is a 4xx
  whose message says what was expected; 500 means our own code failed, and says so.
"""

from .cli import add_bind_arguments, bind_settings
from .handler import HardenedHandler
from .limits import BindRefused, HTTPRequestError, ServerLimits, check_bind_address
from .server import HardenedHTTPServer

__all__ = ["BindRefused", "HTTPRequestError", "HardenedHTTPServer", "HardenedHandler", "ServerLimits",
           "add_bind_arguments", "bind_settings", "check_bind_address"]
