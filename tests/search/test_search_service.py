"""The shared /retrieve service: concurrent clients, the env as a client, and failures as infra errors."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request

import gymnasium
import pytest

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.core.errors import InfraError
from agentgym_envs.search.dataset import build_retriever, load_dataset
from agentgym_envs.search.service import RemoteRetriever, RetrievalService


@pytest.fixture(scope="module")
def data():
    return load_dataset(world_seed=0, world_size="small")


@pytest.fixture(scope="module")
def service(data):
    with RetrievalService(build_retriever(data, "bm25"), passages=len(data.corpus)) as running:
        yield running


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_concurrent_clients_get_the_local_results(data, service) -> None:
    assert service.url.startswith("http://127.0.0.1:")
    local = build_retriever(data, "bm25")
    queries = [qa.plan[0][0] for qa in data.qa("test")[:40]]
    results: dict[int, list] = {}

    def client(worker: int) -> None:
        remote = RemoteRetriever(service.url)
        results[worker] = [remote.search(q, 3) for q in queries[worker::2]]

    threads = [threading.Thread(target=client, args=(w,)) for w in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for worker in (0, 1):
        expected = [local.search(q, 3) for q in queries[worker::2]]
        assert [[d.id for d in docs] for docs in results[worker]] == [[d.id for d in docs] for docs in expected]
        assert results[worker][0][0].title == expected[0][0].title and results[worker][0][0].text == expected[0][0].text


def test_batch_requests_and_search_r1_wire_format(service) -> None:
    body = json.dumps({"queries": ["guild founded", "city region"], "topk": 2, "return_scores": True}).encode()
    with urllib.request.urlopen(urllib.request.Request(service.url, data=body), timeout=10) as response:
        payload = json.loads(response.read())
    assert len(payload["result"]) == 2 and all(len(r) == 2 for r in payload["result"])
    item = payload["result"][0][0]
    assert item["document"]["contents"].startswith('"') and isinstance(item["score"], float)


@pytest.mark.parametrize("body", [b"not json", b'{"queries": "x"}', b'{"queries": ["x"], "topk": 0}'])
def test_bad_requests_get_400(service, body: bytes) -> None:
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(urllib.request.Request(service.url, data=body), timeout=10)
    assert caught.value.code == 400 and "error" in json.loads(caught.value.read())


def test_env_uses_the_service(service) -> None:
    env = gymnasium.make("agentgym/Search-3Hop-v0", retriever_url=service.url)
    env.reset(options={"task_index": 0})
    while True:
        _, _, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        if terminated or truncated:
            break
    assert info["won"] and info["infra_error"] is None and info["metrics"]["all_gold_retrieved"] == 1.0


def test_unreachable_service_is_an_infra_error_not_the_agents_fault() -> None:
    url = f"http://127.0.0.1:{_free_port()}/retrieve"
    env = gymnasium.make("agentgym/Search-v0", retriever_url=url)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("<search>anything</search>")
    assert info["infra_error"] and "unreachable" in info["infra_error"]
    assert truncated and not terminated and reward == 0.0 and info["action_valid"] is True
    assert "not your fault" in obs
    with pytest.raises(InfraError, match="unreachable"):
        RemoteRetriever(url, timeout=1).search("x", 3)


def test_a_wrong_endpoint_is_an_infra_error(service) -> None:
    with pytest.raises(InfraError):
        RemoteRetriever(service.url.replace("/retrieve", "/nowhere")).search("x", 3)
