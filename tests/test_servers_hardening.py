"""Attacks on our three HTTP servers (the shop, search ``/retrieve``, ``trainer.serve.policy_server``), each reproduced first.

Every test runs against all three, through the hardened base they share (``agentgym_envs.core.httpd``), on
loopback: hostile framing (negative, malformed, missing, oversized ``Content-Length``, chunked bodies),
bodies sent before a 401, non-loopback binds, 300 silent sockets, slow clients, 50 concurrent clients, and
malformed requests, which must be 4xx with a message, never 500.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from agentgym_envs.core.httpd import BindRefused, HardenedHTTPServer, ServerLimits
from agentgym_envs.search import service as search_service
from agentgym_envs.search.dataset import build_retriever, load_dataset
from agentgym_envs.search.service import RetrievalService
from agentgym_envs.web import server as shop_module
from agentgym_envs.web.server import ShopServer
from trainer.serve import policy_server as serve
from trainer.serve.policy_server import PolicyServer, ScriptedReplyPolicy

TINY_OVERRIDES = ["policy.tiny.corpus_episodes=40", "policy.tiny.model.hidden_size=64",
                  "policy.tiny.model.num_heads=1", "policy.tiny.model.num_layers=1",
                  "policy.tiny.model.intermediate_size=128", "env.system_prompt=''", "progress=false"]
CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "go north"}], "max_tokens": 1, "temperature": 0}


@dataclass
class Target:
    """One running server and the requests it answers with 200."""

    name: str
    httpd: HardenedHTTPServer
    ok_request: tuple[str, str, bytes]
    post_path: str
    close: Callable[[], None]

    @property
    def address(self) -> tuple[str, int]:
        return self.httpd.server_address[:2]


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    import torch

    from trainer.models.backends.hf import HFPolicy
    from trainer.config import load_config
    from trainer.models.tiny import build_tiny

    torch.set_num_threads(1)
    config = load_config(None, TINY_OVERRIDES)
    return HFPolicy(*build_tiny(config.policy.tiny, str(tmp_path_factory.mktemp("tiny"))))


@pytest.fixture(scope="module")
def retriever():
    return build_retriever(load_dataset(world_seed=0, world_size="tiny"), "bm25")


@pytest.fixture(scope="module")
def makers(tiny_policy, retriever) -> dict[str, Callable[..., Target]]:
    def shop(**kwargs) -> Target:
        server = ShopServer.for_catalogue(1_000, **kwargs)
        return Target("shop", server.httpd, ("GET", "/", b""), "/", server.close)

    def search(**kwargs) -> Target:
        service = RetrievalService(retriever, **kwargs)
        body = json.dumps({"queries": ["guild founded"], "topk": 2}).encode()
        return Target("search", service.server, ("POST", "/retrieve", body), "/retrieve", service.close)

    def policy(**kwargs) -> Target:
        server = PolicyServer(tiny_policy, model_name="tiny", **kwargs)
        server.start()
        return Target("policy", server, ("POST", "/v1/chat/completions", json.dumps(CHAT).encode()),
                      "/v1/chat/completions", lambda: (server.shutdown(), server.server_close()))

    def scripted_policy(**kwargs) -> Target:  # the same HTTP layer without the model's compute in the timings
        server = PolicyServer(ScriptedReplyPolicy(["Action: look"]), model_name="tiny", **kwargs)
        server.start()
        return Target("policy", server, ("POST", "/v1/chat/completions", json.dumps(CHAT).encode()),
                      "/v1/chat/completions", lambda: (server.shutdown(), server.server_close()))

    return {"shop": shop, "search": search, "policy": policy, "scripted_policy": scripted_policy}


@pytest.fixture(params=["shop", "search", "policy"])
def target(request, makers) -> Iterator[Target]:
    running = makers[request.param]()
    yield running
    running.close()


def exchange(address: tuple[str, int], data: bytes, *, timeout: float = 5.0) -> tuple[int | None, dict, bytes, float]:
    """Send ``data`` raw; (status, headers, body, seconds until the reply) — status None if none came."""
    start = time.monotonic()
    with socket.create_connection(address, timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except OSError:  # the server may answer and close before taking everything: read what it said
            pass
        return read_reply(sock, start, timeout)


def read_reply(sock: socket.socket, start: float, timeout: float) -> tuple[int | None, dict, bytes, float]:
    sock.settimeout(timeout)
    buffer = b""
    try:
        while b"\r\n\r\n" not in buffer:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buffer += chunk
    except OSError:
        pass
    if b"\r\n\r\n" not in buffer:
        return None, {}, b"", time.monotonic() - start
    head, _, body = buffer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", 0))
    try:
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    except OSError:
        pass
    return int(lines[0].split()[1]), headers, body, time.monotonic() - start


def pipelined_statuses(sock: socket.socket, count: int) -> list[int]:
    """The statuses of ``count`` replies arriving back to back on one connection."""
    buffer, statuses = b"", []
    while len(statuses) < count:
        head, sep, rest = buffer.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        if sep and len(rest) >= length:
            statuses.append(int(head.split()[1]))
            buffer = rest[length:]
            continue
        chunk = sock.recv(65536)
        if not chunk:
            break
        buffer += chunk
    return statuses


def request_bytes(method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in (headers if headers is not None else {"Content-Length": str(len(body))}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def ok(target: Target) -> int | None:
    method, path, body = target.ok_request
    return exchange(target.address, request_bytes(method, path, body))[0]


# ----------------------------------------------------------------------------------- framing
@pytest.mark.parametrize("length", ["-1", "abc", "1e3", "+5", "5, 6", "0x10", "99999999999999999999999"])
def test_a_bad_content_length_is_400_at_once_and_the_body_is_never_read(target: Target, length: str) -> None:
    """trainer.serve.policy_server read ``Content-Length: -1`` as "until the client stops": 200 MB later, still no reply."""
    status, headers, body, seconds = exchange(
        target.address, request_bytes("POST", target.post_path, b"x" * (1 << 20), {"Content-Length": length}))
    assert status == 400 and seconds < 3, (status, seconds)
    assert b"Content-Length" in body and headers.get("connection") == "close"
    assert ok(target) == 200


def test_two_hundred_megabytes_after_a_negative_length_are_not_taken_in(target: Target) -> None:
    sent, chunk = 0, b"x" * (1 << 20)
    with socket.create_connection(target.address, timeout=5) as sock:
        sock.sendall(request_bytes("POST", target.post_path, headers={"Content-Length": "-1"}))
        start = time.monotonic()
        try:
            while sent < 200 << 20:
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:  # the server answered and closed: it stopped reading
            pass
        status = read_reply(sock, start, 5)[0]
    assert status in (400, None) and sent < 64 << 20, (status, sent)  # only what kernel buffers soaked up
    assert ok(target) == 200


def test_oversized_missing_and_chunked_bodies_are_refused(target: Target) -> None:
    limit = target.httpd.limits.max_body_bytes
    status, _, body, seconds = exchange(
        target.address, request_bytes("POST", target.post_path, headers={"Content-Length": str(limit + 1)}))
    assert status == 413 and seconds < 3 and f"{limit:,}".encode() in body
    status, _, body, _ = exchange(target.address, request_bytes(
        "POST", target.post_path, b"5\r\nhello\r\n0\r\n\r\n", {"Transfer-Encoding": "chunked"}))
    assert status == 411 and b"chunked" in body
    status, _, _, seconds = exchange(target.address, request_bytes("POST", target.post_path, headers={}))
    assert status is not None and 400 <= status < 500 and seconds < 3  # no length: no body, never a wait
    if target.name != "shop":  # the shop's purchase is a body-less POST; the JSON APIs say what they need
        assert status == 411


def test_a_body_that_stops_short_times_out_with_408(makers) -> None:
    running = makers["search"](limits=ServerLimits(read_timeout_s=1.0))
    try:
        status, _, body, seconds = exchange(running.address, request_bytes(
            "POST", "/retrieve", b'{"queries"', {"Content-Length": "100"}))
        assert status == 408 and 0.9 < seconds < 3 and b"did not arrive" in body
    finally:
        running.close()


# ----------------------------------------------------------------------------------- authentication
@pytest.mark.parametrize("length", [1000, 150_000_000])
def test_the_key_is_checked_before_any_body_is_read(target: Target, length: int) -> None:
    """With a key set, trainer.serve.policy_server read 150 MB before answering 401."""
    target.httpd.api_key = "s3cret"
    try:
        status, headers, body, seconds = exchange(
            target.address, request_bytes("POST", target.post_path, headers={"Content-Length": str(length)}))
        assert status == 401 and seconds < 3 and b"API key" in body and headers["www-authenticate"] == "Bearer"
        method, path, valid = target.ok_request
        wrong = exchange(target.address, request_bytes(method, path, valid, {
            "Content-Length": str(len(valid)), "Authorization": "Bearer s3cre"}))[0]
        right = exchange(target.address, request_bytes(method, path, valid, {
            "Content-Length": str(len(valid)), "Authorization": "Bearer s3cret"}))[0]
        assert (wrong, right) == (401, 200)
    finally:
        target.httpd.api_key = None


# ----------------------------------------------------------------------------------- binding
@pytest.mark.parametrize("name,what", [("shop", "shop server"), ("search", "search service"),
                                       ("policy", "policy server")])
def test_non_loopback_needs_the_flag_and_a_key_in_the_same_words(makers, name: str, what: str) -> None:
    """Search and trainer.serve.policy_server bound 0.0.0.0 silently."""
    with pytest.raises(BindRefused, match=f"refusing to bind the {what} to '0.0.0.0'.*not a loopback.*--allow-remote"):
        makers[name](host="0.0.0.0")
    with pytest.raises(BindRefused, match=f"refusing to bind the {what} to '0.0.0.0'.*without an API key"):
        makers[name](host="0.0.0.0", allow_remote=True)


@pytest.mark.parametrize("main,args", [(shop_module.main, []), (search_service.main, []),
                                       (serve.main, ["--reply", "hi"])])
def test_the_command_lines_refuse_non_loopback_too(main, args, capsys, monkeypatch) -> None:
    for extra, message in ([[], "not a loopback address"], [["--allow-remote"], "without an API key"]):
        with pytest.raises(SystemExit) as exited:
            main(args + ["--host", "0.0.0.0", "--port", "0", *extra])
        assert exited.value.code == 2 and message in capsys.readouterr().err
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(SystemExit):
        main(args + ["--host", "0.0.0.0", "--allow-remote", "--api-key-env", "NO_SUCH_KEY_VAR"])
    assert "NO_SUCH_KEY_VAR, which is not set" in capsys.readouterr().err


# ----------------------------------------------------------------------------------- connections
def test_three_hundred_silent_sockets_hold_no_threads(target: Target) -> None:
    """With socketserver's thread per connection, 300 half-open sockets held 300 threads."""
    before = threading.active_count()
    sockets = [socket.create_connection(target.address, timeout=5) for _ in range(300)]
    try:
        time.sleep(0.3)
        assert threading.active_count() - before <= 2
        start = time.monotonic()
        assert ok(target) == 200 and time.monotonic() - start < 2
    finally:
        for s in sockets:
            s.close()


def test_slow_clients_are_capped_answered_503_and_cut_off(makers) -> None:
    limits = ServerLimits(max_handler_threads=4, read_timeout_s=1.0, idle_timeout_s=1.5)
    running = makers["search"](limits=limits)
    before = threading.active_count()
    try:
        slow = [socket.create_connection(running.address, timeout=5) for _ in range(20)]
        for s in slow:
            s.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        time.sleep(0.3)
        assert running.httpd.active_handlers == 4 and threading.active_count() - before <= 4 + 1
        status, headers, body, seconds = exchange(running.address, request_bytes(*running.ok_request))
        assert status == 503 and headers["retry-after"] == "1" and b"max_handler_threads" in body and seconds < 1
        silent = socket.create_connection(running.address, timeout=5)
        time.sleep(2.0)  # the slow requests pass read_timeout_s; the silent socket passes idle_timeout_s
        assert running.httpd.active_handlers == 0
        assert ok(running) == 200
        assert silent.recv(10) == b""  # closed by the server
        for s in slow + [silent]:
            s.close()
    finally:
        running.close()


def test_keep_alive_connections_are_served_in_turn_and_parked_between(target: Target) -> None:
    method, path, body = target.ok_request
    with socket.create_connection(target.address, timeout=5) as sock:
        for _ in range(5):
            sock.sendall(request_bytes(method, path, body))
            assert read_reply(sock, time.monotonic(), 5)[0] == 200
            time.sleep(0.05)  # quiet: the connection goes back to the lobby and comes out again
        sock.sendall(request_bytes(method, path, body) * 3)  # pipelined
        assert pipelined_statuses(sock, 3) == [200, 200, 200]
    deadline = time.monotonic() + 2
    while target.httpd.active_handlers and time.monotonic() < deadline:  # the last thread is finishing
        time.sleep(0.01)
    assert target.httpd.active_handlers == 0 and target.httpd.request_queue_size >= 128


@pytest.mark.parametrize("name,rounds", [("shop", 20), ("search", 20), ("scripted_policy", 20), ("policy", 4)])
def test_fifty_concurrent_clients_without_a_reset_or_a_retry(makers, name: str, rounds: int) -> None:
    """socketserver's listen backlog of 5 drops connections when 50 clients connect at once: resets, or SYN
    retries that cost a second and more (measured on the old servers: 828 of 1,000 requests took > 1 s).

    The tiny model's server answers the 50 in turn (one forward pass each), so under CI load its last reply
    of a round can legitimately arrive after a second: for it only resets and the connect time are checked;
    the scripted policy puts the same HTTP layer under the full latency check."""
    running = makers[name]()
    statuses: list[int | None] = []
    latencies: list[float] = []
    connects: list[float] = []
    errors: list[str] = []
    barrier = threading.Barrier(50)

    def client() -> None:
        method, path, body = running.ok_request
        for _ in range(rounds):
            barrier.wait(timeout=60)  # all 50 connect at the same instant
            try:
                start = time.monotonic()
                with socket.create_connection(running.address, timeout=30) as sock:
                    connects.append(time.monotonic() - start)
                    sock.sendall(request_bytes(method, path, body))
                    status, _, _, seconds = read_reply(sock, start, 30)
                statuses.append(status)
                latencies.append(seconds)
            except OSError as e:  # a reset or refused connection: counted as a failure below
                errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=client) for _ in range(50)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        running.close()
    assert not errors, errors[:3]
    assert statuses.count(200) == 50 * rounds, {s: statuses.count(s) for s in set(statuses)}
    assert max(connects) < 1.0, sorted(connects)[-5:]  # a dropped SYN is retried after 1 s
    if name != "policy":  # a dropped handshake ACK shows in the reply time instead
        assert max(latencies) < 1.0, sorted(latencies)[-5:]


# ----------------------------------------------------------------------------------- client mistakes
DEEP = b"[" * 100_000 + b"]" * 100_000
HUGE_INT = b'{"queries": ["x"], "topk": ' + b"9" * 5000 + b"}"
SEARCH = [(b"not json", 400), (b'{"queries": "x"}', 400), (b'{"queries": [1]}', 400), (b'{"topk": 3}', 400),
          (b'{"queries": ["x"], "topk": 0}', 400), (b'{"queries": ["x"], "topk": true}', 400),
          (b'{"queries": ["x"], "topk": 101}', 400), (b"\xff\xfe", 400), (DEEP, 400), (HUGE_INT, 400),
          (json.dumps({"queries": ["x"] * 4000, "topk": 100}).encode(), 413),
          (json.dumps({"queries": ["x"] * 5000, "topk": 1}).encode(), 413), (b"[]", 400)]
POLICY = [{"messages": []}, {"messages": [{"role": "robot", "content": "x"}]}, {"messages": "hi"},
          {"messages": [{"role": "user", "content": 5}]}, {"messages": [{"role": "user", "content": [{"text": 5}]}]},
          {"seed": "abc"}, {"seed": 1 << 70}, {"max_tokens": 10 ** 12}, {"max_tokens": -3}, {"max_tokens": "7"},
          {"temperature": "hot"}, {"temperature": -1}, {"top_p": 0}, {"stop": 5}, {"stop": ["a"] * 5}, {"n": 2},
          {"stream": True}, {"messages": [{"role": "user", "content": "hello " * 3000}]},
          {"messages": [{"role": "user", "content": "x"}] * 5000}]


def test_malformed_requests_are_4xx_with_a_message(target: Target) -> None:
    """The server's own reply to each client mistake: a 4xx that says what was expected, never a 500."""
    route = target.ok_request[1]
    cases = [("GET", "/no/such/route", b"", 404), ("PUT", route, b"", 405), ("DELETE", route, b"", 405),
             ("FROB", route, b"", 405), ("GET", "/" + "a" * 70_000, b"", 414)]
    if target.name == "search":
        cases += [("POST", "/retrieve", body, status) for body, status in SEARCH] + [("GET", "/retrieve", b"", 405)]
    if target.name == "policy":
        cases += [("POST", "/v1/chat/completions", json.dumps({**CHAT, **change}).encode(), 400) for change in POLICY]
        cases += [("POST", "/v1/chat/completions", b'{"model": "gpt-x", "messages": []}', 404),
                  ("POST", "/v1/chat/completions", b"NaN", 400), ("POST", "/v1/chat/completions", DEEP, 400),
                  ("POST", "/v1/chat/completions", json.dumps({**CHAT, "temperature": float("nan")}).encode(), 400),
                  ("GET", "/v1/chat/completions", b"", 405)]
    if target.name == "shop":
        cases += [("POST", "/", b"x" * 70_000, 413), ("GET", "/start?task=zz", b"", 400), ("GET", "/s/00/", b"", 404)]
    for method, path, body, expected in cases:
        status, _, reply, _ = exchange(target.address, request_bytes(method, path, body))
        assert status == expected, (method, path[:60], body[:60], status, reply[:200])
        assert len(reply) > 20, reply  # a message, not an empty 4xx
    assert ok(target) == 200


def test_the_context_limit_and_fan_out_limits_name_themselves(makers) -> None:
    policy = makers["policy"]()
    try:
        long = json.dumps({**CHAT, "messages": [{"role": "user", "content": "hello " * 3000}]}).encode()
        body = exchange(policy.address, request_bytes("POST", "/v1/chat/completions", long))[2]
        assert json.loads(body)["error"]["code"] == "context_length_exceeded" and b"2048" in body
    finally:
        policy.close()
    search = makers["search"](max_response_bytes=2_000)
    try:
        fan_out = json.dumps({"queries": ["x"] * 4000, "topk": 100}).encode()
        body = json.loads(exchange(search.address, request_bytes("POST", "/retrieve", fan_out))[2])
        assert "400,000 results" in body["error"] and "20,000" in body["error"] and body["code"] == "too_many_results"
        big = json.dumps({"queries": ["guild"] * 10, "topk": 10}).encode()
        status, _, reply, _ = exchange(search.address, request_bytes("POST", "/retrieve", big))
        assert status == 413 and json.loads(reply)["code"] == "response_too_large"
    finally:
        search.close()


def test_only_our_own_failures_are_500(makers) -> None:
    class Broken:
        def act(self, batch, *, sampling):
            raise RuntimeError("the accelerator fell over")

    server = PolicyServer(Broken(), model_name="tiny")
    server.start()
    try:
        status, _, body, _ = exchange(server.server_address[:2],
                                      request_bytes("POST", "/v1/chat/completions", json.dumps(CHAT).encode()))
        assert status == 500 and b"the policy failed: RuntimeError: the accelerator fell over" in body
    finally:
        server.close()


def test_a_reply_with_a_lone_surrogate_is_answered_not_a_500() -> None:
    """A policy's reply can hold a lone surrogate (decoded from an endpoint's JSON); it has no UTF-8 form. The
    server answered with an exception (the client saw an infrastructure failure); now the body is ASCII JSON
    whose escapes decode back to the same reply, and ordinary non-ASCII text stays UTF-8."""
    import http.client

    from agentgym_envs.core.httpd.handler import json_bytes

    assert json_bytes({"t": "é"}) == '{"t": "é"}'.encode()
    reply = "go \ud800north"
    server = PolicyServer(ScriptedReplyPolicy([reply]), model_name="tiny")
    server.start()
    try:
        conn = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
        conn.request("POST", "/v1/chat/completions", json.dumps(CHAT), {"Content-Type": "application/json"})
        response = conn.getresponse()
        body = response.read()
        conn.close()
    finally:
        server.shutdown()
        server.server_close()
    assert response.status == 200, body
    assert json.loads(body)["choices"][0]["message"]["content"] == reply
