"""Tokenizer training text for the random models, written here: agent-style English, JSON, numbers, code.

The text is what agents in this gym read and write (instructions, observations, actions, tool calls),
plus seeded pseudo-words so that larger vocabularies find enough distinct pieces to merge. Byte-level
BPE still encodes any string exactly; the corpus only decides how short the encodings are.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

_LINES = (
    "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a countertop 2, a drawer 3.",
    "Your task is to: put a clean mug in the coffee machine.",
    "go to countertop 2", "take mug 1 from countertop 2", "open drawer 3", "Nothing happens.",
    "You arrive at the sink basin 1. On the sink basin 1, you see a spoon 2 and a knife 1.",
    "Guess a number between 1 and 100. Too high! Too low! Correct, you found it in 7 guesses.",
    "The maze is 5 by 5. You are at (0, 0); the exit is at (4, 4). Moves: up, down, left, right.",
    "Thought: I should check the drawer first.\nAction: open drawer 3",
    "<think>\nThe answer must be above 50, so I try 75.\n</think>\n\n75",
    "search[best running shoes for men] click[Buy Now] think[the price is within budget]",
    "def solve(x: int) -> int:\n    return x * 2 + 1\n\nprint(solve(20))",
    "$ ls -la /tmp && cat notes.txt | grep error",
    "The capital of France is Paris. Water boils at 100 degrees Celsius at sea level.",
    "Invalid action: expected one of the listed commands, got 'fly north'. Try again.",
)
_TOOLS = (("guess", {"number": 42}), ("act", {"action": "go to cabinet 1"}), ("search", {"query": "who wrote Hamlet"}))
_SYLLABLES = ("ka", "lo", "mi", "te", "su", "na", "ri", "po", "ve", "da", "xi", "qu", "or", "en", "ul", "th", "sh", "ar")


def corpus(num_pseudo_words: int, seed: int) -> Iterator[str]:
    """Deterministic training text: the agent lines, tool calls in each family's format, pseudo-word prose."""
    rng = random.Random(seed)
    for _ in range(20):
        yield from _LINES
        for name, arguments in _TOOLS:
            call = {"name": name, "arguments": arguments}
            yield "<tool_call>\n" + json.dumps(call) + "\n</tool_call>"
            yield json.dumps({"name": name, "parameters": arguments})
            yield "<tool_response>\n" + json.dumps({"result": rng.randint(0, 999)}) + "\n</tool_response>"
        yield " ".join(str(rng.randint(0, 10_000)) for _ in range(30))
    words = ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(num_pseudo_words)]
    for start in range(0, len(words), 16):
        yield " ".join(words[start:start + 16]) + "."
