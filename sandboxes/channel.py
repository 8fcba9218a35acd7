"""The host's end of the supervisor protocol: JSON lines over a byte stream, with deadlines and bounds.

Answers come from inside the sandbox, where untrusted code runs, so they are treated as untrusted too:
lines are bounded, must decode to a JSON object, and a silent or garbled supervisor is reported as
:class:`~sandboxes.base.SandboxDied` rather than waited on forever.
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import time
from typing import Any, Protocol

from .base import SandboxDied, SandboxError

MAX_LINE = 96 << 20  # a read_file of the largest allowed file, base64-encoded, fits


class Transport(Protocol):
    """A byte stream to the supervisor's stdin and from its stdout."""

    def send(self, data: bytes) -> None: ...
    def recv(self, deadline: float) -> bytes: ...  # b"" at end of stream; TimeoutError past the deadline
    def close(self) -> None: ...


class PipeTransport:
    """The supervisor's stdin/stdout pipes (bubblewrap and unsafe backends)."""

    def __init__(self, stdin_fd: int, stdout_fd: int):
        self._in, self._out = stdin_fd, stdout_fd

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._in, view):]
            except BrokenPipeError as e:
                raise SandboxDied("the sandbox's supervisor is gone (its stdin is closed)") from e

    def recv(self, deadline: float) -> bytes:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self._out], [], [], left)[0]:
            raise TimeoutError
        return os.read(self._out, 1 << 20)

    def close(self) -> None:
        for fd in (self._in, self._out):
            try:
                os.close(fd)
            except OSError:
                pass


class DockerAttachTransport:
    """A container's attached stdio socket; stdout arrives in Docker's 8-byte-header frames."""

    def __init__(self, stream: Any):
        self._stream = stream  # the SDK's SocketIO; it and the raw socket are both closed at the end
        self._sock: socket.socket = stream._sock
        self._raw = b""

    def send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as e:
            raise SandboxDied(f"the container's stdin is closed ({e})") from e

    def recv(self, deadline: float) -> bytes:
        while True:
            frame = self._frame()
            if frame is not None:
                stream, payload = frame
                if stream == 1:  # stdout; the supervisor's stderr (stream 2) is diagnostics only
                    return payload
                continue
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._sock], [], [], left)[0]:
                raise TimeoutError
            chunk = self._sock.recv(1 << 20)
            if not chunk:
                return b""
            self._raw += chunk

    def _frame(self) -> tuple[int, bytes] | None:
        if len(self._raw) < 8:
            return None
        stream, size = self._raw[0], struct.unpack(">I", self._raw[4:8])[0]
        if len(self._raw) < 8 + size:
            return None
        payload, self._raw = self._raw[8 : 8 + size], self._raw[8 + size :]
        return stream, payload

    def close(self) -> None:
        for closeable in (self._stream, self._sock):
            try:
                closeable.close()
            except OSError:
                pass


class Channel:
    """Request/answer over a transport; one request at a time (callers hold the sandbox's lock)."""

    def __init__(self, transport: Transport, describe: str):
        self.transport = transport
        self.describe = describe
        self._buffer = bytearray()

    def hello(self, timeout: float) -> dict[str, Any]:
        """Wait for the supervisor's ready line (it prints one when it starts)."""
        message = self._read_line(time.monotonic() + timeout)
        if not message.get("ready"):
            raise SandboxDied(f"{self.describe}: the supervisor did not start properly: {message}")
        return message

    def request(self, op: str, wait: float, **fields: Any) -> dict[str, Any]:
        """Send one request and wait for its answer; a failed operation raises :class:`SandboxError`."""
        self.transport.send(json.dumps({"op": op, **fields}, separators=(",", ":")).encode() + b"\n")
        answer = self._read_line(time.monotonic() + wait)
        if not answer.get("ok"):
            raise SandboxError(f"{op} failed inside the sandbox: {answer.get('error', answer)}")
        return answer

    def _read_line(self, deadline: float) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_LINE:
                raise SandboxDied(f"{self.describe}: the supervisor sent a line over {MAX_LINE} bytes")
            try:
                chunk = self.transport.recv(deadline)
            except TimeoutError:
                raise SandboxDied(f"{self.describe}: the supervisor did not answer in time") from None
            except OSError as e:
                raise SandboxDied(f"{self.describe}: lost the supervisor ({e})") from e
            if not chunk:
                raise SandboxDied(f"{self.describe}: the supervisor exited")
            self._buffer += chunk
        end = self._buffer.index(b"\n")
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        try:
            message = json.loads(line)
        except (ValueError, RecursionError, MemoryError):  # too deep to parse is garbled too
            raise SandboxDied(f"{self.describe}: the supervisor sent non-JSON: {line[:200]!r}") from None
        if not isinstance(message, dict):
            raise SandboxDied(f"{self.describe}: expected a JSON object from the supervisor, got {line[:200]!r}")
        return message

    def close(self) -> None:
        self.transport.close()
