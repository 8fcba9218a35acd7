"""The TRL adapter: generated tool methods, bad model input, dataset rows, and real GRPOTrainer runs.

The trainer runs use TRL 1.16's own ``GRPOTrainer`` on CPU with the embedded tiny policy (its chat template
and response template are what TRL checks and parses). A freshly initialised tiny model never writes a
``<tool_call>``, so each run starts from a few seconds of supervised warm-up on tool-call replies (varied
arguments, so that the sampled calls differ); what is asserted is what TRL did with it: two optimiser
steps, tool calls parsed from the model's text and executed by the agentgym env, and the env's rewards.
"""

import copy
import inspect
import json
import os
import socket
from typing import Literal, get_type_hints

import pytest
import torch
from transformers.utils import get_json_schema

from agentgym_envs.interop.tool_methods import ToolSchemaError, build_tool_method, clean_description
from agentgym_envs.interop.trl import (ACT_HINT, EPISODE_OVER, InteropConfigError, dataset_rows,
                                       environment_factory, make_dataset)

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
TINY = ["policy.tiny.corpus_episodes=40", "policy.tiny.model.hidden_size=64", "policy.tiny.model.num_heads=1",
        "policy.tiny.model.num_layers=1", "policy.tiny.model.intermediate_size=128"]


def _schema(name="guess", properties=None, required=("number",), description="Guess the number."):
    properties = {"number": {"type": "integer", "description": "your guess."}} if properties is None else properties
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": list(required)}}}


# ----------------------------------------------------------------- generated tool methods
@pytest.mark.parametrize("env_id", ["agentgym/GuessNumber-v0", "agentgym/Search-1Hop-v0"])
def test_tool_methods_read_back_as_the_env_schemas(env_id):
    import agentgym_envs

    env = agentgym_envs.make(env_id)
    _, info = env.reset(seed=0)
    cls = environment_factory(env_id)
    assert cls.tool_names == tuple(t["function"]["name"] for t in info["tools"])
    for schema in info["tools"]:
        expected = schema["function"]
        got = get_json_schema(getattr(cls(), expected["name"]))["function"]  # a bound method, as TRL passes it
        assert got["name"] == expected["name"] and got["description"] == expected["description"]
        assert got["parameters"]["properties"] == expected["parameters"]["properties"]
        assert got["parameters"].get("required", []) == expected["parameters"]["required"]


def test_text_env_gets_one_act_tool_and_a_hint():
    cls = environment_factory("agentgym/Maze-Easy-v0")
    assert cls.tool_names == ("act",) and cls.text_env
    public = [n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")]
    assert sorted(public) == ["act", "get_reward", "reset"]  # TRL makes every other public function a tool
    assert str(inspect.signature(cls.act)) == "(self, action: str) -> str"
    rows = dataset_rows("agentgym/Maze-Easy-v0", 2)
    assert rows[0]["prompt"][0]["content"].endswith(ACT_HINT) and rows[0]["task_index"] is None


def test_signature_types_enum_optional_order():
    method = build_tool_method(_schema("pick", {
        "limit": {"type": "integer", "description": "at most this many.", "default": 3},
        "colour": {"type": "string", "enum": ["red", "blue"], "description": "a colour."},
        "ratio": {"type": "number"}, "tags": {"type": "array"}, "odd": {"type": ["string", "null"]}},
        required=("colour", "ratio")))
    signature = inspect.signature(method)
    assert list(signature.parameters) == ["self", "colour", "ratio", "limit", "tags", "odd"]  # required first
    assert signature.parameters["limit"].default == 3 and signature.parameters["tags"].default is None
    hints = get_type_hints(method)
    assert hints["colour"] == Literal["red", "blue"] and hints["ratio"] is float and hints["tags"] is list
    assert hints["odd"] is str  # a type this module does not map is described as a string
    parsed = get_json_schema(method)["function"]["parameters"]
    assert parsed["properties"]["colour"] == {"type": "string", "enum": ["red", "blue"], "description": "a colour."}
    assert parsed["properties"]["ratio"]["description"] == "the ratio argument."
    assert parsed["required"] == ["colour", "ratio"]


@pytest.mark.parametrize("name", ["__import__('os').system('x')", "reset", "get_reward", "_private", "class",
                                  "a b", "", 7, None, "x" * 65])
def test_hostile_tool_names_are_refused(name):
    with pytest.raises(ToolSchemaError, match="expected"):
        build_tool_method(_schema(name))


@pytest.mark.parametrize("params", [{"self": {"type": "string"}}, {"lambda": {}}, {"x=1": {}}, {"a;b": {}}])
def test_hostile_parameter_names_are_refused(params):
    with pytest.raises(ToolSchemaError, match="expected"):
        build_tool_method(_schema(properties=params, required=()))


@pytest.mark.parametrize("schema", [None, "guess", {"function": []}, _schema() | {"function": {"name": "g",
                                    "parameters": {"properties": []}}}])
def test_malformed_schemas_are_refused(schema):
    with pytest.raises(ToolSchemaError, match="expected"):
        build_tool_method(schema)


def test_hostile_descriptions_stay_plain_text():
    marker = "/tmp/agentgym-interop-pwned"
    evil = f'"""\nArgs:\n    number: x\nReturns:\n  __import__("os").system("touch {marker}") (choices: [1, 2]'
    method = build_tool_method(_schema(description=evil, properties={"number": {"type": "integer",
                                                                               "description": evil + "\n" * 50}}))
    parsed = get_json_schema(method)["function"]
    assert not os.path.exists(marker)
    assert "\n" not in parsed["description"] and "Returns:" not in parsed["description"]
    assert "enum" not in parsed["parameters"]["properties"]["number"]  # "(choices: …)" is not read as an enum
    assert parsed["parameters"]["properties"]["number"]["type"] == "integer"
    assert len(clean_description("y" * 10_000, "")) <= 400


# ----------------------------------------------------------------- bad model input
@pytest.fixture
def guess_env():
    cls = environment_factory("agentgym/GuessNumber-v0", high=8)
    env = cls()
    env.reset(**dataset_rows("agentgym/GuessNumber-v0", 1, high=8)[0])
    return env


@pytest.mark.parametrize("call, expected", [
    (lambda e: e.guess(number="abc"), "expected integer, got str"),
    (lambda e: e.guess(number=[1] * 5), "expected integer, got list"),
    (lambda e: e.guess(number=99), "outside the range"),
    (lambda e: e.guess(x=1), "Invalid call to guess"),
    (lambda e: e.guess(), "missing a required argument"),
    (lambda e: e.guess(number="9" * 200_000), "characters long"),
    (lambda e: e.give_up(now=True), "Invalid call to give_up"),
    (lambda e: e.guess(**{"self": 1, "number": 2}), "Invalid call to guess"),  # "self" is an argument like any
])
def test_bad_arguments_come_back_as_observations(guess_env, call, expected):
    observation = call(guess_env)  # the env's own invalid-action answer: the turn counts, the episode goes on
    assert isinstance(observation, str) and expected in observation
    assert not guess_env.done and guess_env.info["action_valid"] is False and guess_env.get_reward() == 0.0
    assert guess_env.steps == 1


def _nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("call, expected", [(lambda e: e.guess(3, number=3), "given twice"),
                                            (lambda e: e.guess(1, 2, 3), "at most 1 arguments"),
                                            (lambda e: e.guess(number=_nested(5000)), "nest too deeply")])
def test_misuse_the_env_cannot_see_is_answered_without_a_turn(guess_env, call, expected):
    assert expected in call(guess_env) and guess_env.steps == 0


def test_act_tool_bad_input_and_calls_after_the_end():
    env = environment_factory("agentgym/Maze-Easy-v0")()
    env.reset(seed=3)
    assert "expected a string, got int" in env.act(action=5)
    assert "exactly one argument" in env.act(command="go north") and "exactly one argument" in env.act()
    assert "characters long" in env.act(action="go " * 100_000)
    guess = environment_factory("agentgym/GuessNumber-v0", high=2)()
    guess.reset(seed=0)
    first = guess.guess(number=1)
    ended = first if guess.done else guess.guess(number=2)
    assert ended.endswith(EPISODE_OVER) and guess.won and guess.get_reward() == 1.0
    assert guess.guess(number=1) == EPISODE_OVER and guess.get_reward() == 1.0  # the env is not stepped again


def test_infrastructure_failure_is_not_scored():
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    env = environment_factory("agentgym/Search-1Hop-v0", retriever_url=url)()
    env.reset(seed=0, task_index=0)
    observation = env.search(query="Claedrin")
    assert "infrastructure failed" in observation and env.done and env.get_reward() is None


def test_dataset_rows_are_deterministic_and_checked():
    rows = dataset_rows("agentgym/Search-1Hop-v0", 5, seed=10, task_indices=[4, 7])
    assert [(r["seed"], r["task_index"]) for r in rows] == [(10, 4), (11, 7), (12, 4), (13, 7), (14, 4)]
    assert rows == dataset_rows("agentgym/Search-1Hop-v0", 5, seed=10, task_indices=[4, 7])
    cls = environment_factory("agentgym/Search-1Hop-v0")
    first, second = cls(), cls()
    assert first.reset(**rows[1]) == second.reset(**rows[1]) != first.reset(**rows[0])
    assert len(make_dataset("agentgym/Search-1Hop-v0", 3)) == 3
    for bad in ("3", -1, True, 1.5):
        with pytest.raises(InteropConfigError, match="non-negative integers"):
            first.reset(seed=bad)
    with pytest.raises(InteropConfigError, match="positive integer"):
        dataset_rows("agentgym/Search-1Hop-v0", 0)


# ----------------------------------------------------------------- TRL's GRPOTrainer, two steps per env
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from trainer.config import load_config
    from trainer.models.tiny import build_tiny

    torch.set_num_threads(1)
    return build_tiny(load_config(None, TINY).policy.tiny, tmp_path_factory.mktemp("tiny"))


def _call_text(name, **arguments):
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


def _warm_up(model, tokenizer, cls, rows, replies, max_steps=200, target_loss=0.05):
    """Supervised steps on ``replies`` after the rows' first prompts, rendered as TRL renders them (tools included).

    The prompt's keys and values are recomputed without gradient at every step and only the reply is
    back-propagated: the same function of the weights as full fine-tuning at inference, at a fraction of the cost.
    """
    env = cls()
    tools = [getattr(env, name) for name in cls.tool_names]
    examples = []
    for i, reply in enumerate(replies):
        row = rows[i % len(rows)]
        prompt = row["prompt"][:-1] + [{"role": "user", "content": env.reset(**row)}]
        prompt_ids = tokenizer.apply_chat_template(prompt, tools=tools, add_generation_prompt=True, tokenize=True,
                                                   return_dict=False)
        reply_ids = tokenizer.encode(reply, add_special_tokens=False) + [tokenizer.eos_token_id]
        examples.append((torch.tensor([prompt_ids]), torch.tensor([reply_ids])))
    optimiser = torch.optim.Adam(model.parameters(), lr=5e-3)
    for _ in range(max_steps):
        optimiser.zero_grad()
        losses = []
        for prompt_ids, reply_ids in examples:
            with torch.no_grad():  # all but the prompt's last token, whose output predicts the reply's first
                cache = model(prompt_ids[:, :-1], use_cache=True).cache
            inputs = torch.cat([prompt_ids[:, -1:], reply_ids[:, :-1]], 1)
            logits = model(inputs, cache=cache).logits
            losses.append(torch.nn.functional.cross_entropy(logits[0], reply_ids[0]))
        loss = torch.stack(losses).mean()
        if loss.item() < target_loss:
            break
        loss.backward()
        optimiser.step()
    assert loss.item() < target_loss, loss.item()  # the warm-up worked (else the assertions below say nothing)
    return model


def _train(tiny, env_id, replies, make_kwargs, tmp_path):
    from trl import GRPOConfig, GRPOTrainer

    model, tokenizer = copy.deepcopy(tiny[0]), tiny[1]
    cls = environment_factory(env_id, **make_kwargs)
    dataset = make_dataset(env_id, 2, **make_kwargs)  # two steps of one prompt (x4 generations) each
    _warm_up(model, tokenizer, cls, dataset.to_list(), replies)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                      logging_steps=1, max_steps=2, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=96, max_tool_calling_iterations=3, beta=0.0, learning_rate=1e-4,
                      temperature=0.3, seed=0, disable_tqdm=True)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=args, train_dataset=dataset,
                          environment_factory=cls)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    moved = any(not torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
    return trainer, cls, logs, moved


def test_trl_trains_on_a_tool_env(tiny, tmp_path):
    replies = [_call_text("guess", number=n) for n in (1, 2, 3)]
    trainer, cls, logs, moved = _train(tiny, "agentgym/GuessNumber-v0", replies, {"high": 4}, tmp_path)
    assert trainer.state.global_step == 2 and len(logs) == 2
    assert all(h["tools/call_frequency"] > 0 for h in logs)  # TRL parsed <tool_call> JSON and ran guess(number)
    assert {type(e) for e in trainer._environment_pool[None]} == {cls}
    rewards = [h["rewards/GuessNumberV0/mean"] for h in logs]
    assert any(h["reward_std"] > 0 for h in logs), rewards  # some rollouts found the number, some did not
    assert moved  # non-constant rewards gave non-zero advantages, so the optimiser moved the weights


def test_trl_trains_on_a_text_env(tiny, tmp_path):
    replies = [_call_text("act", action=f"go {d}") for d in ("north", "east", "west")]
    trainer, cls, logs, moved = _train(tiny, "agentgym/Maze-Easy-v0", replies, {}, tmp_path)
    assert trainer.state.global_step == 2 and all(h["tools/call_frequency"] > 0 for h in logs)
    assert sum(e.steps for e in trainer._environment_pool[None]) > 0  # the act calls reached the maze
    assert "rewards/MazeEasyV0/mean" in logs[0]


def test_trl_trains_on_search(tiny, tmp_path):
    replies = [_call_text("answer", text=t) for t in ("Varlonia", "1200")] + [_call_text("search", query="Claedrin")]
    make_kwargs = {"reward": "em_format", "topk": 1}
    trainer, cls, logs, moved = _train(tiny, "agentgym/Search-1Hop-v0", replies, make_kwargs, tmp_path)
    assert trainer.state.global_step == 2 and all(h["tools/call_frequency"] > 0 for h in logs)
    pool = trainer._environment_pool[None]
    assert any(e.info.get("metrics", {}).get("answered") for e in pool)  # the answer tool ended an episode
    assert any(h["rewards/Search1HopV0/mean"] > 0 for h in logs)  # well-formed answers earn the format term


# ----------------------------------------------------------------- the tiny policy's templates
def test_tiny_template_passes_trls_tool_checks_and_round_trips_calls(tiny):
    from trl.chat_template_utils import is_chat_template_prefix_preserving, parse_response, supports_tool_calling

    from trainer.models.backends.openai_http import tool_calls_text

    tokenizer = tiny[1]
    assert supports_tool_calling(tokenizer) and is_chat_template_prefix_preserving(tokenizer)
    calls = [{"type": "function", "function": {"name": "guess", "arguments": {"number": 7}}},
             {"type": "function", "function": {"name": "give_up", "arguments": {}}}]
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Bisect.", "tool_calls": calls}]
    rendered = tokenizer.apply_chat_template(chat, tokenize=False)
    assert rendered.endswith("<|assistant|>\nBisect.\n" + tool_calls_text(calls) + "<|end|>\n")  # one text form
    prompt = tokenizer.apply_chat_template(chat[:1], add_generation_prompt=True, tokenize=True, return_dict=False)
    reply = tokenizer.encode("Bisect.\n" + tool_calls_text(calls) + "<|end|>", add_special_tokens=False)
    assert parse_response(tokenizer, reply, prefix=prompt) == {"role": "assistant", "content": "Bisect.",
                                                               "tool_calls": calls}


def test_tiny_template_renders_chats_without_tool_calls_as_before(tiny):
    chat = [{"role": "system", "content": "S"}, {"role": "user", "content": "look"},
            {"role": "assistant", "content": "go north"}, {"role": "tool", "content": "ok"}]
    expected = "<|system|>\nS<|end|>\n<|user|>\nlook<|end|>\n<|assistant|>\ngo north<|end|>\n<|tool|>\nok<|end|>\n"
    assert tiny[1].apply_chat_template(chat, tokenize=False, add_generation_prompt=True) == expected + "<|assistant|>\n"
