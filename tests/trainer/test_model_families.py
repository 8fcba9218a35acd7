"""Models the user brings (issue 17 §2): random-weight Qwen2.5, Qwen3, Llama-3 and Gemma-3 directories built
locally load through transformers, their chat templates behave like the families' (asserted on the rendered
text), the trainer's chunked log-probs equal transformers' own, and ``agentgym train`` with ``policy.kind=hf``
trains on them token-exactly; a stop id other than the template's end-of-turn id no longer aborts rollouts."""

from __future__ import annotations

import json

import pytest
import torch

from agentgym_envs.policies import Completion
from trainer.models.backends.hf import HFPolicy
from trainer.config import load_config
from trainer.errors import ConfigError, PrefixExtensionError
from trainer.learn.logprobs import PackedBatch, token_logprobs
from trainer import Trainer, fit
from trainer.models import FAMILIES, FAMILY_SPECS, build_random_model, chat_template
from trainer.collect.trajectory import TrajectoryBuilder

USER = {"role": "user", "content": "hi"}
TOOL = {"type": "function", "function": {"name": "guess", "description": "Guess the number.",
                                         "parameters": {"type": "object", "properties": {"number": {"type": "integer"}}}}}
CALL = {"type": "function", "function": {"name": "guess", "arguments": {"number": 7}}}


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    cache = tmp_path_factory.mktemp("models")
    return {f: build_random_model(f, None, cache_dir=cache) for f in FAMILIES}


@pytest.fixture(scope="module")
def loaded(model_dirs):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return {f: (AutoModelForCausalLM.from_pretrained(d), AutoTokenizer.from_pretrained(d)) for f, d in model_dirs.items()}


def render(tokenizer, messages, **kwargs):
    kwargs.setdefault("add_generation_prompt", True)
    return tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)


# ----------------------------------------------------------------------------- the directories
@pytest.mark.parametrize("family", FAMILIES)
def test_builds_the_real_architecture_with_an_exact_tokenizer(family, loaded, model_dirs, tmp_path):
    model, tokenizer = loaded[family]
    spec = FAMILY_SPECS[family]
    assert type(model).__name__ == spec.architecture
    assert 3e5 < sum(p.numel() for p in model.parameters()) < 2e6
    assert model.config.vocab_size >= len(tokenizer)
    text = "héllo  wörld 🎲\n\tguess 42 <|not a token|>" + "".join(spec.special)
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids, skip_special_tokens=False) == text
    for token in (*spec.special, *spec.markup):
        assert len(tokenizer.encode(token, add_special_tokens=False)) == 1, token
    assert model.generation_config.eos_token_id == [tokenizer.convert_tokens_to_ids(t) for t in spec.stop]
    assert tokenizer.eos_token == spec.eos and tokenizer.pad_token == spec.pad
    copy = build_random_model(family, tmp_path / "copy", cache_dir=model_dirs[family].parent)
    assert (copy / "model.safetensors").read_bytes() == (model_dirs[family] / "model.safetensors").read_bytes()
    rebuilt = build_random_model(family, None, cache_dir=tmp_path / "rebuilt")  # a fresh build: the same bytes
    for name in ("model.safetensors", "tokenizer.json", "config.json", "chat_template.jinja"):
        assert (rebuilt / name).read_bytes() == (copy / name).read_bytes(), name
    other = build_random_model(family, None, seed=1, cache_dir=tmp_path / "other")
    assert (other / "model.safetensors").read_bytes() != (copy / "model.safetensors").read_bytes()


def test_unknown_family_and_size_name_the_choices(tmp_path):
    with pytest.raises(ValueError, match="expected one of qwen2, qwen3, llama3, gemma"):
        build_random_model("mistral", tmp_path)
    with pytest.raises(ValueError, match="expected one of tiny, bench"):
        build_random_model("qwen2", tmp_path, size="huge")


@pytest.mark.parametrize("family", FAMILIES)
def test_chunked_logprobs_equal_transformers_log_softmax(family, loaded):
    model, tokenizer = loaded[family]
    ids = torch.randint(0, len(tokenizer), (2, 80), generator=torch.Generator().manual_seed(0))  # > Gemma's window 32
    attention = torch.ones_like(ids)
    attention[1, 57:] = 0  # right padding, as pack() writes it
    loss_mask = attention.clone()
    loss_mask[:, :5] = 0
    batch = PackedBatch(ids, attention, loss_mask, torch.zeros(2, 80), torch.zeros(2, 80))
    with torch.no_grad():
        ours, _ = token_logprobs(model, batch, backend="torch")
        logits = model(input_ids=ids, attention_mask=attention).logits.float()
    reference = torch.log_softmax(logits, -1)[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1)
    scored = loss_mask[:, 1:].bool()
    assert (ours[:, 1:] - reference)[scored].abs().max() < 1e-5
    assert (ours[:, 1:][~scored] == 0).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_a_shared_prefix_scores_as_the_full_forward(family, loaded):
    """trainer/learn/shared_prefix.py on each architecture: rows sharing 40 ids score as one forward each;
    Gemma's sliding-window cache (window 32) cannot be expanded: its config sends it to the full forward."""
    model, tokenizer = loaded[family]
    ids = torch.randint(0, len(tokenizer), (3, 80), generator=torch.Generator().manual_seed(1))
    ids[1:, :40] = ids[0, :40]
    attention = torch.ones_like(ids)
    attention[2, 61:] = 0
    loss_mask = attention.clone()
    loss_mask[:, :40] = 0
    seen: list[int] = []
    hook = model.get_decoder().register_forward_pre_hook(
        lambda _m, args, kwargs: seen.append(int(kwargs["input_ids"].numel())), with_kwargs=True)
    try:
        with torch.no_grad():
            scores = [token_logprobs(model, PackedBatch(ids, attention, loss_mask, torch.zeros(3, 80),
                                                        torch.zeros(3, 80), shared_prefix=shared), backend="torch")[0]
                      for shared in (0, 40)]
    finally:
        hook.remove()
    assert float((scores[0] - scores[1]).abs().max()) < 1e-5 and float(scores[0].abs().sum()) > 1.0
    fallback = family == "gemma"
    assert seen == ([240, 240] if fallback else [240, 40, 120])  # Gemma: full forwards, no wasted prefix


def test_softcapped_logits_are_refused_not_scored_wrongly(loaded):
    model, _ = loaded["gemma"]
    model.config.final_logit_softcapping = 30.0  # Gemma 2's: the chunked path cannot apply it
    try:
        with pytest.raises(ValueError, match="final_logit_softcapping"):
            token_logprobs(model, PackedBatch(*(torch.ones(1, 4, dtype=torch.long),) * 3, torch.zeros(1, 4), torch.zeros(1, 4)))
    finally:
        model.config.final_logit_softcapping = None


# ----------------------------------------------------------------------------- the templates
def test_qwen2_default_system_and_hermes_tools(loaded):
    tokenizer = loaded["qwen2"][1]
    assert render(tokenizer, [USER]).startswith("<|im_start|>system\nYou are Qwen")
    own = render(tokenizer, [{"role": "system", "content": "Play."}, USER])
    assert own == "<|im_start|>system\nPlay.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    chat = [USER, {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "tool", "content": "too low"}, {"role": "tool", "content": "again"}]
    text = render(tokenizer, chat, tools=[TOOL])
    system = text.split("<|im_end|>")[0]
    assert "<tools>\n" + json.dumps(TOOL) + "\n</tools>" in system and "<tool_call>" in system
    assert '<|im_start|>assistant\n<tool_call>\n{"name": "guess", "arguments": {"number": 7}}\n</tool_call><|im_end|>' in text
    assert text.count("<|im_start|>user") == 2  # both results in one user turn
    assert "<|im_start|>user\n<tool_response>\ntoo low\n</tool_response>\n<tool_response>\nagain\n</tool_response><|im_end|>" in text


def test_qwen3_drops_past_reasoning_and_injects_an_empty_think_block(loaded):
    tokenizer = loaded["qwen3"][1]
    reply = {"role": "assistant", "content": "<think>\nlow numbers first\n</think>\n\nguess 3"}
    assert not render(tokenizer, [USER]).startswith("<|im_start|>system")  # no default system prompt
    later = render(tokenizer, [USER, reply, {"role": "user", "content": "too low"}])
    assert "low numbers first" not in later and "<|im_start|>assistant\nguess 3<|im_end|>" in later
    tool_loop = render(tokenizer, [USER, reply, {"role": "tool", "content": "too low"}], tools=[TOOL])
    assert "<think>\nlow numbers first\n</think>\n\nguess 3" in tool_loop  # after the last query: kept
    assert render(tokenizer, [USER], enable_thinking=False).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert render(tokenizer, [USER]).endswith("<|im_start|>assistant\n")
    field = render(tokenizer, [USER, {"role": "assistant", "content": "a", "reasoning_content": "why"}], add_generation_prompt=False)
    assert field.endswith("<|im_start|>assistant\n<think>\nwhy\n</think>\n\na<|im_end|>\n")


def test_llama3_header_preamble_json_calls_and_ipython_role(loaded):
    tokenizer = loaded["llama3"][1]
    text = render(tokenizer, [USER])
    assert text.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nKnowledge cutoff:")
    assert text.endswith("<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
                         "<|start_header_id|>assistant<|end_header_id|>\n\n")
    chat = [USER, {"role": "assistant", "content": "", "tool_calls": [CALL]}, {"role": "tool", "content": "too low"}]
    text = render(tokenizer, chat, tools=[TOOL])
    user_turn = text.split("<|start_header_id|>user<|end_header_id|>\n\n")[1]
    assert '"name": "guess"' in user_turn.split("<|eot_id|>")[0]  # tools go in the first user turn by default
    assert '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "guess", "parameters": {"number": 7}}<|eot_id|>' in text
    assert "<|start_header_id|>ipython<|end_header_id|>\n\ntoo low<|eot_id|>" in text
    in_system = render(tokenizer, [USER], tools=[TOOL], tools_in_user_message=False)
    assert "Environment: ipython" in in_system.split("<|eot_id|>")[0]


def test_gemma_merges_system_into_the_first_user_turn_and_says_model(loaded):
    tokenizer = loaded["gemma"][1]
    text = render(tokenizer, [{"role": "system", "content": "Play."}, USER, {"role": "assistant", "content": "ok"},
                              {"role": "user", "content": "go"}])
    assert text == ("<bos><start_of_turn>user\nPlay.\n\nhi<end_of_turn>\n<start_of_turn>model\nok<end_of_turn>\n"
                    "<start_of_turn>user\ngo<end_of_turn>\n<start_of_turn>model\n")
    from jinja2 import TemplateError

    with pytest.raises(TemplateError, match="alternate user and model"):
        render(tokenizer, [USER, USER])


@pytest.mark.parametrize("family", FAMILIES)
def test_end_of_turn_is_found_by_rendering(family, loaded):
    model, tokenizer = loaded[family]
    policy = HFPolicy(model, tokenizer)
    expected = {"qwen2": "<|im_end|>", "qwen3": "<|im_end|>", "llama3": "<|eot_id|>", "gemma": "<end_of_turn>"}[family]
    assert policy.end_of_turn_id() == tokenizer.convert_tokens_to_ids(expected)


@pytest.mark.parametrize("family, kwargs, unit", [("qwen2", {}, "episode"), ("llama3", {}, "episode"),
                                                  ("gemma", {}, "episode"), ("qwen3", {}, "turn"),
                                                  ("qwen3", {"enable_thinking": False}, "turn")])
def test_auto_sample_unit_reads_each_family_right(family, kwargs, unit, loaded):
    from trainer.collect.rollout import resolve_sample_unit

    model, tokenizer = loaded[family]
    # Gemma's EOS (<eos>) is not its end-of-turn (<end_of_turn>): episode mode only through decode_as_turn
    assert resolve_sample_unit(HFPolicy(model, tokenizer, chat_template_kwargs=kwargs), "auto") == unit


# ----------------------------------------------------------------------------- stop ids
@pytest.mark.parametrize("family, stop", [("qwen2", "<|endoftext|>"), ("gemma", "<eos>"), ("llama3", "<|eom_id|>")])
def test_a_reply_ending_with_another_stop_id_extends_the_next_prompt(family, stop, loaded):
    model, tokenizer = loaded[family]
    policy = HFPolicy(model, tokenizer)
    stop_id = tokenizer.convert_tokens_to_ids(stop)
    assert stop_id in policy.stop_ids and stop_id != policy.end_of_turn_id()
    builder = TrajectoryBuilder(policy, [USER])
    ids = policy.encode("guess 3") + [stop_id]
    builder.add_reply(Completion("guess 3", ids, [-0.5] * len(ids)), state_key="s")
    builder.add_observation([USER, {"role": "assistant", "content": "guess 3"}, {"role": "user", "content": "too low"}])
    trajectory = builder.trajectory
    sampled = [i for i, m in zip(trajectory.token_ids, trajectory.loss_mask) if m]
    assert sampled == ids  # the stop id the model sampled is the one trained on
    assert builder.text == render(tokenizer, [USER, {"role": "assistant", "content": "guess 3"},
                                              {"role": "user", "content": "too low"}])
    assert policy.decode(trajectory.token_ids) != builder.text  # (the token stream keeps the real stop id)


def test_a_sampled_endoftext_no_longer_aborts_collection(model_dirs, tmp_path):
    """Before decode_as_turn, a Qwen2.5 reply ending in <|endoftext|> raised PrefixExtensionError at turn 1."""
    trainer = Trainer(load_config(None, _overrides(model_dirs["qwen2"], tmp_path) + ["env.max_turns=3"]))
    model, endoftext = trainer.model, trainer.policy.tokenizer.convert_tokens_to_ids("<|endoftext|>")
    calls = []

    def every_third_token_is_endoftext(module, args, logits):
        calls.append(1)
        return logits + (1e4 * torch.nn.functional.one_hot(torch.tensor(endoftext), logits.shape[-1]) if len(calls) % 3 == 0 else 0)

    model.get_output_embeddings().register_forward_hook(every_third_token_is_endoftext)
    trajectories, _ = trainer.collect()
    replies = [[i for i, m in zip(t.token_ids, t.loss_mask) if m] for t in trajectories]
    assert any(endoftext in r for r in replies)
    assert any(t.num_turns >= 2 for t in trajectories)  # the episode went on past the first reply


# ----------------------------------------------------------------------------- training through agentgym train
def _overrides(path, out_dir, *extra):
    return ["policy.kind=hf", f"policy.path={path}", "env.env_id=agentgym/GuessNumber-v0", "env.max_turns=2",
            "rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=6", "rollout.max_context_tokens=1024",
            "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01", "bc.episodes=0", "checkpoint_every=0",
            "steps=1", "progress=false", "eval.num_tasks=1", f"out_dir={out_dir}", "rollout.sample_unit=episode", *extra]


@pytest.mark.parametrize("family", ["qwen2", "llama3", "gemma"])
def test_one_step_in_episode_mode_is_token_exact(family, model_dirs, tmp_path):
    trainer = Trainer(load_config(None, _overrides(model_dirs[family], tmp_path)))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    [record] = fit(trainer, echo=None)
    assert record["updated"] == 1.0 and record["logprob_gap_max"] < 1e-4, record
    assert any(not p.detach().equal(before[n]) for n, p in trainer.model.named_parameters())


def test_qwen3_without_thinking_cannot_train_whole_episodes(model_dirs, tmp_path):
    config = load_config(None, _overrides(model_dirs["qwen3"], tmp_path, "policy.chat_template_kwargs.enable_thinking=false"))
    trainer = Trainer(config)
    assert trainer.policy.render_chat([USER]).endswith("<think>\n\n</think>\n\n")  # the kwargs reached the template
    with pytest.raises(PrefixExtensionError, match=r"turn 1: .*rewrites earlier turns.*rollout\.sample_unit=turn"):
        fit(trainer, echo=None)


def test_chat_template_override_from_a_file_or_text(model_dirs, tmp_path):
    path = tmp_path / "plain.jinja"
    path.write_text("{% for m in messages %}[{{ m.role }}] {{ m.content }}<|im_end|>\n{% endfor %}"
                    "{% if add_generation_prompt %}[assistant] {% endif %}")
    for value in (str(path), path.read_text()):
        trainer = Trainer(load_config(None, _overrides(model_dirs["qwen2"], tmp_path / "run", f"policy.chat_template={json.dumps(value)}")))
        assert trainer.policy.render_chat([USER]) == "[user] hi<|im_end|>\n[assistant] "
    with pytest.raises(ConfigError, match="expected a .jinja file or jinja template text"):
        Trainer(load_config(None, _overrides(model_dirs["qwen2"], tmp_path / "run", "policy.chat_template=no/such.jinja")))
    own = chat_template("qwen3")  # a family template on another family's model: Qwen3 rules on the Qwen2.5 ids
    trainer = Trainer(load_config(None, _overrides(model_dirs["qwen2"], tmp_path / "run", f"policy.chat_template={json.dumps(own)}",
                                                   "policy.chat_template_kwargs={enable_thinking: false}")))
    assert trainer.policy.render_chat([USER]) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


@pytest.mark.parametrize("family", FAMILIES)
def test_prefix_reuse_samples_what_a_full_prefill_samples(family, loaded):
    """Each family's second turn, sampled with the first turn's keys and values reused, equals a full
    prefill; a cache that is not plain full attention (Gemma-3's sliding-window layers) is never reused."""
    from agentgym_envs.policies import SamplingConfig

    model, tokenizer = loaded[family]
    policy = HFPolicy(model, tokenizer)
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=5, seed=1)
    prompts = [policy.encode_chat([{"role": "user", "content": text}]) for text in ("hello there, friend", "a maze of rooms")]
    with policy.reusing_prefixes():
        first = policy.generate(prompts, sampling=sampling)
        nxt = [p + c.token_ids + policy.encode(" and then some more words") for p, c in zip(prompts, first)]
        kept = len(policy.prefixes.active(model).entries)
        reused = policy.generate(nxt, sampling=sampling)
    full = policy.generate(nxt, sampling=sampling)
    sliding = any(t == "sliding_attention" for t in getattr(model.config, "layer_types", None) or ())
    assert kept == (0 if sliding else 2)
    assert [c.token_ids for c in reused] == [c.token_ids for c in full]
    assert max(abs(a - b) for x, y in zip(reused, full) for a, b in zip(x.logprobs, y.logprobs)) < 1e-5
