"""Every registered family trains: ``agentgym train … steps=1`` (the real CLI entry, in-process) on one id per
family, tool envs through ``tool_calls`` in the model's tool format; and the trainer's rollout path
(:class:`~trainer.collect.episodes.PlaySpec` + :class:`~trainer.collect.rollout.RolloutWorker`) starts and steps every
single-agent id of the catalogue.

Multi-agent ids (PettingZoo AEC games) are not gymnasium envs, so the single-agent trainer does not play them;
it trains their single-agent seats (``…-VsScripted-v0``, ``…-VsRandom-v0``), which the catalogue must offer.
"""

from __future__ import annotations

import json
import math

import pytest

from agentgym_envs.cli.main import main
from agentgym_envs.core.hooks import has_expert
from agentgym_envs.policies import Completion, SamplingConfig
from agentgym_envs.protocols import get_protocol
from agentgym_envs.registration import catalogue
from trainer.models.backends.chat_tokens import ChatTokens
from trainer.collect.episodes import PlaySpec
from trainer.collect.rollout import RolloutWorker

#: One id per family (and per kind of env inside the big ``games`` family), with the protocol that
#: ``env.protocol=auto`` must pick for it: tool envs train through tool_calls.
FAMILY_IDS = {
    "agentgym/GuessNumber-v0": "tool_calls",            # examples: the SDK's tool env
    "agentgym/Maze-Easy-v0": "plain",                   # examples: procedural text env with an expert
    "agentgym/Sudoku-4x4-Easy-v0": "plain",             # games: a puzzle
    "agentgym/TicTacToe-VsScripted-v0": "plain",        # games: a two-player game against a scripted seat
    "agentgym/Search-1Hop-v0": "tool_calls",            # search: a tool env with a task list and splits
    "agentgym/WebShop-v0": "plain",                     # web: WebShop text mode
    "agentgym/Terminal-v0": "tool_calls",               # terminal: bash in a sandbox, as a tool
    "agentgym/Tutoring-v1": "tool_calls",               # tutoring: a tool env with a simulated student
    "agentgym/TextWorld-TreasureHunter-v0": "plain",    # textworld: generated games (the textworld package)
    "agentgym/Household-PickPlace-v0": "plain",         # household: ALFWorld-style
    "agentgym/TaskDesign-v0": "plain",                  # design: the designer writes a JSON task config
    "agentgym/Reflect-v0": "plain",                     # skills: the reflector writes the actor's whole prompt
}
#: Per-id overrides: Tutoring's first prompt (its tool list) and TaskDesign's brief are over the default budget.
EXTRA = {"agentgym/Tutoring-v1": ["rollout.max_context_tokens=4096"],
         "agentgym/TaskDesign-v0": ["rollout.max_context_tokens=4096"],  # its brief holds a JSON schema
         "agentgym/Reflect-v0": ["rollout.max_context_tokens=8192"]}  # its brief shows four trajectories
SINGLE_AGENT = [e.id for e in catalogue() if not e.multi_agent]
MULTI_AGENT = [e.id for e in catalogue() if e.multi_agent]
ONE_STEP = ["steps=1", "rollout.tasks_per_step=1", "rollout.group_size=2", "env.max_turns=2", "rollout.max_new_tokens=8",
            "rollout.max_context_tokens=1024", "bc.episodes=0", "eval.num_tasks=1", "eval.every=0", "checkpoint_every=0",
            "env.train_tasks=1",  # task 0 for train and evaluation: TextWorld generates (and caches) one game
            "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01"]  # entropy: a gradient at zero advantage


def train_one_step(overrides: list[str], out_dir) -> dict:
    """``agentgym train - <overrides> steps=1``; the one step's logged record."""
    assert main(["train", "-", *ONE_STEP, *overrides, f"out_dir={out_dir}"]) == 0  # overrides win
    records = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1], records
    return records[0]


def assert_trained(record: dict) -> None:
    assert math.isfinite(record["reward"]) and math.isfinite(record["loss"]), record
    assert record["infra_errors"] == 0 and record["updated"] == 1.0, record
    assert record["logprob_gap_max"] < 1e-4, record  # the scored ids are the sampled ids, tools and all


def test_the_families_here_are_every_family_of_the_catalogue():
    family = {e.id: e.family for e in catalogue()}
    assert {family[i] for i in FAMILY_IDS} == {family[i] for i in SINGLE_AGENT}


@pytest.mark.parametrize("env_id", list(FAMILY_IDS))
def test_agentgym_train_runs_one_step_on_every_family(env_id, tiny_overrides, tmp_path, make_calls):
    record = train_one_step([*tiny_overrides, f"env.env_id={env_id}", *EXTRA.get(env_id, [])], tmp_path)
    assert_trained(record)
    played = {kw["protocol"] for kw in make_calls if kw.get("max_turns") == 2}
    assert played == {FAMILY_IDS[env_id]}, played  # env.protocol=auto picked it


def test_a_tool_env_trains_a_qwen2_model_through_its_tool_call_template(tiny_overrides, tmp_path, make_calls):
    from trainer.models import build_random_model

    model_dir = build_random_model("qwen2", tmp_path / "qwen2")
    record = train_one_step([*tiny_overrides, "policy.kind=hf", f"policy.path={model_dir}",
                             "env.env_id=agentgym/GuessNumber-v0"], tmp_path / "run")
    assert_trained(record)
    assert {kw["protocol"] for kw in make_calls if kw.get("max_turns") == 2} == {"tool_calls"}


def test_every_multi_agent_id_has_a_single_agent_seat_the_trainer_plays():
    assert MULTI_AGENT, "the catalogue lists the PettingZoo games"
    for env_id in MULTI_AGENT:
        base = env_id.removesuffix("-v0")
        assert f"{base}-VsScripted-v0" in SINGLE_AGENT and f"{base}-VsRandom-v0" in SINGLE_AGENT, env_id


class ExpertTokens(ChatTokens):
    """A token policy (the tiny tokenizer and template) whose replies are the expert's native actions of the
    worker's envs rendered in the spec's protocol, so that each step reaches the env through the protocol."""

    def __init__(self, tokenizer, worker: RolloutWorker, spec: PlaySpec):
        self.tokenizer, self.chat_template_kwargs, self.stop_ids = tokenizer, {}, frozenset({tokenizer.eos_token_id})
        self.worker, self.protocol, self.probe = worker, get_protocol(spec.protocol), spec.make()

    def generate(self, prompt_ids, *, sampling):
        actions = self.worker.venv.call("expert_action")[:len(prompt_ids)]  # turn 0: every env, in order
        texts = [self.protocol.render(action, self.probe.unwrapped) for action in actions]
        return [Completion(text, ids := self.encode(text) + [self.tokenizer.eos_token_id], [-0.1] * len(ids))
                for text in texts]


@pytest.mark.parametrize("env_id", SINGLE_AGENT)
def test_the_rollout_path_starts_and_steps_every_single_agent_id(env_id, tiny_model_and_tokenizer):
    spec = PlaySpec(env_id, protocol="auto", max_turns=2, system_prompt="")
    assert has_expert(spec.make())  # every registered id has a scripted expert to step it with
    worker = RolloutWorker(spec, tasks_per_batch=1, group_size=2, max_context_tokens=8192)
    policy = ExpertTokens(tiny_model_and_tokenizer[1], worker, spec)
    try:
        trajectories, stats = worker.collect(policy, [0], sampling=SamplingConfig(max_new_tokens=4), seed=0)
    finally:
        worker.close()
        policy.probe.close()
    assert len(trajectories) == 2 and stats.env_steps >= 2
    for t in trajectories:
        assert t.infra_error is None and t.trainable and t.finish in ("terminated", "truncated"), (t.finish, t.infra_error)
        first_reply = policy.decode(t.token_ids[t.prompt_length:]).split(t.replies[0], 1)[1]
        assert "Reply format:" not in first_reply, first_reply[:300]  # the protocol passed the expert's reply on
    first, second = (t.token_ids[:t.prompt_length] for t in trajectories)
    assert first == second  # both members of the group start from the same state
    if spec.tool_calling:  # a tool env: its schemas are in the prompt the model read, the reply is a call
        prompt = policy.decode(first)
        names = [tool["function"]["name"] for tool in policy.probe.unwrapped.tools]
        assert "Tools:" in prompt and all(f'"name": "{n}"' in prompt for n in names), prompt[:400]
        assert all(r.startswith("<tool_call>") for t in trajectories for r in t.replies)
