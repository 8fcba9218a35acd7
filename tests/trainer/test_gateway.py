"""The trajectory-capturing gateway against the real ``openai`` client on loopback: token-exact capture, segments,
OpenAI-format tool calls, env-driven mode, bad input and concurrency (trainer/serve/gateway/)."""

import copy
import json
import threading
import time
import urllib.error
import urllib.request

import openai
import pytest
import torch

from agentgym_envs.core.httpd import BindRefused
from trainer.models.backends.hf import HFPolicy
from trainer.collect.episodes import PlaySpec
from trainer.serve.gateway import GatewayLimits, GatewayServer, logprob_gap, to_trajectory
from trainer.serve.gateway.assemble import session_record
from trainer.serve.gateway.envs import EnvDriver

MODEL = "agentgym"
TASK = "You are in the kitchen. Your task is to put a clean mug in the coffee machine."
#: Qwen3 with enable_thinking=False: the generation prompt opens an empty think block that past turns never show.
QWEN3_STYLE = ("{% for m in messages %}{{ '<|' + m['role'] + '|>\n' + (m['content'] or '') + '<|end|>\n' }}{% endfor %}"
               "{% if add_generation_prompt %}{{ '<|assistant|>\n<think>\n\n</think>\n\n' }}{% endif %}")


def _strict(body: bytes):
    """JSON as a strict parser reads it: NaN, Infinity and -Infinity are refused."""
    return json.loads(body, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"non-standard JSON {c}")))


def _request(url: str, body: bytes | None = None, method: str = "POST", headers: dict | None = None):
    request = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": "application/json",
                                                                            **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, _strict(r.read())
    except urllib.error.HTTPError as e:
        return e.code, _strict(e.read())


@pytest.fixture()
def serve(tiny_model_and_tokenizer):
    servers = []

    def start(policy=None, **kwargs):
        model, tokenizer = tiny_model_and_tokenizer
        server = GatewayServer(policy or HFPolicy(model, tokenizer), model_name=MODEL, seed=7, **kwargs)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _open(server, body=b"{}"):
    status, answer = _request(f"{server.url}/sessions", body)
    assert status == 200, answer
    return answer, openai.OpenAI(base_url=answer["base_url"], api_key="unused", max_retries=0)


def _chat(client, messages, **kwargs):
    return client.chat.completions.create(model=MODEL, messages=messages, max_tokens=6, **kwargs)


def test_token_in_continues_one_segment_and_the_trainer_reproduces_its_logprobs(serve, tiny_model_and_tokenizer):
    server = serve()
    opened, client = _open(server)
    messages, sampled = [{"role": "user", "content": TASK}], []
    for turn in range(3):
        response = _chat(client, messages, logprobs=True)
        extra = response.model_extra["agentgym"]
        assert extra["segment"] == 0 and extra["new_segment"] == ("first" if turn == 0 else None)
        assert [e.logprob for e in response.choices[0].logprobs.content] == pytest.approx(
            server.sessions[opened["session_id"]].segments[0].logprobs[-len(extra["completion_token_ids"]):])
        sampled.append(extra["completion_token_ids"])
        messages += [response.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Nothing happens."}]
    assert _request(f"{server.url}/sessions/{opened['session_id']}/reward", b'{"reward": 1.0, "won": true}')[0] == 200
    session = server.release(opened["session_id"])
    segment = session.segments[0]
    # the sampled ids sit in the sequence exactly as sampled, each call's prompt = previous ids + new ids
    spans = [[i for i, (m, t) in enumerate(zip(segment.loss_mask, segment.turns)) if m and t == k] for k in range(3)]
    assert [[segment.token_ids[i] for i in span] for span in spans] == sampled
    trajectory = to_trajectory(session)
    assert trajectory.trainable and len(trajectory.segments) == 1 and trajectory.rewards == [0.0, 0.0, 1.0] and trajectory.won
    assert logprob_gap(tiny_model_and_tokenizer[0], [trajectory]) < 1e-4


def test_a_history_rewriting_harness_gets_segments_not_errors(serve, tiny_model_and_tokenizer):
    """Truncation, summarisation, an edited reply, and a Qwen3-style template that re-renders past turns."""
    server = serve()
    opened, client = _open(server)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": TASK}]
    reasons = []
    for turn in range(6):
        response = _chat(client, messages)
        reasons.append(response.model_extra["agentgym"]["new_segment"])
        messages += [response.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": f"obs {turn}"}]
        if turn == 1:
            messages = [messages[0], *messages[-2:]]  # truncation: keep the system prompt and the last turn
        if turn == 3:
            messages = [messages[0], {"role": "user", "content": "Summary: you looked around. " + TASK}]  # summarisation
        if turn == 4:
            messages[-2] = {"role": "assistant", "content": "an edited reply"}  # the harness rewrote the model's reply
    assert reasons == ["first", None, "messages", None, "messages", "messages"]
    _request(f"{server.url}/sessions/{opened['session_id']}/reward", b'{"reward": 0.5}')
    trajectory = to_trajectory(server.release(opened["session_id"]))
    assert trajectory.trainable and len(trajectory.segments) == 4 and trajectory.num_turns == 6
    assert logprob_gap(tiny_model_and_tokenizer[0], [trajectory]) < 1e-4

    model, tokenizer = tiny_model_and_tokenizer
    qwen = copy.deepcopy(tokenizer)
    qwen.chat_template = QWEN3_STYLE
    server = serve(HFPolicy(model, qwen))
    opened, client = _open(server)
    messages, reasons = [{"role": "user", "content": TASK}], []
    for turn in range(3):
        response = _chat(client, messages)
        reasons.append(response.model_extra["agentgym"]["new_segment"])
        messages += [response.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "ok"}]
    assert reasons == ["first", "template", "template"]
    summary = server.sessions[opened["session_id"]].summary()
    assert [s["reason"] for s in summary["segments"]] == reasons and summary["error"] is None


def test_completions_take_text_or_token_ids_and_continue_or_start_segments(serve):
    server = serve()
    opened, client = _open(server, json.dumps({"meta": {"seed": 11}}).encode())
    first = client.completions.create(model=MODEL, prompt="<|user|>\nhi<|end|>\n<|assistant|>\n", max_tokens=4,
                                      logprobs=1)
    assert len(first.choices[0].logprobs.token_logprobs) == len(first.model_extra["agentgym"]["completion_token_ids"])
    session = server.sessions[opened["session_id"]]
    ids = list(session.segments[0].token_ids) + server.policy.encode("<|end|>\n<|user|>\nok<|end|>\n<|assistant|>\n")
    assert client.completions.create(model=MODEL, prompt=ids, max_tokens=4).model_extra["agentgym"]["new_segment"] is None
    text = session.segments[0].text + "\nmore"
    assert client.completions.create(model=MODEL, prompt=text, max_tokens=4).model_extra["agentgym"]["new_segment"] is None
    assert client.completions.create(model=MODEL, prompt="other", max_tokens=4).model_extra["agentgym"]["new_segment"] == "prompt"
    assert [s["reason"] for s in session.summary()["segments"]] == ["first", "prompt"]
    # same seed, same requests: the same replies (sampling seeds derive from the session's seed and call number)
    again, client2 = _open(server, json.dumps({"meta": {"seed": 11}}).encode())
    repeat = client2.completions.create(model=MODEL, prompt="<|user|>\nhi<|end|>\n<|assistant|>\n", max_tokens=4)
    assert repeat.model_extra["agentgym"]["completion_token_ids"] == first.model_extra["agentgym"]["completion_token_ids"]
    for bad in (b'{"meta": {"seed": "x"}}', b'{"meta": [1]}', json.dumps({"meta": {"k": "v" * 5000}}).encode()):
        assert _request(f"{server.url}/sessions", bad)[0] == 400
    with pytest.raises(openai.BadRequestError, match="prompt"):
        client.completions.create(model=MODEL, prompt=[-1, 2], max_tokens=4)


def test_tool_calls_come_back_in_openai_format_parsed_by_our_protocol(serve):
    server = serve()
    _, client = _open(server)
    tools = [{"type": "function", "function": {"name": "act", "description": "act",
                                               "parameters": {"type": "object", "properties": {"action": {"type": "string"}}}}}]
    server.policy = _Scripted(server.policy, 'I will look. <tool_call>{"name": "act", "arguments": {"action": "look"}}</tool_call>')
    response = _chat(client, [{"role": "user", "content": TASK}], tools=tools)
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "I will look."
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "act" and json.loads(call.function.arguments) == {"action": "look"}
    # echoing the call back (with its id) and a tool result continues the same segment
    messages = [{"role": "user", "content": TASK}, choice.message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "You see a mug."}]
    assert _chat(client, messages, tools=tools).model_extra["agentgym"]["new_segment"] is None
    # other tools change what the template renders first: the fingerprint covers them, so a new segment starts
    messages += [{"role": "assistant", "content": "I will look."}, {"role": "user", "content": "go on"}]
    assert _chat(client, messages).model_extra["agentgym"]["new_segment"] == "messages"


class _Scripted:
    """The real tiny policy, forced to write ``text`` (teacher-forced through its own log-probs): tool-call
    replies from a model that has never been taught them."""

    def __init__(self, policy, text):
        self.policy, self.text = policy, text

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def generate(self, prompts, *, sampling):
        from agentgym_envs.policies import Completion

        ids = self.policy.encode(self.text) + [self.policy.end_of_turn_id()]
        with torch.no_grad():
            logits = self.policy.model(input_ids=torch.tensor([prompts[0] + ids])).logits[0, len(prompts[0]) - 1:-1]
        logprobs = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(ids)[:, None])[:, 0].tolist()
        return [Completion(self.text, ids, logprobs, "stop")]


def test_env_driven_mode_steps_the_env_and_a_harness_cannot_set_the_reward(serve):
    spec = PlaySpec("agentgym/Household-PickPlace-v0", max_turns=2, system_prompt="")
    server = serve(envs=EnvDriver(spec))
    status, opened = _request(f"{server.url}/sessions", json.dumps({"meta": {"task_index": 3}}).encode())
    assert status == 200 and opened["messages"][0]["role"] == "user"
    client = openai.OpenAI(base_url=opened["base_url"], api_key="unused", max_retries=0)
    messages, extras = list(opened["messages"]), []
    while not (extras and extras[-1]["done"]):
        response = _chat(client, messages)
        extras.append(response.model_extra["agentgym"])
        messages += [response.choices[0].message.model_dump(exclude_none=True), extras[-1]["next_message"]]
    sid = opened["session_id"]
    status, error = _request(f"{server.url}/sessions/{sid}/reward", b'{"reward": 100.0, "won": true}')
    assert status == 409 and error["error"]["code"] == "env_driven"
    with pytest.raises(openai.ConflictError, match="finished"):
        _chat(client, messages)
    trajectory = to_trajectory(server.release(sid))
    assert trajectory.rewards == [e["reward"] for e in extras] and trajectory.ret < 100 and len(extras) == 2


def test_bad_input_gets_clear_http_errors(serve):
    server = serve(limits=GatewayLimits(max_body_bytes=64 << 10, max_sessions=3, session_ttl_s=60))
    opened, client = _open(server)
    url = f"{server.url}/sessions/{opened['session_id']}/v1/chat/completions"
    with pytest.raises(openai.NotFoundError, match="no session"):
        openai.OpenAI(base_url=f"{server.url}/sessions/nobody/v1", api_key="x", max_retries=0).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="role"):
        _chat(client, [{"role": "wizard", "content": "hi"}])
    with pytest.raises(openai.NotFoundError, match="not served"):
        client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="n=1"):
        _chat(client, [{"role": "user", "content": "hi"}], n=2)
    with pytest.raises(openai.APIStatusError, match="exceeds") as huge:
        _chat(client, [{"role": "user", "content": "x" * (100 << 10)}])
    assert huge.value.status_code == 413
    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=100_000)
    with pytest.raises(openai.BadRequestError, match="context"):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=4096)
    assert _request(url, b"{not json")[0] == 400
    assert _request(url, b"[1, 2]")[0] == 400
    assert _request(url, None, method="GET")[0] == 405
    assert _request(f"{server.url}/sessions/{opened['session_id']}/reward", b'{"reward": NaN}')[0] == 400
    assert _request(f"{server.url}/sessions/{opened['session_id']}/reward", b'{"reward": "1"}')[0] == 400
    assert _request(f"{server.url}/sessions/../etc", b"{}")[0] == 404
    # a second call while one is in flight on the same session: 409, and the session is unharmed
    session = server.sessions[opened["session_id"]]
    session.begin()
    with pytest.raises(openai.ConflictError, match="in flight"):
        _chat(client, [{"role": "user", "content": "hi"}])
    session.end()
    assert session.summary()["calls"] == 0 and _chat(client, [{"role": "user", "content": "hi"}]).choices[0].message
    # the session cap: 429 with Retry-After; a finished-and-deleted session makes room
    _open(server), _open(server)
    status, error = _request(f"{server.url}/sessions", b"{}")
    assert status == 429 and error["error"]["code"] == "too_many_sessions"
    assert _request(f"{server.url}/sessions/{opened['session_id']}", None, method="DELETE")[0] == 200
    assert _request(f"{server.url}/sessions", b"{}")[0] == 200


def test_an_idle_session_expires_to_make_room_and_is_kept_not_trained_on(serve):
    ended = []
    server = serve(limits=GatewayLimits(max_sessions=1, session_ttl_s=0.2), on_finish=ended.append)
    opened, client = _open(server)
    _chat(client, [{"role": "user", "content": "hi"}])
    time.sleep(0.3)
    _open(server)
    assert [s.sid for s in ended] == [opened["session_id"]] and ended[0].outcome.source == "expired"
    trajectory = to_trajectory(ended[0])
    assert not trajectory.trainable and "idle" in trajectory.infra_error


def test_nan_logprobs_never_reach_json_and_the_session_is_not_trained_on(serve, tiny_model_and_tokenizer):
    model, tokenizer = tiny_model_and_tokenizer
    broken = copy.deepcopy(model)
    with torch.no_grad():
        broken.get_output_embeddings().weight.fill_(float("nan"))  # a model whose logits are NaN
    server = serve(HFPolicy(broken, tokenizer))
    opened, _ = _open(server)
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3,
                       "temperature": 0, "logprobs": True}).encode()
    status, answer = _request(f"{opened['base_url']}/chat/completions", body)  # parsed strictly: no NaN, no null
    assert status == 200 and [e["logprob"] for e in answer["choices"][0]["logprobs"]["content"]] == [-9999.0] * 3
    _request(f"{server.url}/sessions/{opened['session_id']}/reward", b'{"reward": 1}')
    session = server.release(opened["session_id"])
    trajectory = to_trajectory(session)
    assert not trajectory.trainable and "non-finite" in trajectory.infra_error
    record = _strict(json.dumps(session_record(session)).encode())  # the exporter's line: kept, and still valid JSON
    assert record["segments"][0]["logprobs"][-3:] == [-9999.0] * 3 and record["error"] == trajectory.infra_error


@pytest.mark.parametrize("max_batch", [1, 4])
def test_concurrent_sessions_each_keep_their_own_calls(serve, tiny_model_and_tokenizer, max_batch):
    server = serve(max_batch=max_batch)
    results, errors = {}, []

    def harness(k):
        try:
            opened, client = _open(server)
            messages = [{"role": "user", "content": f"{TASK} ({k})"}]
            for _ in range(3):
                response = _chat(client, messages)
                messages += [response.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "ok"}]
            _request(f"{server.url}/sessions/{opened['session_id']}/reward", json.dumps({"reward": k}).encode())
            results[k] = opened["session_id"]
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=harness, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 8
    trajectories = []
    for k, sid in results.items():
        trajectories.append(to_trajectory(server.release(sid)))
        t = trajectories[-1]
        assert t.trainable and t.num_turns == 3 and len(t.segments) == 1 and t.ret == k
    assert logprob_gap(tiny_model_and_tokenizer[0], trajectories) < 1e-4  # batched (left-padded) or not
    assert server.batcher.calls == 24 and (server.batcher.batches < 24) == (max_batch > 1)


def test_the_gateway_binds_loopback_unless_told_otherwise(tiny_policy, capsys):
    with pytest.raises(BindRefused, match="loopback"):
        GatewayServer(tiny_policy, host="0.0.0.0")
    from agentgym_envs.cli.main import main

    assert main(["gateway", "--tiny", "--host", "0.0.0.0"]) == 2  # refused before any model is loaded
    assert "not a loopback address" in capsys.readouterr().err  # user errors: one line on stderr


def test_env_driven_sessions_get_the_stall_penalty_of_the_rollouts():
    """rollout.stall_penalty applies in env-driven gateway sessions too: a turn that leaves the maze room
    unchanged (a wall bump, ``look``) costs it, a move does not."""
    from types import SimpleNamespace

    from trainer.collect.episodes import PlaySpec
    from trainer.serve.gateway.envs import EnvDriver

    driver = EnvDriver(PlaySpec("agentgym/Maze-Easy-v0", {"size": 3}, max_turns=10), stall_penalty=0.5)
    session = SimpleNamespace(meta={}, seed=0, turn_valid=[], env=None)
    driver.start(session)
    server = SimpleNamespace(finish=lambda *a, **k: None)
    try:
        driver.step(server, session, "look")
        moves = [d for d in ("north", "south", "east", "west") if f"go {d}" in session.env.env.unwrapped.valid_actions()]
        driver.step(server, session, f"go {moves[0]}")
        assert session.env.rewards[0] == -0.5 and session.env.rewards[1] in (0.0, 1.0)
    finally:
        driver.close(session)


def test_env_driven_sessions_get_the_revisit_penalty_of_the_rollouts():
    """rollout.revisit_penalty applies in env-driven gateway sessions too: a move into a new room costs nothing,
    the move straight back into the start room costs it."""
    from types import SimpleNamespace

    from trainer.collect.episodes import PlaySpec
    from trainer.serve.gateway.envs import EnvDriver

    back = {"north": "south", "south": "north", "east": "west", "west": "east"}
    driver = EnvDriver(PlaySpec("agentgym/Maze-Easy-v0", {"size": 3}, max_turns=10), revisit_penalty=0.5)
    for seed in range(20):  # the first maze whose first move does not reach the goal
        session = SimpleNamespace(meta={}, seed=seed, turn_valid=[], env=None)
        driver.start(session)
        server = SimpleNamespace(finish=lambda *a, **k: None)
        try:
            move = next(d for d in back if f"go {d}" in session.env.env.unwrapped.valid_actions())
            if driver.step(server, session, f"go {move}")["done"]:
                continue
            driver.step(server, session, f"go {back[move]}")
            assert session.env.rewards == [0.0, -0.5]
            return
        finally:
            driver.close(session)
    raise AssertionError("every maze was won in one move")


def test_token_ids_outside_the_vocabulary_are_400s_that_never_reach_the_model(serve):
    """A completions prompt of ids past the embedding's rows (or past int64) is the client's mistake: 400 before any
    sampling, and the session goes on."""
    server = serve()
    opened, client = _open(server)
    vocab = server.policy.model.get_input_embeddings().num_embeddings
    for bad in ([vocab], [1, 2, vocab + 7], [2**63], [2**64 + 1], [3, 2**63 - 1]):
        with pytest.raises(openai.BadRequestError, match=r"vocabulary|\[0, ") as refused:
            client.completions.create(model=MODEL, prompt=bad, max_tokens=2)
        assert refused.value.status_code == 400
    assert server.batcher.calls == 0 and server.sessions[opened["session_id"]].summary()["calls"] == 0
    ok = client.completions.create(model=MODEL, prompt=[1, 2, vocab - 1], max_tokens=2)
    assert ok.model_extra["agentgym"]["call"] == 0 and server.batcher.calls == 1


def test_finished_sessions_nobody_takes_are_released_after_a_grace_period(serve):
    """Without an exporter (``agentgym gateway`` without ``--out``) finished sessions used to be held forever: after
    ``max_sessions`` of them every new session was 429, past any TTL. They are released ``finished_grace_s`` after
    they end, and the 429 says when room frees up."""
    server = serve(limits=GatewayLimits(max_sessions=2, session_ttl_s=60, finished_grace_s=0.3))
    for _ in range(2):
        opened, client = _open(server)
        _chat(client, [{"role": "user", "content": "hi"}])
        assert _request(f"{server.url}/sessions/{opened['session_id']}/reward", b'{"reward": 1}')[0] == 200
    status, error = _request(f"{server.url}/sessions", b"{}")
    assert status == 429 and error["error"]["code"] == "too_many_sessions"
    assert "2 finished" in error["error"]["message"] and "released" in error["error"]["message"]
    # the finished session can still be read within the grace period
    assert _request(f"{server.url}/sessions/{opened['session_id']}", None, method="GET")[0] == 200
    time.sleep(0.4)
    assert _request(f"{server.url}/sessions", b"{}")[0] == 200
    assert _request(f"{server.url}/sessions/{opened['session_id']}", None, method="GET")[0] == 404
    # open sessions that are not idle are never released: the cap holds, and the 429 says so
    _open(server)
    status, error = _request(f"{server.url}/sessions", b"{}")
    assert status == 429 and "2 open" in error["error"]["message"]


def _held_bytes(obj) -> int:
    """The bytes ``obj`` holds: every object reachable from it, each counted once (classes and modules aside)."""
    import gc
    import sys
    import types

    seen, stack, total = set(), [obj], 0
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        stack.extend(gc.get_referents(o))
    return total


def _new_segment_calls(server, client, calls: int, length: int) -> None:
    """``calls`` completions calls of ``length`` fresh token ids each: every call starts a segment of its own."""
    import random

    rng, vocab = random.Random(0), server.policy.model.get_input_embeddings().num_embeddings
    for _ in range(calls):
        client.completions.create(model=MODEL, prompt=[rng.randrange(300, vocab) for _ in range(length)], max_tokens=1)


def test_a_sessions_tokens_are_held_compactly(serve):
    """Each recorded token used to cost ~70 bytes (four Python lists of ints and floats); held as compact arrays
    it costs a fraction of that, whatever the harness sends."""
    server = serve()
    opened, client = _open(server)
    _new_segment_calls(server, client, calls=4, length=1500)
    session = server.sessions[opened["session_id"]]
    assert session.num_tokens >= 6000 and len(session.segments) == 4
    import sys

    text = sum(sys.getsizeof(s.text) for s in session.segments)  # the rendered text the prefix check needs
    per_token = (_held_bytes(session) - text) / session.num_tokens
    assert per_token < 16, f"{per_token:.1f} bytes held per token besides the text ({text / session.num_tokens:.1f})"


def test_a_global_token_budget_refuses_calls_past_it_and_frees_with_the_sessions(serve):
    """``max_held_tokens`` bounds what every session together holds: a call that would pass it is 429 (and says
    why), sampling nothing; once a session is deleted (or finished and released) calls go on."""
    server = serve(limits=GatewayLimits(max_context_tokens=4096, max_held_tokens=2500))
    first, client = _open(server)
    _new_segment_calls(server, client, calls=1, length=1500)
    second, other = _open(server)
    with pytest.raises(openai.RateLimitError, match="max_held_tokens") as refused:
        _new_segment_calls(server, other, calls=1, length=1500)
    assert refused.value.status_code == 429 and server.batcher.calls == 1
    assert server.sessions[second["session_id"]].summary()["calls"] == 0
    assert _request(f"{server.url}/sessions/{first['session_id']}", None, method="DELETE")[0] == 200
    _new_segment_calls(server, other, calls=1, length=1500)
    assert server.sessions[second["session_id"]].summary()["calls"] == 1
