"""Turn samples (``rollout.sample_unit=turn``): every turn is its own training sample, token-exactly.

A turn sample is the template's rendering of the system prompt, the first observation and the last
``turn_window`` turns, followed by exactly the ids sampled on it (loss-masked in). ``auto`` probes the
template once: episodes where the rendering of each turn extends the last, turns where the template
rewrites history (Qwen3: past ``<think>`` dropped, an empty think block injected when thinking is off).
"""

import copy
import logging
import zlib

from dataclasses import replace

import pytest
import torch

from agentgym_envs.chat import omitted_note
from agentgym_envs.policies import Completion, SamplingConfig
from trainer.learn.algorithms import ESTIMATORS, AdvantageSettings, estimate, group_by, token_advantages
from trainer.models.backends.hf import HFPolicy
from trainer.learn.bc import expert_trajectories
from trainer.config import load_config
from trainer.collect.episodes import PlaySpec
from trainer.errors import ConfigError, PrefixExtensionError
from trainer.learn.logprobs import pack, token_logprobs
from trainer import Trainer, fit
from trainer.collect.rollout import RolloutWorker, resolve_sample_unit
from trainer.models.tiny.chat_template import render_chat
from trainer.learn.value import turn_starts

SPEC = PlaySpec("agentgym/Household-PickPlace-v0", max_turns=4, system_prompt="")
SAMPLING = SamplingConfig(max_new_tokens=8, seed=0)

#: The tiny template, rewritten the way Qwen3's is with thinking off: past replies lose their <think> block,
#: and the generation prompt opens with an empty one, so no turn's rendering extends the last.
REWRITING_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'assistant' %}"
    "{{ '<|assistant|>\\n' + m['content'].split('</think>')[-1].lstrip('\\n') + '<|end|>\\n' }}"
    "{% else %}{{ '<|' + m['role'] + '|>\\n' + m['content'] + '<|end|>\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n<think>\\n\\n</think>\\n\\n' }}{% endif %}"
)


class Recording:
    """The policy, recording every chat it rendered, every prompt it continued and what it sampled."""

    def __init__(self, policy):
        self.policy, self.calls, self.chats = policy, [], {}

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def render_chat(self, messages):
        text = self.policy.render_chat(messages)
        self.chats[text] = [dict(m) for m in messages]
        return text

    def generate(self, prompts, *, sampling):
        completions = self.policy.generate(prompts, sampling=sampling)
        self.calls += [(list(p), c) for p, c in zip(prompts, completions)]
        return completions


class Scripted:
    """One id per character (re-tokenising is exact) and a reply picked from the last observation alone, so
    both sample units play the same episodes whatever their prompts look like."""

    ACTIONS = ("look", "inventory", "go to desk 1", "go to shelf 1", "go to drawer 1")

    def render_chat(self, messages):
        return render_chat(messages, add_generation_prompt=True)

    def encode(self, text):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(map(chr, ids))

    def generate(self, prompts, *, sampling):
        out = []
        for prompt in prompts:
            observation = self.decode(prompt).rsplit("<|user|>\n", 1)[1]
            reply = self.ACTIONS[zlib.crc32(observation.encode()) % len(self.ACTIONS)]
            out.append(Completion(reply, self.encode(reply), [-0.5] * len(reply)))
        return out


@pytest.fixture()
def rewriting_policy(tiny_model_and_tokenizer):
    model, tokenizer = tiny_model_and_tokenizer
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.chat_template = REWRITING_TEMPLATE
    return HFPolicy(copy.deepcopy(model), tokenizer)


@pytest.fixture(scope="module")
def family_dirs(tmp_path_factory):
    from trainer.models import FAMILIES, build_random_model

    cache = tmp_path_factory.mktemp("families")
    return {f: build_random_model(f, None, cache_dir=cache) for f in FAMILIES}


def _collect(policy, unit, window=4, tasks=(0, 5), spec=SPEC):
    worker = RolloutWorker(spec, tasks_per_batch=len(tasks), group_size=2, max_context_tokens=4096,
                           sample_unit=unit, turn_window=window)
    try:
        return worker.collect(policy, list(tasks), sampling=SAMPLING, seed=0)[0]
    finally:
        worker.close()


def test_turn_samples_are_the_window_prompt_then_the_sampled_ids(rewriting_policy):
    policy = Recording(rewriting_policy)
    trajectories = _collect(policy, "turn", window=2, spec=replace(SPEC, max_turns=5))
    sampled = {tuple(prompt + c.token_ids): (prompt, c) for prompt, c in policy.calls}
    assert len(sampled) == len(policy.calls) == sum(t.num_turns for t in trajectories)
    for t in trajectories:
        assert [list(turn_starts(s)) for s in t.segments] == [[k] for k in range(t.num_turns)]  # one turn each
        first = policy.chats[rewriting_policy.decode(t.segments[0].token_ids[:t.segments[0].prompt_length])][0]
        for k, s in enumerate(t.segments):
            prompt, completion = sampled[tuple(s.token_ids)]  # exactly a prompt the sampler saw + its reply
            assert s.prompt_length == len(prompt) and s.token_ids[len(prompt):] == completion.token_ids
            assert s.loss_mask == [0] * len(prompt) + [1] * completion.num_tokens
            assert s.sampling_logprobs[len(prompt):] == completion.logprobs
            assert s.token_turns == [-1] * len(prompt) + [k] * completion.num_tokens
            chat = policy.chats[rewriting_policy.decode(prompt)]  # the chat this prompt rendered
            assert [m["content"] for m in chat if m["role"] == "assistant"] == t.replies[max(0, k - 2):k]
            omitted = f"\n\n{omitted_note(k - 2)}" if k > 2 else ""
            assert chat[0] == dict(first, content=first["content"] + omitted)
    assert max(t.num_turns for t in trajectories) == 5, "the episodes were meant to outlast the window"
    lengths = [len(s.token_ids) for t in trajectories for s in t.segments]
    assert max(lengths) < 2 * min(lengths) + 200  # bounded by the window, not growing with the episode


def test_a_full_window_on_a_verbatim_template_gives_the_episode_sample_prefixes():
    episodes = _collect(Scripted(), "episode", tasks=(0, 5, 7))
    turns = _collect(Scripted(), "turn", window=SPEC.max_turns, tasks=(0, 5, 7))
    assert len({r for t in turns for r in t.replies}) > 1
    for e, t in zip(episodes, turns):
        assert (t.replies, t.rewards, t.state_keys) == (e.replies, e.rewards, e.state_keys)
        assert len(t.segments) == e.num_turns
        for k, s in enumerate(t.segments):
            end = max(i for i, turn in enumerate(e.token_turns) if turn == k) + 1
            assert s.token_ids == e.token_ids[:end]  # earlier replies are prompt here: sampled there, context here
            assert s.loss_mask == [int(turn == k) for turn in e.token_turns[:end]]
            assert s.sampling_logprobs == [x * m for x, m in zip(e.sampling_logprobs[:end], s.loss_mask)]


def test_every_estimator_gives_each_turn_the_same_advantage_in_both_modes():
    episodes = _collect(Scripted(), "episode", tasks=(0, 5, 7))
    turns = _collect(Scripted(), "turn", window=1, tasks=(0, 5, 7))  # other prompts, the same episodes
    rng = torch.Generator().manual_seed(0)
    for e, t in zip(episodes, turns):  # the same rewards, states and critic values on both sides
        assert t.replies == e.replies and len(t.segments) == t.num_turns
        assert max(len(s.token_ids) for s in t.segments) < len(e.token_ids)  # one turn of history, not all of them
        e.rewards = t.rewards = torch.randint(0, 3, (e.num_turns,), generator=rng).double().div(2).tolist()
        e.state_keys = t.state_keys = [f"s{k % 2}" for k in range(e.num_turns)]
        e.turn_values = t.turn_values = [0.1 * k for k in range(e.num_turns)]
    for name in ESTIMATORS:
        by_episode = [a for g in estimate(name, group_by(episodes), AdvantageSettings()) for a in g]
        by_turn = [a for g in estimate(name, group_by(turns), AdvantageSettings()) for a in g]
        assert by_turn == by_episode and any(a for adv in by_turn for a in adv), name
        for e, t, adv in zip(episodes, turns, by_turn):  # spread over tokens: each turn's ids get its advantage
            on_episode = [x for x, m in zip(token_advantages(e, adv), e.loss_mask) if m]
            on_turns = [x for s in t.segments for x, m in zip(token_advantages(s, adv), s.loss_mask) if m]
            assert on_turns == on_episode
            assert all(x == 0.0 for s in t.segments for x, m in zip(token_advantages(s, adv), s.loss_mask) if not m)


def test_auto_picks_episodes_for_a_verbatim_template_and_turns_for_a_rewriting_one(tiny_policy, rewriting_policy,
                                                                                  caplog):
    with caplog.at_level(logging.INFO, logger="trainer.collect.rollout"):
        assert resolve_sample_unit(tiny_policy, "auto") == "episode"
        assert resolve_sample_unit(rewriting_policy, "auto", 3) == "turn"
    verdicts = [r for r in caplog.records if "sample_unit=auto" in r.getMessage()]
    assert [r.levelno for r in verdicts] == [logging.INFO, logging.WARNING]
    assert "rewrites earlier turns" in verdicts[1].getMessage() and "last 3 turns" in verdicts[1].getMessage()
    assert resolve_sample_unit(rewriting_policy, "episode") == "episode"  # explicit choices are not probed
    with pytest.raises(ValueError, match="expected a sample unit"):
        resolve_sample_unit(tiny_policy, "step")
    worker = RolloutWorker(SPEC, tasks_per_batch=1, group_size=2, max_context_tokens=4096, sample_unit="auto")
    try:
        trajectories = worker.collect(rewriting_policy, [0], sampling=SAMPLING, seed=0)[0]
    finally:
        worker.close()
    assert worker.sample_unit == "turn" and len(trajectories[0].segments) == trajectories[0].num_turns


@pytest.mark.parametrize("family, kwargs, unit", [
    ("qwen2", {}, "episode"), ("llama3", {}, "episode"), ("gemma", {}, "episode"),
    ("qwen3", {}, "turn"), ("qwen3", {"enable_thinking": False}, "turn")])
def test_auto_on_each_family_template(family_dirs, family, kwargs, unit):
    """Gemma stops on <eos> but closes turns with <end_of_turn>: the probe ends its reply with the template's
    end-of-turn id, so Gemma keeps episode mode; Qwen3 drops past reasoning, so it gets turns."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = family_dirs[family]
    policy = HFPolicy(AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path),
                      chat_template_kwargs=kwargs)
    assert resolve_sample_unit(policy, "auto") == unit


def test_a_rewriting_template_in_episode_mode_raises_and_names_turn_mode(rewriting_policy):
    with pytest.raises(PrefixExtensionError, match="rollout.sample_unit=turn"):
        _collect(rewriting_policy, "episode")


def test_config_keys_are_checked():
    assert load_config(None, []).rollout.sample_unit == "auto"
    with pytest.raises(ConfigError, match="rollout.sample_unit must be"):
        load_config(None, ["rollout.sample_unit=step"])
    with pytest.raises(ConfigError, match="rollout.turn_window must be >= 1"):
        load_config(None, ["rollout.turn_window=0"])


def test_bc_builds_turn_samples_on_a_rewriting_template(rewriting_policy):
    spec = PlaySpec("agentgym/Household-PickPlace-v0", {"split": "train"}, max_turns=12, system_prompt="")
    with pytest.raises(PrefixExtensionError):
        expert_trajectories(rewriting_policy, spec, [0, 1], seed=0)
    data = expert_trajectories(rewriting_policy, spec, [0, 1], seed=0, turn_window=2)
    assert data and all(len(t.segments) == t.num_turns for t in data)
    for t in data:
        for k, s in enumerate(t.segments):
            reply = rewriting_policy.encode(t.replies[k]) + [rewriting_policy.tokenizer.eos_token_id]
            assert s.token_ids[s.prompt_length:] == reply and s.loss_mask[s.prompt_length:] == [1] * len(reply)
            assert rewriting_policy.decode(s.token_ids[:s.prompt_length]).count("<|assistant|>") == min(k, 2) + 1


def test_turn_mode_trains_ppo_token_exactly_with_the_critic_read_per_turn(tiny_overrides, tmp_path):
    config = load_config(None, tiny_overrides + [
        f"out_dir={tmp_path}", "env.max_turns=3", "rollout.tasks_per_step=2", "rollout.group_size=2",
        "rollout.max_new_tokens=8", "rollout.sample_unit=turn", "rollout.turn_window=1",
        "algorithm.estimator=ppo_gae", "algorithm.filter_zero_variance=false"])
    trainer = Trainer(config)
    try:
        trajectories, _ = trainer.collect()
        kept, advantages, _ = trainer.advantages(trajectories)
        metrics = trainer.update(kept, advantages)
    finally:
        trainer.close()
    assert all(len(t.segments) == t.num_turns == len(t.turn_values) for t in kept)
    assert any(t.num_turns > 1 for t in kept)
    assert metrics["updated"] == 1.0 and metrics["logprob_gap_max"] < 1e-4 and "value_loss" in metrics


def test_qwen3_style_model_trains_two_steps_multi_turn_on_household_in_turn_mode(family_dirs, tmp_path, caplog):
    """The issue's Done-when check: a Qwen3-style random model (thinking off: an empty think block in every
    generation prompt, dropped from later renderings) picks turn mode, clones the expert (whose household
    episodes take 4+ turns, hence max_turns 4) and trains 2 steps, sampled ids = scored ids."""
    config = load_config(None, [
        "policy.kind=hf", f"policy.path={family_dirs['qwen3']}", "policy.chat_template_kwargs.enable_thinking=false",
        "env.env_id=agentgym/Household-PickPlace-v0", "env.train_kwargs.split=train", "env.system_prompt=''",
        "env.max_turns=4", "rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=8",
        "rollout.turn_window=1", "algorithm.estimator=gigpo", "algorithm.filter_zero_variance=false",
        "bc.episodes=4", "bc.epochs=1",
        "steps=2", "checkpoint_every=0", "progress=false", f"out_dir={tmp_path / 'run'}"])
    with caplog.at_level(logging.WARNING, logger="trainer.collect.rollout"):
        trainer = Trainer(config)
    try:
        assert trainer.sample_unit == "turn" and "rewrites earlier turns" in caplog.text
        records = fit(trainer, echo=None)
    finally:
        trainer.close()
    bc, *steps = records
    assert bc["phase"] == "bc" and bc["bc_trajectories"] > 0
    assert [r["step"] for r in steps] == [1, 2]
    for r in steps:
        assert r["updated"] == 1.0 and r["turns"] > 1, r
        assert r["logprob_gap_max"] < 1e-4, r


@pytest.mark.parametrize("unit", ["episode", "turn"])
def test_bc_replies_end_with_the_templates_end_of_turn_id(family_dirs, unit):
    """Gemma's EOS is <eos>, but its template closes a reply with <end_of_turn>: BC teaches that one."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = family_dirs["gemma"]
    tokenizer = AutoTokenizer.from_pretrained(path)
    policy = HFPolicy(AutoModelForCausalLM.from_pretrained(path), tokenizer)
    spec = PlaySpec("agentgym/Household-PickPlace-v0", {"split": "train"}, max_turns=8, system_prompt="")
    data = expert_trajectories(policy, spec, [0], seed=0, turn_window=2 if unit == "turn" else None)
    end = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    assert data and end != tokenizer.eos_token_id
    for t in data:
        replies = [[i for i, m in zip(s.token_ids, s.loss_mask) if m] for s in t.segments]
        assert sum(r.count(end) for r in replies) == t.num_turns and tokenizer.eos_token_id not in sum(replies, [])


def test_turn_prompts_over_the_budget_shrink_to_fold_keep_turns_or_end_the_episode():
    spec = replace(SPEC, max_turns=8)

    def run(fold_keep_turns, budget=600 + SAMPLING.max_new_tokens):
        worker = RolloutWorker(spec, tasks_per_batch=3, group_size=2, max_context_tokens=budget, sample_unit="turn",
                               turn_window=3, fold_keep_turns=fold_keep_turns)
        try:
            return worker.collect(Scripted(), [0, 5, 7], sampling=SAMPLING, seed=0)[0]
        finally:
            worker.close()

    free, ended, shrunk = run(0, budget=100_000), run(0), run(1)
    assert any(max(s.prompt_length for s in t.segments) > 600 for t in free)  # the budget binds somewhere
    for f, e, s in zip(free, ended, shrunk):
        over = next((k for k, seg in enumerate(f.segments) if seg.prompt_length > 600), None)
        if over is None:
            assert e.num_turns == s.num_turns == f.num_turns
            continue
        assert (e.finish, e.num_turns) == ("context", over)
        assert len(e.segments) == over and all(any(seg.loss_mask) for seg in e.segments)  # no prompt-only row
        assert s.num_turns > over and all(seg.prompt_length <= 600 for seg in s.segments)


def test_turn_mode_evaluates_with_the_window_it_trained_with(tiny_overrides, tmp_path):
    """A policy trained on the last k turns is evaluated on the last k turns too (before, evaluation rendered
    the whole chat, so a turn-mode policy met longer histories than any it was trained on)."""
    config = load_config(None, tiny_overrides + [
        "env.env_id=agentgym/Maze-Easy-v0", "rollout.sample_unit=turn", "rollout.turn_window=1", "env.max_turns=4",
        "eval.num_tasks=2", "rollout.max_new_tokens=4", f"out_dir={tmp_path}"])
    trainer = Trainer(config)
    seen: list[int] = []
    act = trainer.policy.act

    def recording(batch, *, sampling):
        seen.extend(sum(m["role"] == "assistant" for m in messages) for messages in batch)
        return act(batch, sampling=sampling)

    trainer.policy.act = recording
    try:
        assert trainer.evaluate()["eval_episodes"] == 2
    finally:
        trainer.close()
    assert len(seen) > 2 and max(seen) == 1  # turns 2..4 would show 1..3 replies with the whole chat
