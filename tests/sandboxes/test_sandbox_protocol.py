"""Pure parts of the supervisor protocol: the host treats answers as untrusted; the fast JSON codec is exact."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandboxes.base import SandboxDied, SandboxError, render_stream
from sandboxes.channel import MAX_LINE, Channel
from sandboxes.inside import procs
from sandboxes.supervised import SupervisedSandbox


class FakeTransport:
    """Replays scripted supervisor output; records what the host sent."""

    def __init__(self, *chunks: bytes):
        self.chunks, self.sent = list(chunks), []

    def send(self, data: bytes) -> None:
        self.sent.append(data)

    def recv(self, deadline: float) -> bytes:
        if not self.chunks:
            raise TimeoutError
        return self.chunks.pop(0)

    def close(self) -> None:
        pass


def test_channel_round_trip_and_split_lines():
    channel = Channel(FakeTransport(b'{"ok": true, "rea', b'dy": true}\n{"ok": true, "x": 1}\n'), "fake")
    assert channel.hello(1.0)["ready"]
    assert channel.request("ping", 1.0)["x"] == 1
    assert json.loads(channel.transport.sent[0]) == {"op": "ping"}


@pytest.mark.parametrize("chunks, match", [
    ((b"not json\n",), "non-JSON"),
    ((b"[1, 2]\n",), "expected a JSON object"),
    ((b"[" * 100_000 + b"]" * 100_000 + b"\n",), "non-JSON"),  # too deep to parse: garbled, not a crash
    ((b"",), "exited"),
    ((), "did not answer in time"),
])
def test_channel_rejects_garbled_or_silent_supervisors(chunks, match):
    with pytest.raises(SandboxDied, match=match):
        Channel(FakeTransport(*chunks), "fake").request("ping", 0.1)


def test_channel_bounds_answer_lines():
    endless = FakeTransport(*([b"x" * (1 << 20)] * (MAX_LINE // (1 << 20) + 2)))
    with pytest.raises(SandboxDied, match="line over"):
        Channel(endless, "fake").request("ping", 10.0)


def test_channel_reports_failed_operations():
    with pytest.raises(SandboxError, match="run failed inside the sandbox: OSError: boom"):
        Channel(FakeTransport(b'{"ok": false, "error": "OSError: boom"}\n'), "fake").request("run", 1.0)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children), max_leaves=20,
)


@given(json_values)
def test_supervisor_json_codec_matches_json(value):
    encoded = procs.DUMPS(value)
    assert json.loads(encoded) == value and procs.LOADS(encoded) == value
    assert procs.LOADS(json.dumps(value)) == value


@pytest.mark.parametrize("text", ["", "{", '{"a": 1} trailing', "nul", "[1,]"])
def test_supervisor_json_codec_rejects_garbage(text):
    with pytest.raises(ValueError):
        procs.LOADS(text)


@given(st.lists(st.binary(max_size=300), max_size=20), st.integers(1, 64))
def test_capped_keeps_head_and_tail_and_counts_the_rest(chunks, cap):
    capped = procs.Capped(cap)
    for chunk in chunks:
        capped.add(chunk)
    data = b"".join(chunks)
    dropped = capped.total - len(capped.head) - len(capped.tail)
    assert capped.total == len(data) and dropped >= 0
    assert bytes(capped.head) == data[:cap] and bytes(capped.tail) == (data[cap:][-cap:] if len(data) > cap else b"")
    assert render_stream(bytes(capped.head), bytes(capped.tail), dropped) == (
        data if dropped == 0 else data[:cap] + f"\n…[{dropped} bytes truncated]…\n".encode() + data[-cap:])


def test_render_stream_marks_the_cut():
    assert render_stream(b"ab", b"yz", 0) == b"abyz"
    assert render_stream(b"ab", b"yz", 5) == "ab\n…[5 bytes truncated]…\nyz".encode()


class ScriptedSandbox(SupervisedSandbox):
    """A sandbox whose 'supervisor' is a fixed script of answers: a stand-in for a compromised one."""

    backend = "scripted"

    def __init__(self, *answers: bytes):
        self._answers = answers
        super().__init__()

    def _launch(self) -> Channel:
        return Channel(FakeTransport(*self._answers), "scripted")

    def _terminate(self) -> None:
        pass


@pytest.mark.parametrize("answer", [
    b'{"ok": true, "exit_code": "zero", "timed_out": false, "duration_s": 0}\n',
    b'{"ok": true, "stdout": "not base64!", "exit_code": 0, "timed_out": false, "duration_s": 0}\n',
    b'{"ok": true}\n',
])
def test_malformed_answers_end_the_supervisor(answer):
    box = ScriptedSandbox(answer)
    with pytest.raises(SandboxDied, match="malformed answer"):
        box.run("true", timeout=1)
    with pytest.raises(SandboxDied, match="call reset"):
        box.run("true", timeout=1)
