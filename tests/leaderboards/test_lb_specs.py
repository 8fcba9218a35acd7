"""Policy SPECs: every form parses; a malformed one lists the forms and touches no store."""

from __future__ import annotations

import hashlib

import pytest
from lb_helpers import agentgym

from leaderboards.errors import PolicyLoadError, PolicySpecError
from leaderboards.policies import FORMS, PolicySpec, parse_spec


@pytest.mark.parametrize("text, expected", [
    ("random", PolicySpec("random")),
    ("expert", PolicySpec("expert")),
    ("hf:tiny", PolicySpec("hf", "tiny")),
    ("hf:/models/qwen", PolicySpec("hf", "/models/qwen")),
    ("vllm:Qwen/Qwen2.5-0.5B-Instruct", PolicySpec("vllm", "Qwen/Qwen2.5-0.5B-Instruct")),
    ("openai:http://127.0.0.1:8000/v1#qwen", PolicySpec("openai", "http://127.0.0.1:8000/v1", "qwen")),
    ("openai:https://api.example.com/v1/#gpt-x", PolicySpec("openai", "https://api.example.com/v1", "gpt-x")),
    ("checkpoint:runs/quickstart", PolicySpec("checkpoint", "runs/quickstart")),
])
def test_every_form_parses(text, expected):
    assert parse_spec(text) == expected
    assert parse_spec(expected.text) == expected


@pytest.mark.parametrize("text, match", [
    ("gpt-4", "unknown policy spec 'gpt-4'"),
    ("", "empty policy spec"),
    ("hf:", "names no target"),
    ("openai:http://127.0.0.1:8000/v1", "needs both a base URL and a model"),
    ("openai:127.0.0.1:8000/v1#m", "must start with http:// or https://"),
    ("random:3", "unknown policy spec"),
])
def test_malformed_specs_list_every_form(text, match):
    with pytest.raises(PolicySpecError, match=match) as caught:
        parse_spec(text)
    for form in ("random", "expert", "hf:<path-or-dir>", "vllm:<dir>", "openai:<base_url>#<model>", "checkpoint:<dir>"):
        assert form in str(caught.value)


def test_cli_malformed_spec_is_a_clear_error_and_keeps_the_store(tmp_path):
    store = tmp_path / "results.sqlite"
    assert agentgym("bench", "--suite", "smoke", "--policy", "random", "--store", str(store), "--quiet").returncode == 0
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    result = agentgym("bench", "--suite", "smoke", "--policy", "openai:localhost:8000#m", "--store", str(store))
    assert result.returncode == 2
    assert "error: policy spec" in result.stderr and "openai:<base_url>#<model>" in result.stderr
    assert "Traceback" not in result.stderr
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before
    fresh = tmp_path / "never.sqlite"
    assert agentgym("bench", "--suite", "smoke", "--policy", "nonsense", "--store", str(fresh)).returncode == 2
    assert not fresh.exists()


def test_missing_model_directories_fail_before_any_episode(tmp_path):
    with pytest.raises(PolicyLoadError, match="expected a local Hugging Face model directory"):
        parse_spec(f"hf:{tmp_path / 'nope'}").build()
    with pytest.raises(PolicyLoadError, match="no checkpoint there"):
        parse_spec(f"checkpoint:{tmp_path}").build()


def test_forms_are_in_the_cli_help():
    result = agentgym("bench", "--help")
    assert result.returncode == 0 and FORMS.splitlines()[1].strip() in result.stdout
