"""The OpenAI-compatible path against real local servers (trainer/serve/policy_server.py): a real model and failure modes."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading

import pytest
from lb_helpers import REPO, agentgym, count, episode_rows, write_suite

from leaderboards.errors import RunAborted
from leaderboards.runner import BenchOptions, run_bench
from trainer.models.backends.openai_http import EndpointError, OpenAIHTTPPolicy
from agentgym_envs.policies import SamplingConfig
from trainer.serve.policy_server import PolicyServer, ScriptedReplyPolicy

QUIET = dict(progress=False)
SHORT = {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 6}


@pytest.fixture(scope="module")
def tiny_server():
    """`python -m trainer.serve --tiny` in a subprocess: the trainer's HF backend and tiny model over HTTP."""
    process = subprocess.Popen([sys.executable, "-m", "trainer.serve", "--tiny", "--port", "0"], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    timer = threading.Timer(120, process.kill)
    timer.start()
    line = process.stdout.readline()
    timer.cancel()
    assert line.startswith("serving tiny at http://127.0.0.1:"), f"the server did not start: {line!r}"
    yield line.split()[-1]
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def scripted_server():
    """A PolicyServer in a thread; tests swap its policy."""
    server = PolicyServer(ScriptedReplyPolicy(["Thought: east.\nAction: go east"]), model_name="scripted")
    server.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_real_model_served_over_http_is_evaluated_with_token_counts(tmp_path, tiny_server):
    suite = write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 2, "max_steps": 2},
                                             {"env": "agentgym/GuessNumber-v0", "tasks": 1, "max_steps": 2,
                                              "protocol": "tool_calls"}], sampling=SHORT)
    store = tmp_path / "r.sqlite"
    summary = run_bench(suite, f"openai:{tiny_server}#tiny", store, BenchOptions(workers=2, **QUIET))
    assert (summary.played, summary.infra_failures) == (3, 0)
    assert summary.run.policy == f"openai:{tiny_server}#tiny"
    import sqlite3

    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT prompt_tokens, completion_tokens, latency_s, finish_reason FROM steps").fetchall()
    assert rows and all(p > 20 and 0 < c <= 6 and latency > 0 and f in ("stop", "length") for p, c, latency, f in rows)
    assert all(r["prompt_tokens"] > 0 and r["completion_tokens"] > 0 for r in episode_rows(store))


def test_the_client_reports_usage_and_greedy_replies_repeat(tiny_server):
    policy = OpenAIHTTPPolicy(tiny_server, "tiny")
    assert policy.check() == ["tiny"]
    chat = [[{"role": "user", "content": "You are in a hall. Go north."}]] * 2
    a = policy.act(chat, sampling=SamplingConfig(temperature=0.0, max_new_tokens=5))
    b = policy.act(chat[:1], sampling=SamplingConfig(temperature=0.0, max_new_tokens=5))
    assert a[0].text == a[1].text == b[0].text and a[0].completion_tokens == 5 and a[0].prompt_tokens > 5


def test_an_endpoint_failing_mid_run_is_infrastructure_and_keeps_results(tmp_path, scripted_server):
    suite = write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 5, "max_steps": 2}],
                        sampling=SHORT)
    store, spec = tmp_path / "r.sqlite", f"openai:{scripted_server.url}#scripted"

    class DiesAfter(ScriptedReplyPolicy):
        calls = 0

        def act(self, batch, *, sampling):
            DiesAfter.calls += 1
            if DiesAfter.calls > 4:  # two episodes of two turns, then HTTP 500 for ever
                raise RuntimeError("the accelerator fell over")
            return super().act(batch, sampling=sampling)

    scripted_server.policy = DiesAfter(["Action: go east"])
    with pytest.raises(RunAborted, match="2 infrastructure failures in a row.*HTTP 500.*fell over.*2 episodes stored"):
        run_bench(suite, spec, store, BenchOptions(max_attempts=1, max_consecutive_infra=2, **QUIET))
    assert count(store, "episodes") == 2 and count(store, "infra_errors") == 2
    scripted_server.policy = ScriptedReplyPolicy(["Action: go east"])
    assert run_bench(suite, spec, store, BenchOptions(**QUIET)).played == 3


def test_an_unreachable_endpoint_is_a_clear_error_and_loses_nothing(tmp_path, scripted_server):
    suite = write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 2, "max_steps": 2}],
                        sampling=SHORT)
    store, url = tmp_path / "r.sqlite", scripted_server.url
    run_bench(suite, f"openai:{url}#scripted", store, BenchOptions(**QUIET))
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    scripted_server.shutdown()
    scripted_server.server_close()
    result = agentgym("bench", "--suite", str(suite), "--policy", f"openai:{url}#scripted", "--store", str(store))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cannot reach" in result.stderr and "Connection refused" in result.stderr
    assert "store was not changed" in result.stderr
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before


def test_wrong_model_names_and_keys_are_clear_errors(tmp_path, scripted_server, monkeypatch):
    policy = OpenAIHTTPPolicy(scripted_server.url, "gpt-x", retries=0)
    with pytest.raises(EndpointError, match="does not serve a model named 'gpt-x'; it serves scripted"):
        policy.check()
    scripted_server.api_key = "s3cret"
    with pytest.raises(EndpointError, match="refused the API key .HTTP 401"):
        OpenAIHTTPPolicy(scripted_server.url, "scripted", api_key_env="NO_SUCH_VAR_HERE").check()
    monkeypatch.setenv("MY_BENCH_KEY", "s3cret")
    suite = write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 1, "max_steps": 2}])
    summary = run_bench(suite, f"openai:{scripted_server.url}#scripted", tmp_path / "r.sqlite",
                        BenchOptions(api_key_env="MY_BENCH_KEY", **QUIET))
    assert summary.played == 1
    assert "s3cret" not in (tmp_path / "r.sqlite").read_bytes().decode("latin-1")
