"""The text side every token backend shares: chats through the tokenizer's template, ids without re-tokenising."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgym_envs.policies import Completion, Message, SamplingConfig


class ChatTokens:
    """``Policy.act`` and the encode/decode helpers of a backend with a HF ``tokenizer``,
    ``chat_template_kwargs`` and a ``generate(prompt_ids, sampling=...)`` (the token-level sampler)."""

    tokenizer: Any
    chat_template_kwargs: dict

    def generate(self, prompt_ids: list[list[int]], *, sampling: SamplingConfig) -> list[Completion]:
        raise NotImplementedError

    def act(self, batch: list[list[Message]], *, sampling: SamplingConfig) -> list[Completion]:
        return self.generate([self.encode_chat(messages) for messages in batch], sampling=sampling)

    def render_chat(self, messages: Sequence[Message]) -> str:
        """The chat as the model reads it, ending with the generation prompt."""
        return self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True,
                                                  **self.chat_template_kwargs)

    def encode_chat(self, messages: Sequence[Message]) -> list[int]:
        return self.encode(self.render_chat(messages))

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` as it stands (the template already wrote any special tokens)."""
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` with special tokens kept, so that rendering it again gives the same text."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)
