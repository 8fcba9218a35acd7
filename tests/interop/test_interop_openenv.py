"""agentgym envs served by OpenEnv 0.10's own server (``create_app`` under uvicorn on 127.0.0.1, an ephemeral
port) and driven by OpenEnv's own ``EnvClient`` over that loopback socket.

Marked ``openenv``: these run in ``.venv-openenv`` (``scripts/test_interop.sh``; ``openenv`` and ``verifiers``
pin different ``mcp`` versions) and are deselected where openenv is not installed (``tests/conftest.py``;
``AGENTGYM_REQUIRE_OPENENV=1`` makes a missing openenv an error instead).
"""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from collections.abc import Iterator

import pytest

import agentgym_envs

if importlib.util.find_spec("openenv") is not None:  # else deselected by tests/conftest.py, never skipped
    import requests
    import uvicorn
    import websockets.sync.client
    from openenv.core.generic_client import GenericEnvClient

    from agentgym_envs.interop.openenv import AgentgymAction, AgentgymEnvClient, create_app

pytestmark = pytest.mark.openenv
ENV_IDS = ("agentgym/Maze-Easy-v0", "agentgym/GuessNumber-v0")  # a text env and a tool env
SEED = 3


class _Server:
    """uvicorn serving ``app`` on 127.0.0.1 (port 0: the OS picks), in a thread, until ``stop``."""

    def __init__(self, app) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                                    ws_max_size=4 * 2**20))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start within 30 s"
            time.sleep(0.02)
        host, port = self.server.servers[0].sockets[0].getsockname()[:2]
        assert host == "127.0.0.1"
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, _Server]]:
    running = {env_id: _Server(create_app(env_id)) for env_id in ENV_IDS}
    yield running
    for server in running.values():
        server.stop()


def _expert_episode(url: str, env_id: str, seed: int) -> tuple[list[str], list[float], bool]:
    """An episode over OpenEnv's client whose replies are the expert's moves on a local twin of the served env."""
    twin = agentgym_envs.make(env_id, protocol="plain")
    expected, _ = twin.reset(seed=seed)
    texts, rewards = [], []
    with AgentgymEnvClient(base_url=url).sync() as client:
        result = client.reset(seed=seed)
        assert result.observation.text == expected and not result.done
        texts.append(result.observation.text)
        while not result.done:
            action = twin.unwrapped.expert_action()
            expected, reward, terminated, truncated, _ = twin.step(action)
            result = client.step(AgentgymAction(text=action))
            assert result.observation.text == expected  # the served env is the local one, step for step
            assert (result.reward, result.done) == (reward, terminated or truncated)
            texts.append(result.observation.text)
            rewards.append(result.reward)
        state = client.state()
        assert state.step_count == len(rewards) and state.done and state.env_id == env_id
        assert state.total_reward == pytest.approx(sum(rewards))
        return texts, rewards, result.observation.won


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_expert_wins_over_the_openenv_client_and_replays_exactly(servers, env_id):
    url = servers[env_id].url
    texts, rewards, won = _expert_episode(url, env_id, SEED)
    assert won and len(rewards) >= 1 and sum(rewards) > 0
    assert _expert_episode(url, env_id, SEED) == (texts, rewards, won)  # same seed + actions => same everything
    assert _expert_episode(url, env_id, SEED + 1)[0][0] != texts[0] or env_id.endswith("GuessNumber-v0")


def test_sessions_are_isolated(servers):
    """Two WebSocket sessions on one server each get their own env: stepping one leaves the other as it was."""
    url = servers["agentgym/Maze-Easy-v0"].url
    with AgentgymEnvClient(base_url=url).sync() as one, AgentgymEnvClient(base_url=url).sync() as two:
        first = one.reset(seed=SEED).observation.text
        assert two.reset(seed=SEED).observation.text == first
        one.step(AgentgymAction(text="go north"))
        assert one.state().step_count == 1 and two.state().step_count == 0


def test_bad_replies_are_observations_not_errors(servers):
    """A malformed reply, a 2 MB reply and a step after the end each come back as an observation saying why."""
    url = servers["agentgym/Maze-Easy-v0"].url
    with AgentgymEnvClient(base_url=url).sync() as client:
        client.reset(seed=SEED)
        garbled = client.step(AgentgymAction(text="\x00{{not a move}}\ud7ff" * 50)).observation
        assert not garbled.action_valid and not garbled.done and garbled.native_action is not None
        huge = client.step(AgentgymAction(text="go north " * 250_000)).observation  # 2.25 MB
        assert not huge.action_valid and "characters long" in huge.text and huge.native_action is None
        assert client.state().step_count == 2
    with AgentgymEnvClient(base_url=url).sync() as fresh:
        before = fresh.step(AgentgymAction(text="go north")).observation  # no reset in this session yet
        assert before.done and not before.action_valid and "reset()" in before.text


def test_malformed_action_json_is_refused_and_the_server_lives_on(servers):
    """Not-JSON and wrongly typed actions get OpenEnv's own errors (WebSocket error message, HTTP 422)."""
    url = servers["agentgym/Maze-Easy-v0"].url
    with websockets.sync.client.connect(url.replace("http", "ws") + "/ws") as ws:
        ws.send("{this is not json")
        assert json.loads(ws.recv())["type"] == "error"
        ws.send(json.dumps({"type": "step", "data": {"text": ["a", "list"]}}))
        assert json.loads(ws.recv())["type"] == "error"
        ws.send(json.dumps({"type": "reset", "data": {"seed": SEED}}))
        assert json.loads(ws.recv())["type"] == "observation"  # the same session still works
    for body in ({"action": {"text": 7}}, {"action": {}}, {"nothing": True},
                 {"action": {"text": "go north", "reward": 99.0, "done": True}}):  # an action cannot carry a reward
        assert requests.post(url + "/step", json=body, timeout=10).status_code == 422
    assert requests.post(url + "/step", data=b"\xff\xfe{", timeout=10,
                         headers={"content-type": "application/json"}).status_code == 400  # not JSON
    with GenericEnvClient(base_url=url).sync() as raw:
        with pytest.raises(Exception, match="(?i)text|valid"):
            raw.step({"txt": "go north"})
        assert raw.reset(seed=SEED).observation["text"]  # the server answers after the refusal
        forged = raw.step({"text": '{"reward": 99.0, "won": true, "done": true}'})
        assert (forged.reward, forged.done, forged.observation["won"], forged.observation["action_valid"]) == \
            (0.0, False, False, False)
    stateless = requests.post(url + "/step", json={"action": {"text": "go north"}}, timeout=10).json()
    assert stateless["done"] and "reset()" in stateless["observation"]["text"]  # HTTP /step: a fresh env per request
    assert requests.get(url + "/health", timeout=10).status_code == 200


def test_unknown_env_id_fails_when_the_app_is_built():
    with pytest.raises(agentgym_envs.core.UnknownEnvError, match="Maze"):
        create_app("agentgym/Maze-Eazy-v0")


@pytest.fixture(scope="module")
def household():
    server = _Server(create_app("agentgym/Household-PickPlace-v0"))
    yield server
    server.stop()


def test_a_bad_task_index_is_refused_as_the_clients_mistake(household, servers):
    """``/reset`` with a task index that is not an int, or outside the env's task list, is 422 (not 500), over HTTP
    and over the WebSocket (an error message, and the session goes on); a good one still picks its task."""
    for url in (household.url, servers["agentgym/Maze-Easy-v0"].url):
        for bad in ("x", 1.5, True, [1], -1, 2**64):
            answer = requests.post(url + "/reset", json={"seed": SEED, "task_index": bad}, timeout=10)
            assert answer.status_code == 422 and "task_index" in answer.text, (url, bad, answer.status_code)
    answer = requests.post(household.url + "/reset", json={"seed": SEED, "task_index": 10**9}, timeout=10)
    assert answer.status_code == 422 and "[0, " in answer.text
    first = requests.post(household.url + "/reset", json={"seed": SEED, "task_index": 3}, timeout=10)
    again = requests.post(household.url + "/reset", json={"seed": SEED + 1, "task_index": 3}, timeout=10)
    assert first.status_code == again.status_code == 200
    with websockets.sync.client.connect(household.url.replace("http", "ws") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": SEED, "task_index": 10**9}}))
        refused = json.loads(ws.recv())
        assert refused["type"] == "error" and "task_index" in json.dumps(refused)
        ws.send(json.dumps({"type": "reset", "data": {"seed": SEED, "task_index": 3}}))
        assert json.loads(ws.recv())["type"] == "observation"


def test_a_lone_surrogate_in_a_reply_still_delivers_the_steps_observation(servers):
    """A reply holding a lone surrogate (legal in JSON's ``\\ud800`` escape, not in UTF-8) steps the env; the
    observation that echoes it must still reach the client (the surrogate replaced), or the step's observation
    and reward are lost while the env has moved on."""
    url = servers["agentgym/Maze-Easy-v0"].url
    with websockets.sync.client.connect(url.replace("http", "ws") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": SEED}}))
        assert json.loads(ws.recv())["type"] == "observation"
        ws.send('{"type": "step", "data": {"text": "go \\ud800north \\udfff"}}')
        answer = json.loads(ws.recv())
        assert answer["type"] == "observation", answer
        observation = answer["data"]["observation"]
        assert not observation["action_valid"] and "\ufffd" in observation["native_action"]
        assert answer["data"]["reward"] == 0.0
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv())["data"]["step_count"] == 1
    stateless = requests.post(url + "/step", data=b'{"action": {"text": "\\udbff go"}}', timeout=10,
                              headers={"content-type": "application/json"})
    assert stateless.status_code == 200 and "reset()" in stateless.json()["observation"]["text"]
