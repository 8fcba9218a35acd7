"""The trainer runs on any env: make kwargs come only from the config, tasks come from a task list or from
seeds, BC is skipped where there is no expert, and more minibatches than trajectories do not crash."""

from __future__ import annotations

import http.server
import json
import math
import threading

import pytest

import agentgym_envs
from agentgym_envs.chat import chat_tools
from agentgym_envs.policies import Completion, SamplingConfig
from trainer.models.backends.chat_tokens import ChatTokens
from trainer.learn.bc import expert_trajectories
from trainer.models.backends.openai_http import EndpointError, OpenAIHTTPPolicy
from trainer.config import load_config
from trainer.collect.episodes import PlaySpec, auto_protocol, run_text_episodes, task_seed
from trainer.errors import ConfigError
from trainer import Trainer
from trainer.collect.episodes import play_specs
from trainer.collect.rollout import RolloutWorker
from trainer.serve.policy_server import PolicyServer
from trainer.models.tiny.chat_template import render_chat

SPLIT_ENVS = {"agentgym/Search-1Hop-v0", "agentgym/WebShop-v0", "agentgym/Household-PickPlace-v0"}
IDS = ["agentgym/Maze-Easy-v0", "agentgym/GuessNumber-v0", "agentgym/Wordle-Easy-v0",
       "agentgym/TicTacToe-VsScripted-v0", "agentgym/Search-1Hop-v0", "agentgym/WebShop-v0",
       "agentgym/Tutoring-v1", "agentgym/Household-PickPlace-v0"]
SMALL = ["rollout.tasks_per_step=2", "rollout.group_size=2", "env.max_turns=3", "rollout.max_new_tokens=8",
         "rollout.max_context_tokens=768", "algorithm.filter_zero_variance=false", "checkpoint_every=0",
         "env.system_prompt=''", "eval.num_tasks=2", "loss.entropy_coef=0.01"]  # entropy: a gradient even at zero advantage


@pytest.mark.parametrize("env_id", IDS)
def test_one_step_on_every_family(env_id, tiny_overrides, tmp_path, make_calls):
    # GuessNumber, Search and Tutoring are tool envs: env.protocol=auto trains them through tool_calls.
    budget = ["rollout.max_context_tokens=4096"] if env_id == "agentgym/Tutoring-v1" else []  # its tool list: ~3.1k tokens
    trainer = Trainer(load_config(None, tiny_overrides + SMALL + budget + [f"env.env_id={env_id}", f"out_dir={tmp_path}"]))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    record = trainer.train_step()
    assert trainer.step == 1 and record["updated"] == 1.0, record
    assert all(math.isfinite(v) for v in record.values() if isinstance(v, float)), record
    moved = [n for n, p in trainer.model.named_parameters() if p.requires_grad and not p.detach().equal(before[n])]
    assert moved, "the update changed no weight"
    ours = [kw for kw in make_calls if kw.get("max_turns") == 3]  # (the tiny model's corpus build plays Household)
    assert ours and all(set(kw) == {"protocol", "max_turns"} for kw in ours), ours  # no split=, no kwarg at all
    assert trainer.evaluate()["eval_episodes"] == 2


def test_household_recipe_kwargs_reach_make(tiny_overrides, tmp_path, make_calls):
    overrides = tiny_overrides + SMALL + [f"out_dir={tmp_path}", "env.train_kwargs={split: train, dense_reward: true}",
                                          "env.eval_kwargs={split: valid_seen}"]
    trainer = Trainer(load_config(None, overrides))
    trainer.evaluate()
    ours = [kw for kw in make_calls if kw.get("max_turns") == 3]
    assert {"split": "train", "dense_reward": True}.items() <= ours[0].items()
    assert make_calls[-1]["split"] == "valid_seen" and "dense_reward" not in make_calls[-1]


def test_quickstart_passes_only_the_maze_size_it_sets():
    env = load_config("trainer/configs/quickstart.yaml").env
    assert env.make_kwargs(train=True) == env.make_kwargs(train=False) == {"size": 3}  # held out by seed


def test_seeded_tasks_name_one_start_state_and_held_out_seeds_are_disjoint():
    train, held_out = PlaySpec("agentgym/Maze-Easy-v0"), PlaySpec("agentgym/Maze-Easy-v0", seed_stream=1)
    obs = [train.make().reset(seed=s, options={"task_index": 3})[0] for s in (0, 99)]
    assert obs[0] == obs[1]  # the task id, not the vector env's seed, picks the start
    assert obs[0] == agentgym_envs.make("agentgym/Maze-Easy-v0").reset(seed=task_seed(3, 0))[0]
    assert held_out.make().reset(options={"task_index": 3})[0] == \
        agentgym_envs.make("agentgym/Maze-Easy-v0").reset(seed=task_seed(3, 1))[0]
    assert not {task_seed(t, 0) for t in range(1000)} & {task_seed(t, 1) for t in range(1000)}


def test_bc_is_skipped_with_a_message_without_an_expert(tiny_overrides, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr("trainer.run.loop.has_expert", lambda env: False)
    trainer = Trainer(load_config(None, tiny_overrides + SMALL + ["env.env_id=agentgym/Maze-Easy-v0", "bc.episodes=4",
                                                                  f"out_dir={tmp_path}"]))
    with caplog.at_level("WARNING"):
        result = trainer.warm_up()
    assert result["bc_skipped"] == 1.0 and trainer.bc_done
    assert "no scripted expert" in caplog.text


def test_bc_runs_on_a_seeded_env_with_an_expert(tiny_overrides, tmp_path):
    trainer = Trainer(load_config(None, tiny_overrides + SMALL + ["env.env_id=agentgym/Maze-Easy-v0", "bc.episodes=4",
                                                                  "env.max_turns=20", f"out_dir={tmp_path}"]))
    assert trainer.warm_up()["bc_trajectories"] == 4


def test_more_minibatches_than_trajectories_do_not_crash(tiny_overrides, tmp_path, caplog):
    trainer = Trainer(load_config(None, tiny_overrides + SMALL + ["env.env_id=agentgym/Maze-Easy-v0", "optim.minibatches=16",
                                                                  f"out_dir={tmp_path}"]))
    with caplog.at_level("INFO"):
        record = trainer.train_step()
    assert record["updated"] == 1.0 and math.isfinite(record["loss"])
    assert "using 4 minibatches" in caplog.text


# ----------------------------------------------------------------------------- tool envs through tool_calls
class ScriptedTokens(ChatTokens):
    """A token policy with a real tokenizer and chat template whose every reply is ``reply`` + the end-of-turn id."""

    def __init__(self, tokenizer, reply: str, end_of_turn: str):
        self.tokenizer, self.chat_template_kwargs, self.reply = tokenizer, {}, reply
        self.end_id = tokenizer.convert_tokens_to_ids(end_of_turn)
        self.stop_ids = frozenset({self.end_id})

    def generate(self, prompt_ids, *, sampling):
        ids = self.encode(self.reply) + [self.end_id]
        return [Completion(self.reply, ids, [-0.5] * len(ids)) for _ in prompt_ids]


QWEN_CALL = '<tool_call>\n{"name": "guess", "arguments": {"number": 50}}\n</tool_call>'
#: family -> (the family's tool-call format, its end-of-turn token, the marker of its tool-result turn)
TOOL_FORMATS = {"tiny": (QWEN_CALL, "<|end|>", "<|tool|>\n"), "qwen2": (QWEN_CALL, "<|im_end|>", "<tool_response>"),
                "llama3": ('{"name": "guess", "parameters": {"number": 50}}', "<|eot_id|>", "ipython"),
                # Gemma's template ignores tools: they are listed in the system text, the call written as instructed
                "gemma": (QWEN_CALL, "<end_of_turn>", "<start_of_turn>user"),
                "qwen3": ("<think>\nlow half?\n</think>\n\n" + QWEN_CALL, "<|im_end|>", "<tool_response>")}


def family_tokenizer(family: str, tiny_model_and_tokenizer):
    if family == "tiny":
        return tiny_model_and_tokenizer[1]
    from transformers import AutoTokenizer

    from trainer.models import build_random_model

    return AutoTokenizer.from_pretrained(str(build_random_model(family, None)))


@pytest.mark.parametrize("family", ["tiny", "qwen2", "llama3", "gemma"])
def test_a_tool_env_trains_through_tool_calls_in_the_models_own_tool_format(family, tiny_model_and_tokenizer):
    call, end, result_marker = TOOL_FORMATS[family]
    policy = ScriptedTokens(family_tokenizer(family, tiny_model_and_tokenizer), call, end)
    spec = PlaySpec("agentgym/GuessNumber-v0", protocol="auto", max_turns=2, system_prompt="")
    assert spec.protocol == "tool_calls" and spec.tool_calling
    worker = RolloutWorker(spec, tasks_per_batch=1, group_size=2, max_context_tokens=4096)
    try:
        trajectories, _ = worker.collect(policy, [3], sampling=SamplingConfig(max_new_tokens=64), seed=0)
    finally:
        worker.close()
    for t in trajectories:
        text = policy.decode(t.token_ids)
        prompt = policy.decode(t.token_ids[:t.prompt_length])
        # the env's schema: in the template's tool block, or listed once compactly where the template has none (Gemma)
        assert ('"name": "guess"' in prompt and '"number"' in prompt) or "guess(number" in prompt
        assert t.num_turns == 2 and t.infra_error is None, t
        reply_ids = policy.encode(call) + [policy.end_id]
        assert [i for i, m in zip(t.token_ids, t.loss_mask) if m] == reply_ids * 2  # sampled ids, verbatim
        assert "50 is too" in text and "No tool call" not in text  # the call reached the env, parsed
        after_reply = text[text.index(call) + len(call):]
        assert result_marker in after_reply.split("50 is too")[0]  # the result came back as the tool-result turn
    assert policy.template_renders_tools() == (family != "gemma")


def test_auto_protocol_is_tool_calls_for_tool_envs_and_plain_otherwise():
    tool_envs = {"agentgym/GuessNumber-v0", "agentgym/Search-1Hop-v0", "agentgym/Terminal-v0", "agentgym/Tutoring-v1",
                 "agentgym/PracticeScheduling-v0"}
    for env_id in tool_envs | {"agentgym/Maze-Easy-v0", "agentgym/WebShop-v0", "agentgym/Household-PickPlace-v0"}:
        assert auto_protocol(env_id) == ("tool_calls" if env_id in tool_envs else "plain"), env_id
    assert load_config(None).env.protocol == "auto"
    assert PlaySpec("agentgym/GuessNumber-v0", protocol="plain").protocol == "plain"  # an explicit choice stays
    quickstart = load_config("trainer/configs/quickstart.yaml").env
    assert play_specs(quickstart)[0].protocol == "plain"  # the maze is not a tool env
    with pytest.raises(ConfigError, match="env.protocol must be 'auto' or one of"):
        load_config(None, ["env.protocol=tool_call"])


def test_a_seeded_held_out_stream_holds_as_many_tasks_as_eval_asks():
    """The SmolLM2 recipe asks 128 held-out mazes; the seeded stream's default of 100 once cut it silently."""
    recipe = load_config("trainer/configs/smollm2_maze.yaml")
    assert recipe.eval.num_tasks == 128
    assert play_specs(recipe.env)[1].num_tasks() == 100  # the default held-out stream
    train, held_out = play_specs(recipe.env, recipe.eval.num_tasks)
    assert held_out.num_tasks() == 128 and train.num_tasks() == 100_000


def test_tiny_template_renders_tools_and_tool_turns_and_is_unchanged_without_them(tiny_model_and_tokenizer):
    tokenizer = tiny_model_and_tokenizer[1]
    tools = [{"type": "function", "function": {"name": "guess", "description": "a <b> & 'c'", "parameters": {}}}]
    chat = [{"role": "system", "content": "S"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": "a"}, {"role": "tool", "content": "r"}]
    plain = render_chat(chat[:3], add_generation_prompt=True)
    assert plain == "<|system|>\nS<|end|>\n<|user|>\nu<|end|>\n<|assistant|>\na<|end|>\n<|assistant|>\n"
    with_tools = render_chat(chat, add_generation_prompt=True, tools=tools)
    assert with_tools.startswith("<|system|>\nS\n\nTools:\n" + json.dumps(tools[0]) + "<|end|>\n<|user|>\nu")
    assert "<|tool|>\nr<|end|>\n<|assistant|>\n" in with_tools
    # the tokenizer's template (what training renders) is the same text, also for a cache built before tools
    assert tokenizer.apply_chat_template(chat, tools=tools, tokenize=False, add_generation_prompt=True) == with_tools
    no_system = render_chat(chat[1:], add_generation_prompt=False, tools=tools)
    assert no_system.startswith("<|system|>\nTools:\n") and no_system.count("<|system|>") == 1


def test_the_http_policy_sends_the_chats_tools_and_answers_each_call_by_id():
    requests: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            body = json.dumps({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": "x", "type": "function", "function": {"name": "guess", "arguments": '{"number": 7}'}}]},
                "finish_reason": "tool_calls"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        policy = OpenAIHTTPPolicy(f"http://127.0.0.1:{server.server_address[1]}/v1", "m", retries=0)
        spec = PlaySpec("agentgym/GuessNumber-v0", protocol="auto", max_turns=2)
        episode = run_text_episodes(policy, spec, [0], sampling=SamplingConfig(temperature=0.0))[0]
    finally:
        server.shutdown()
        server.server_close()
    assert [m["role"] for m in episode.messages()][-2:] == ["assistant", "tool"]
    assert "7 is too" in episode.messages()[-1]["content"]  # the native call came back as text and was parsed
    first, second = requests
    assert first["tools"] == second["tools"] and [t["function"]["name"] for t in first["tools"]] == ["give_up", "guess"]
    assistant, tool = second["messages"][-2:]
    assert assistant["tool_calls"][0]["function"] == {"name": "guess", "arguments": '{"number": 7}'}
    assert tool == {"role": "tool", "content": episode.history.turns[0][1], "tool_call_id": assistant["tool_calls"][0]["id"]}
    assert "tools" not in requests[0]["messages"][0]


@pytest.mark.parametrize("env_id", ["agentgym/Search-1Hop-v0", "agentgym/Terminal-v0"])
def test_bc_clones_the_expert_as_tool_calls_on_tool_envs_whose_native_actions_are_not_calls(env_id, tiny_overrides,
                                                                                             tmp_path):
    # Search's expert writes <search> tags and Terminal's bash commands: rendering them as tool calls raised
    # ValueError ("cannot render … as a tool call") before the envs' as_tool_call hook.
    trainer = Trainer(load_config(None, tiny_overrides + SMALL + [f"env.env_id={env_id}", "bc.episodes=2", "bc.epochs=1",
                                                                  "env.max_turns=4", f"out_dir={tmp_path}"]))
    assert trainer.train_spec.protocol == "tool_calls"
    data = expert_trajectories(trainer.policy, trainer.train_spec, [0, 1], seed=0, explore=0.0)
    replies = [r for t in data for r in t.replies]
    assert replies and all(r.startswith("<tool_call>\n{\"name\": ") for r in replies), replies
    assert any(t.won for t in data)  # the calls reached the env and solved tasks
    assert trainer.warm_up()["bc_trajectories"] == 2


def test_our_server_takes_the_tools_and_tool_turns_our_client_sends():
    call = '<tool_call>\n{"name": "guess", "arguments": {"number": 7}}\n</tool_call>'
    seen: list = []

    class Calling:  # records what the served policy receives
        def act(self, batch, *, sampling):
            seen.append((chat_tools(batch[0]), [dict(m) for m in batch[0]]))
            return [Completion(call)]

    server = PolicyServer(Calling(), model_name="calling")
    server.start()
    try:
        spec = PlaySpec("agentgym/GuessNumber-v0", protocol="auto", max_turns=2)
        episode = run_text_episodes(OpenAIHTTPPolicy(server.url, "calling", retries=0), spec, [0],
                                    sampling=SamplingConfig(temperature=0.0))[0]
    finally:
        server.shutdown()
        server.server_close()
    (tools, first), (_, second) = seen
    assert tools == spec.make().reset(seed=0)[1]["tools"] and first == episode.messages()[:2]
    assert second == episode.messages()[:4]  # the reply came back verbatim, the result as a tool turn
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"] and second[2]["content"] == call


@pytest.mark.parametrize("family", ["tiny", "qwen2", "qwen3"])  # qwen3: a reply with reasoning, Qwen3's template
def test_turn_samples_of_a_tool_env_each_show_the_tools_and_the_tool_turns(family, tiny_model_and_tokenizer):
    call, end, result_marker = TOOL_FORMATS[family]
    policy = ScriptedTokens(family_tokenizer(family, tiny_model_and_tokenizer), call, end)
    spec = PlaySpec("agentgym/GuessNumber-v0", protocol="auto", max_turns=3, system_prompt="")
    worker = RolloutWorker(spec, tasks_per_batch=1, group_size=2, max_context_tokens=4096, sample_unit="turn",
                           turn_window=1)
    try:
        trajectories, _ = worker.collect(policy, [3], sampling=SamplingConfig(max_new_tokens=64), seed=0)
    finally:
        worker.close()
    for t in trajectories:
        assert len(t.segments) == 3 and t.infra_error is None
        for k, segment in enumerate(t.segments):
            prompt = policy.decode(segment.token_ids[:segment.prompt_length])
            assert '"name": "guess"' in prompt and prompt.count(result_marker) == min(k, 1)  # window of 1 turn
            assert [i for i, m in zip(segment.token_ids, segment.loss_mask) if m] == policy.encode(call) + [policy.end_id]


def test_a_chat_the_served_models_template_refuses_is_a_client_error():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.models.backends.hf import HFPolicy
    from trainer.models import build_random_model

    path = str(build_random_model("gemma", None))  # Gemma's template allows only alternating user/model turns
    server = PolicyServer(HFPolicy(AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)))
    server.start()
    try:
        policy = OpenAIHTTPPolicy(server.url, "agentgym", retries=0)
        two_results = [{"role": "user", "content": "go"}, {"role": "assistant", "content": QWEN_CALL},
                       {"role": "tool", "content": "a"}, {"role": "tool", "content": "b"}]
        with pytest.raises(EndpointError, match="HTTP 400.*chat template cannot render"):
            policy.act([two_results], sampling=SamplingConfig(max_new_tokens=2))
        assert policy.act([two_results[:3]], sampling=SamplingConfig(max_new_tokens=2))[0].text is not None
    finally:
        server.shutdown()
        server.server_close()
