"""The shop's web server: loopback only, escaping everything, hostile and huge input, many sessions at once."""

from __future__ import annotations

import http.client
import re
import threading
from html.parser import HTMLParser
from urllib.parse import quote, urlsplit

import pytest

from agentgym_envs.fuzz import ONE_MB, hostile_actions
from agentgym_envs.web.html_view import location_url
from agentgym_envs.web.server import ShopServer, check_bind_address, shared_server
from agentgym_envs.web.shop import DONE, ITEM, Location

ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "main", "div", "a", "form", "input", "button",
                "label", "select", "option"}
ALLOWED_ATTRS = {"lang", "charset", "class", "id", "href", "method", "action", "type", "name", "placeholder",
                 "maxlength", "aria-label", "autocomplete", "role", "aria-checked", "value", "min", "data-id",
                 "data-label", "data-kind", "data-reward"}
HOSTILE = [a for a in hostile_actions() if isinstance(a, str) and len(a) < 20_000] + [
    "<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "' onmouseover='alert(1)",
    "javascript:alert(1)", "</title><script>x</script>", "&lt;script&gt;", "<!--", "]]>", "\"'<>&",
]


class _Audit(HTMLParser):
    """Collects every tag and attribute name; an injection would show up as one that we never emit."""

    def __init__(self):
        super().__init__()
        self.tags, self.attrs = set(), set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs |= {name for name, _ in attrs}


def assert_safe(html: str) -> None:
    audit = _Audit()
    audit.feed(html)
    assert audit.tags <= ALLOWED_TAGS, audit.tags - ALLOWED_TAGS
    assert audit.attrs <= ALLOWED_ATTRS, audit.attrs - ALLOWED_ATTRS
    assert "<script" not in html.lower()


@pytest.fixture(scope="module")
def server() -> ShopServer:
    return shared_server()


def request(server: ShopServer, method: str, path: str) -> tuple[int, dict, str]:
    host, port = urlsplit(server.url).netloc.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode("utf-8", "replace")
    finally:
        connection.close()


def test_refuses_non_loopback_binds_unless_allowed_with_a_key() -> None:
    with pytest.raises(ValueError, match="refusing to bind the shop server to '0.0.0.0'"):
        check_bind_address("0.0.0.0", allow_remote=False)
    with pytest.raises(ValueError, match="without an API key"):
        check_bind_address("0.0.0.0", allow_remote=True)
    check_bind_address("0.0.0.0", allow_remote=True, api_key="k")  # allowed; not bound: tests stay on loopback
    check_bind_address("localhost", allow_remote=False)
    check_bind_address("127.0.0.1", allow_remote=False)
    with pytest.raises(ValueError, match="not a loopback"):
        ShopServer.for_catalogue(host="0.0.0.0")
    with pytest.raises(ValueError, match="without an API key"):
        ShopServer.for_catalogue(host="0.0.0.0", allow_remote=True)


def test_start_walk_and_buy_over_http(server: ShopServer) -> None:
    status, _, html = request(server, "GET", "/")
    assert status == 200 and 'action="/start"' in html
    assert_safe(html)
    status, headers, _ = request(server, "GET", "/start?split=test&task=0")
    assert status == 303 and re.fullmatch(r"/s/[0-9a-f]{16}/", headers["Location"])
    sid = headers["Location"].split("/")[2]
    goal = server.session(sid).goal
    status, headers, html = request(server, "GET", location_url(sid, Location(ITEM, "x", 1, goal.asin, goal.options)))
    assert status == 200 and "script-src" not in headers["Content-Security-Policy"]
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert_safe(html)
    done = Location(DONE, asin=goal.asin, options=goal.options)
    assert request(server, "GET", location_url(sid, done).replace("/done/", "/buy/"))[0] == 404  # buying is POST
    status, headers, _ = request(server, "POST", location_url(sid, done).replace("/done/", "/buy/"))
    assert status == 303 and headers["Location"] == location_url(sid, done)
    status, _, html = request(server, "GET", headers["Location"])
    assert 'data-reward="1.0"' in html and server.session(sid).purchases == [done]


@pytest.mark.parametrize("path", ["/nope", "/s/0000/", "/s/{sid}/item/B000000000", "/s/{sid}/item/{asin}/Secrets",
                                  "/s/{sid}/item/{asin}/Attributes", "/start?split=dev", "/start?task=99999999"])
def test_unknown_pages_are_errors_not_crashes(server: ShopServer, path: str) -> None:
    sid = server.open_session("test", 0)
    status, _, html = request(server, "GET", path.format(sid=sid, asin=server.session(sid).goal.asin))
    assert status in (400, 404)
    assert_safe(html)


def test_hostile_text_in_every_url_field_is_escaped(server: ShopServer) -> None:
    sid = server.open_session("test", 3)
    asin = server.session(sid).goal.asin
    for text in HOSTILE:
        q = quote(text.encode("utf-8", "surrogatepass"), safe="")  # lone surrogates become invalid UTF-8
        for path in (f"/s/{sid}/results?q={q}&p={q}", f"/s/{sid}/item/{asin}?q={q}&o.size={q}&o.{q}={q}",
                     f"/s/{sid}/item/{asin}/Reviews?q={q}", f"/s/{sid}/done/{asin}?o.color={q}", f"/start?split={q}",
                     f"/s/{sid}/item/{q}", f"/s/{q}/"):
            status, _, html = request(server, "GET", path)
            assert status in (200, 303, 400, 404, 414), (status, path)
            assert_safe(html)
            if "<" in text:
                assert text not in html


def test_one_megabyte_requests_are_refused_and_the_server_lives_on(server: ShopServer) -> None:
    sid = server.open_session("test", 0)
    status, _, _ = request(server, "GET", f"/s/{sid}/results?q=" + "a" * ONE_MB)
    assert status == 414
    status, _, _ = request(server, "GET", f"/s/{sid}/results?q=" + "%3Cscript%3E" * 4_000)  # 48 kB: served
    assert status == 200
    assert request(server, "GET", f"/s/{sid}/")[0] == 200


def test_thirty_two_http_sessions_in_parallel(server: ShopServer) -> None:
    errors: list[str] = []

    def shop(task: int) -> None:
        try:
            sid = server.open_session("eval", task)
            goal = server.session(sid).goal
            for page in (1, 2, 3):
                status, _, html = request(server, "GET", f"/s/{sid}/results?q={quote(goal.name)}&p={page}")
                assert status == 200 and f"Page {page} (Total results:" in html
            done = Location(DONE, asin=goal.asin, options=goal.options)
            status, headers, _ = request(server, "POST", location_url(sid, done).replace("/done/", "/buy/"))
            status, _, html = request(server, "GET", headers["Location"])
            assert 'data-reward="1.0"' in html and goal.instruction not in html  # no other session's goal
        except Exception as e:  # collected and asserted on below, in the main thread
            errors.append(f"task {task}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=shop, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_sessions_are_bounded() -> None:
    with ShopServer.for_catalogue(max_sessions=3) as small:
        sids = [small.open_session("test", i) for i in range(5)]
        assert list(small.sessions) == sids[2:]
