"""Token bookkeeping: the prefix-extension check, the loss mask, and the chat template's round trip."""

import pytest

from trainer.errors import PrefixExtensionError
from agentgym_envs.policies import Completion
from trainer.models.tiny.chat_template import render_chat
from trainer.collect.trajectory import TrajectoryBuilder


class CharPolicy:
    """One id per character; ``strip_history`` imitates templates that rewrite past replies."""

    def __init__(self, strip_history=False):
        self.strip_history = strip_history

    def render_chat(self, messages):
        if self.strip_history:
            messages = [dict(m, content=m["content"].split("</think>")[-1]) if m["role"] == "assistant" else m
                        for m in messages]
        return render_chat(messages, add_generation_prompt=True)

    def encode(self, text):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(map(chr, ids))


def _turn(builder, reply, observation, history):
    builder.add_reply(Completion(reply, [ord(c) for c in reply], [-1.0] * len(reply)), state_key="s")
    history += [{"role": "assistant", "content": reply}, {"role": "user", "content": observation}]
    builder.add_observation(history)


def test_loss_mask_covers_exactly_the_sampled_ids():
    history = [{"role": "user", "content": "start"}]
    builder = TrajectoryBuilder(CharPolicy(), history)
    _turn(builder, "go north", "a hall", history)
    _turn(builder, "look", "a lamp", history)
    t = builder.trajectory
    sampled = [chr(i) for i, m in zip(t.token_ids, t.loss_mask) if m]
    assert "".join(sampled) == "go north" + "look"
    assert t.token_turns.count(0) == len("go north") and t.token_turns.count(1) == len("look")
    assert all(lp == -1.0 for lp, m in zip(t.sampling_logprobs, t.loss_mask) if m)
    assert "".join(map(chr, t.token_ids)) == builder.text == CharPolicy().render_chat(history)


def test_a_template_that_rewrites_history_is_caught():
    history = [{"role": "user", "content": "start"}]
    builder = TrajectoryBuilder(CharPolicy(strip_history=True), history)
    with pytest.raises(PrefixExtensionError, match="does not extend the text the policy saw"):
        _turn(builder, "<think>hmm</think>go north", "a hall", history)


def test_tiny_tokenizer_round_trips_sampled_ids(tiny_policy):
    history = [{"role": "user", "content": "You are in the middle of a room."}]
    builder = TrajectoryBuilder(tiny_policy, history)
    ids = tiny_policy.encode("go to desk 1") + [tiny_policy.tokenizer.eos_token_id]
    builder.add_reply(Completion("go to desk 1", ids, [0.0] * len(ids)), state_key="s")
    history += [{"role": "assistant", "content": "go to desk 1"}, {"role": "user", "content": "You arrive."}]
    builder.add_observation(history)
    assert tiny_policy.decode(builder.ids) == tiny_policy.render_chat(history)
