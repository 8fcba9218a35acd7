"""The search env through the contract: solvability, baselines, protocol, rewards, turn limit, snapshots."""

from __future__ import annotations

import json
import re

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgym_envs
from agentgym_envs.checker import check_env, same
from agentgym_envs.search.env import SearchEnv
from agentgym_envs.search.expert import no_search_agent

IDS = agentgym_envs.env_ids("search")
INFORMATION = re.compile(r"^<information>Doc 1\(Title: [^)]+\) .+</information>$", re.S)
EPISODES_PER_HOP = 100


def _episode(env, act) -> dict:
    """Run one episode with ``act(env) -> reply``; return the last info."""
    while True:
        _, _, terminated, truncated, info = env.step(act(env))
        if terminated or truncated:
            return info


def test_ids_are_registered() -> None:
    assert IDS == ["agentgym/Search-1Hop-v0", "agentgym/Search-2Hop-v0", "agentgym/Search-3Hop-v0",
                   "agentgym/Search-4Hop-v0", "agentgym/Search-v0"]


@pytest.mark.parametrize("hops", [1, 2, 3, 4])
def test_scripted_solver_answers_at_least_95_percent_of_each_level(hops: int) -> None:
    env = gymnasium.make(f"agentgym/Search-{hops}Hop-v0", split="test")
    wins = recall = 0.0
    for index in range(EPISODES_PER_HOP):
        env.reset(options={"task_index": index})
        info = _episode(env, lambda e: e.unwrapped.expert_action())
        assert info["action_valid"]
        wins += info["won"]
        recall += info["metrics"]["all_gold_retrieved"]
    assert wins / EPISODES_PER_HOP >= 0.95 and recall / EPISODES_PER_HOP >= 0.95


@pytest.mark.parametrize("hops", [1, 2, 3, 4])
def test_no_search_baseline_scores_near_zero(hops: int) -> None:
    env = gymnasium.make(f"agentgym/Search-{hops}Hop-v0", split="test")
    total_em = total_f1 = 0.0
    for index in range(EPISODES_PER_HOP):
        env.reset(options={"task_index": index})
        info = _episode(env, lambda e: no_search_agent(e))
        total_em += info["metrics"]["em"]
        total_f1 += info["metrics"]["f1"]
        assert info["metrics"]["searches"] == 0
    assert total_em / EPISODES_PER_HOP <= 0.02 and total_f1 / EPISODES_PER_HOP <= 0.1


def test_search_observation_is_search_r1_text_and_metrics_count() -> None:
    env = gymnasium.make("agentgym/Search-2Hop-v0")
    obs, info = env.reset(seed=3)
    assert "Question: " in obs and info["instruction"] in obs and "<search>" in info["system_prompt"]
    query = env.unwrapped.qa.plan[0][0]
    obs, reward, terminated, truncated, info = env.step(f"<think>first hop</think>\n<search>{query}</search>")
    assert INFORMATION.match(obs) and obs.count("Doc ") == 3 and reward == 0 and not (terminated or truncated)
    assert info["metrics"]["searches"] == 1 and info["metrics"]["gold_retrieved"] == pytest.approx(0.5)


def test_topk_is_configurable() -> None:
    env = gymnasium.make("agentgym/Search-v0", topk=5)
    env.reset(seed=0)
    obs = env.step("<search>guild founded</search>")[0]
    assert obs.count("(Title: ") == 5


@pytest.mark.parametrize("reply, expected", [
    ("Varlonia", "no action found"),
    ("<search>unclosed", "never closed"),
    ("<search>   </search>", "empty"),
    ("<think>hmm, maybe <search>x</search>", "ended inside <think>"),
    ('lookup(query="x")', "no action found"),
    ('search(q="x")', "Invalid call to search"),
])
def test_bad_replies_explain_the_format(reply: str, expected: str) -> None:
    env = gymnasium.make("agentgym/Search-v0")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(reply)
    assert info["action_valid"] is False and expected in info["parse_error"] and reward == 0.0
    assert not terminated and not truncated


def test_first_complete_tag_wins_and_think_content_is_not_an_action() -> None:
    env = gymnasium.make("agentgym/Search-1Hop-v0")
    env.reset(options={"task_index": 0})
    answer = env.unwrapped.qa.answers[0]
    reply = f"<think><answer>wrong</answer></think><answer>{answer}</answer><answer>x</answer>"
    obs, reward, terminated, _, info = env.step(reply)
    assert terminated and info["won"] and reward == 1.0


def test_tool_calls_reach_the_same_episode_through_the_protocol() -> None:
    env = agentgym_envs.make("agentgym/Search-2Hop-v0", protocol="tool_calls")
    _, info = env.reset(options={"task_index": 5})
    assert {t["function"]["name"] for t in info["tools"]} == {"search", "answer"}
    qa = env.unwrapped.qa
    for query, _ in qa.plan:
        call = {"name": "search", "arguments": {"query": query}}
        obs, _, _, _, info = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
        assert info["action_valid"] and obs.startswith("<information>")
    obs, reward, terminated, _, info = env.step(json.dumps({"name": "answer", "arguments": {"text": qa.answers[-1]}}))
    assert terminated and info["won"] and reward == 1.0 and info["metrics"]["all_gold_retrieved"] == 1.0


def test_native_call_syntax_works_without_a_protocol() -> None:
    env = gymnasium.make("agentgym/Search-1Hop-v0")
    env.reset(options={"task_index": 1})
    query = env.unwrapped.qa.plan[0][0]
    assert env.step(f"search(query={query!r})")[4]["action_valid"]
    assert env.step(f'answer(text="{env.unwrapped.qa.answers[0]}")')[4]["won"]


def test_turn_limit_truncates_even_on_an_invalid_reply() -> None:
    env = gymnasium.make("agentgym/Search-v0", max_turns=3)
    env.reset(seed=1)
    assert not env.step("<search>a</search>")[3]
    assert not env.step("nonsense")[3]
    obs, reward, terminated, truncated, info = env.step("more nonsense")
    assert truncated and not terminated and info["action_valid"] is False and "Turn limit" in obs


@pytest.mark.parametrize("mode, think, right, expected", [
    ("em", False, True, 1.0), ("em", True, False, 0.0),
    ("em_format", True, True, 1.0), ("em_format", False, True, 0.8),
    ("em_format", True, False, 0.2), ("em_format", False, False, 0.0),
])
def test_reward_modes(mode: str, think: bool, right: bool, expected: float) -> None:
    env = gymnasium.make("agentgym/Search-1Hop-v0", reward=mode)
    env.reset(options={"task_index": 2})
    text = env.unwrapped.qa.answers[0] if right else "Nobody"
    reply = ("<think>sure</think>" if think else "") + f"<answer>{text}</answer>"
    assert env.step(reply)[1] == pytest.approx(expected)


def test_f1_reward_gives_partial_credit() -> None:
    env = gymnasium.make("agentgym/Search-v0", reward="f1")
    for index in range(200):
        env.reset(options={"task_index": index})
        answer = env.unwrapped.qa.answers[0]
        if len(answer.split()) == 2:
            _, reward, _, _, info = env.step(f"<answer>{answer.split()[1]}</answer>")
            assert reward == pytest.approx(2 / 3) and info["score"] == reward and not info["won"]
            return
    pytest.fail("no two-word answer found")


def test_snapshot_branches_replay_identically() -> None:
    env = gymnasium.make("agentgym/Search-3Hop-v0").unwrapped
    env.reset(seed=7)
    env.step(env.expert_action())
    snapshot = env.get_state()
    first = [env.step(env.expert_action()) for _ in range(3)]
    env.set_state(snapshot)
    assert same(first, [env.step(env.expert_action()) for _ in range(3)])
    assert len(snapshot) < 5_000  # the corpus and the index stay out of snapshots


def test_state_key_depends_on_what_was_shown_not_on_wording() -> None:
    a, b = (gymnasium.make("agentgym/Search-1Hop-v0") for _ in range(2))
    a.reset(options={"task_index": 4})
    b.reset(options={"task_index": 4})
    query = a.unwrapped.qa.plan[0][0]
    key_a = a.step(f"<search>{query}</search>")[4]["state_key"]
    key_b = b.step(f"<think>let me look</think><search>{query}</search>")[4]["state_key"]
    assert key_a == key_b


@pytest.mark.parametrize("kwargs, message", [
    ({"hops": 5}, "hops must be"), ({"reward": "bleu"}, "reward must be"), ({"topk": 0}, "topk must be"),
    ({"split": "dev"}, "split must be one of"), ({"retriever": "tfidf"}, "retriever must be"),
    ({"qa_path": "x.jsonl"}, "qa_path needs corpus_path"), ({"world_size": "huge"}, "world_size must be"),
])
def test_bad_config_says_what_to_do(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SearchEnv(**kwargs)


@settings(max_examples=150)
@given(st.lists(st.one_of(
    st.text(max_size=200),
    st.builds(lambda v, s: f"<{v}>{s}</{v}>", st.sampled_from(["search", "answer", "SEARCH", "think"]),
              st.text(max_size=40)),
    st.builds(lambda s: f'search(query={s!r})', st.text(max_size=30)),
    st.builds(lambda s: json.dumps({"name": "answer", "arguments": {"text": s}}), st.text(max_size=30)),
), min_size=1, max_size=8))
def test_any_replies_never_raise_and_stay_in_bounds(replies: list[str]) -> None:
    env = gymnasium.make("agentgym/Search-v0")
    env.reset(seed=0)
    for reply in replies:
        obs, reward, terminated, truncated, info = env.step(reply)
        assert isinstance(obs, str) and 0.0 <= reward <= 1.0 and info["infra_error"] is None
        if terminated or truncated:
            env.reset(seed=0)


@pytest.mark.parametrize("env_id", ["agentgym/Search-v0", "agentgym/Search-4Hop-v0"])
def test_check_env_passes(env_id: str) -> None:
    report = check_env(env_id, seed=5)
    assert report.passed, str(report)
