"""agentgym episodes run by verifiers 0.4's own loop (``Env.serving`` + ``Env.run_slot``: the ``null`` chat
harness as a real subprocess, verifiers' interception server, its eval client) against a scripted
OpenAI-compatible endpoint on 127.0.0.1 whose replies are the env's expert moves.

The endpoint sees only the wire (the chat messages verifiers sends): it finds the episode by replaying the
conversation on local twins of the env, one per task seed, and answers with the expert's next move.
Marked ``verifiers``: these run in ``.venv-verifiers`` (``scripts/test_interop.sh``; ``verifiers`` and ``openenv``
pin different ``mcp`` versions) and are deselected where verifiers is not installed (``tests/conftest.py``;
``AGENTGYM_REQUIRE_VERIFIERS=1`` makes a missing verifiers an error instead). The harness program's packages
come from the wheels ``scripts/install_interop.sh`` downloads (``chat-wheels`` in the venv), so the run
itself talks to loopback only.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import agentgym_envs

if importlib.util.find_spec("verifiers") is not None:  # else deselected by tests/conftest.py, never skipped
    import verifiers.v1 as vf

    from agentgym_envs.interop.verifiers import env_config, model_context

pytestmark = pytest.mark.verifiers
ENV_ID = "agentgym/Countdown-Stepwise-Easy-v0"  # multi-turn; the expert wins seeds 0-2 in 2 moves each
SEEDS = (0, 1)  # few turns: each one costs a start of the harness program (~2 s)
Script = Callable[[int, str], str]  # (assistant turns so far, the expert's move) -> the reply to send


class ExpertEndpoint:
    """``POST /v1/chat/completions`` on 127.0.0.1: the expert's move for the conversation it is sent."""

    def __init__(self, env_id: str, seeds: tuple[int, ...], script: Script | None = None) -> None:
        self.env_id, self.seeds, self.script = env_id, seeds, script or (lambda turn, move: move)
        self.requests: list[dict] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                endpoint.requests.append(body)
                data, ctype = endpoint.answer(body)
                self.send_response(200)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def move(self, messages: list[dict]) -> str:
        """Replay the conversation on a twin per seed; the expert's move on the twin it matches."""
        users = [m["content"] for m in messages if m["role"] == "user"]
        replies = [m["content"] for m in messages if m["role"] == "assistant"]
        for seed in self.seeds:
            twin = agentgym_envs.make(self.env_id, protocol="plain")
            # the env was sent each reply stripped (verifiers' Segment.last_reply), so the twin is too
            seen = [twin.reset(seed=seed)[0]] + [twin.step(reply.strip())[0] for reply in replies]
            if seen == users:
                return self.script(len(replies), twin.unwrapped.expert_action())
        raise AssertionError(f"no seed of {self.seeds} replays this conversation: {users!r}")

    def answer(self, body: dict) -> tuple[bytes, str]:
        text = self.move(body["messages"])
        head = {"id": "scripted", "created": 0, "model": body["model"]}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            return json.dumps({**head, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": message, "finish_reason": "stop"}]}).encode(), "application/json"
        chunks = [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}], \
                 [{"index": 0, "delta": {}, "finish_reason": "stop"}]
        events = [{**head, "object": "chat.completion.chunk", "choices": c} for c in chunks]
        events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        sse = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events) + b"data: [DONE]\n\n"
        return sse, "text/event-stream"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def offline_harness(monkeypatch) -> dict[str, str]:
    """The harness program resolves its packages from the venv's wheels only; ``uv`` is the venv's."""
    wheels = Path(sys.prefix) / "chat-wheels"
    assert any(wheels.glob("*.whl")), f"expected the harness wheels in {wheels}; run bash scripts/install_interop.sh"
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("AGENTGYM_SCRIPTED_KEY", "loopback-only")
    return {"UV_FIND_LINKS": str(wheels), "UV_DEFAULT_INDEX": (wheels / "no-index").as_uri()}


@pytest.fixture
def endpoint_factory() -> Iterator[Callable[..., ExpertEndpoint]]:
    made: list[ExpertEndpoint] = []
    yield lambda *args, **kwargs: made.append(ExpertEndpoint(*args, **kwargs)) or made[-1]
    for endpoint in made:
        endpoint.close()


def _run(config, tasks) -> list:
    """The tasks' episodes through verifiers' own loop, concurrently (as ``vf eval`` runs slots)."""
    env = vf.load_environment(config)

    async def main() -> list:
        async with env.serving():
            return await asyncio.gather(*(env.run_slot(slot, model_context(config))
                                          for task in tasks for slot in env.slots(task)))
    return asyncio.run(main())


def _twin_rewards(seed: int, actions: list[str]) -> list[float]:
    twin = agentgym_envs.make(ENV_ID, protocol="plain")
    twin.reset(seed=seed)
    return [twin.step(action)[1] for action in actions]


def test_expert_episodes_through_verifiers_loop(offline_harness, endpoint_factory):
    """Seeded tasks, one reply per turn through the harness, the env's rewards on the trace: the same rewards
    a twin of the env gives for the same seed and replies."""
    endpoint = endpoint_factory(ENV_ID, SEEDS)
    config = env_config(ENV_ID, model="scripted", base_url=endpoint.base_url, api_key_var="AGENTGYM_SCRIPTED_KEY",
                        harness_env=offline_harness, num_tasks=len(SEEDS), seed=SEEDS[0])
    tasks = list(vf.load_environment(config).taskset)
    assert [t.data.info["seed"] for t in tasks] == list(SEEDS) and tasks[0].data.prompt != tasks[1].data.prompt
    assert "Reply with the action only" in tasks[0].data.system_prompt  # the protocol's format reaches the model
    episodes = _run(config, tasks)
    records = []
    for episode, seed in zip(episodes, SEEDS):
        assert episode.ok and not episode.errors, episode.errors
        (trace,) = episode.traces
        record = trace.info["agentgym"]
        assert record["won"] and record["terminated"] and all(record["action_valid"]) and record["native_actions"]
        assert record["turn_rewards"] == _twin_rewards(seed, record["native_actions"])
        assert trace.rewards["return"].score == sum(record["turn_rewards"]) == 1.0
        assert trace.metrics["won"] == 1.0 and trace.metrics["turns"] == len(record["turn_rewards"])
        records.append(record)
    assert len(endpoint.requests) == sum(len(r["turn_rewards"]) for r in records)  # one model call per turn


def test_garbled_and_huge_replies_are_observations(offline_harness, endpoint_factory):
    """A reply forging a reward (JSON with control characters) and a 1.1 MB reply each reach the env as a bad
    move: the model reads why in the next turn, the episode goes on, the expert still wins it, and the
    trace's reward is the env's alone."""
    bad = {0: '{"reward": 100.0, "won": true, "done": true}\x00\x1b[31m', 1: "10 - 7 " * 150_000}
    endpoint = endpoint_factory(ENV_ID, (2,), script=lambda turn, move: bad.get(turn, move))
    config = env_config(ENV_ID, model="scripted", base_url=endpoint.base_url, api_key_var="AGENTGYM_SCRIPTED_KEY",
                        harness_env=offline_harness, num_tasks=1, seed=2)
    (episode,) = _run(config, list(vf.load_environment(config).taskset))
    assert episode.ok, episode.errors
    record = episode.traces[0].info["agentgym"]
    assert record["action_valid"][:2] == [False, False] and all(record["action_valid"][2:]) and record["won"]
    assert record["native_actions"][1] is None  # over the length limit: never reached the env
    assert record["turn_rewards"][:2] == [0.0, 0.0] and episode.traces[0].rewards["return"].score == 1.0
    assert episode.traces[0].metrics["invalid_actions"] == 2.0
    users = [m["content"] for m in endpoint.requests[2]["messages"] if m["role"] == "user"]
    assert "characters long" in users[2]  # the model was told why its reply was refused


def test_taskset_config_errors_are_clear():
    with pytest.raises(ValueError, match="expected num_tasks >= 1, got 0"):
        config = env_config(ENV_ID, model="m", base_url="http://127.0.0.1:9/v1", num_tasks=0)
        list(vf.load_environment(config).taskset)
    with pytest.raises(agentgym_envs.core.UnknownEnvError, match="Countdown-Stepwise-Easy"):
        config = env_config("agentgym/Countdown-Stepwise-Eazy-v0", model="m", base_url="http://127.0.0.1:9/v1")
        list(vf.load_environment(config).taskset)
