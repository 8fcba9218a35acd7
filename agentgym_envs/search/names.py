"""Invented names from syllables, so that no language model can have memorised a fact about them.

Every word that names an entity is built from an onset-vowel-coda syllable inventory and is registered
once per world: a surname, a city or a title word never collides with another entity's word, so a name
found in a passage identifies one entity. Two deliberate exceptions make retrieval non-trivial:

* given names come from a small shared pool (many people are called "Kessa");
* :meth:`NameForge.near_miss` makes a distractor word one letter away from an existing one
  ("Dunmor" → "Dunmore"), for look-alike entities.

The forge draws from a ``random.Random`` instance owned by the world generator (never the global RNG).

>>> import random
>>> forge = NameForge(random.Random(0))
>>> word = forge.word()
>>> word[0].isupper() and word == word.strip() and forge.word() != word
True
"""

from __future__ import annotations

import random

ONSETS = ("b", "br", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "pr", "r", "s", "sh",
          "t", "th", "tr", "v", "vr", "z", "j", "qu", "st", "c", "cl", "y")
VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou", "ia", "y")
CODAS = ("", "", "", "n", "r", "l", "s", "th", "nd", "rk", "m", "x", "sk", "rn", "ld", "v")
#: Letters swapped in by :meth:`NameForge.near_miss` (vowels stay vowels, so the word stays pronounceable).
_SWAP = {"a": "e", "e": "a", "i": "y", "o": "u", "u": "o", "y": "i"}
#: Words of ordinary English that a syllable string might spell by chance; an entity name must not be
#: a common word, or BM25 and the shortcut checks would confuse it with running text.
_RESERVED = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "he", "her", "his", "in", "is", "it",
    "its", "of", "on", "or", "she", "that", "the", "their", "to", "was", "were", "with", "city", "region",
    "founded", "born", "year", "known", "also", "press", "guild", "order", "house", "company", "society",
    "festival", "accord", "council", "battle", "expedition", "fair", "treaty", "work", "works", "doc", "title",
})


class NameForge:
    """Makes fresh, unique words and names; remembers every word it has handed out."""

    def __init__(self, rng: random.Random, given_pool: int = 400):
        self.rng = rng
        self.used: set[str] = set()
        self.given_names = [self.word(2) for _ in range(given_pool)]

    def word(self, syllables: int | None = None) -> str:
        """A capitalised word never handed out before (2–3 open syllables and a final coda)."""
        r = self.rng
        while True:
            n = syllables or r.choice((2, 2, 3))
            word = ("".join(r.choice(ONSETS) + r.choice(VOWELS) for _ in range(n)) + r.choice(CODAS)).capitalize()
            if 4 <= len(word) <= 11 and word.lower() not in _RESERVED and word not in self.used:
                self.used.add(word)
                return word

    def near_miss(self, word: str) -> str:
        """A fresh word one edit away from ``word`` (a look-alike), or a fresh word if none is free."""
        candidates = [word + "e", word + "n", word[:-1] if len(word) > 5 else word + "s"]
        for i, ch in enumerate(word):
            if ch.lower() in _SWAP:
                swapped = _SWAP[ch.lower()]
                candidates.append(word[:i] + (swapped.upper() if ch.isupper() else swapped) + word[i + 1:])
        self.rng.shuffle(candidates)
        for candidate in candidates:
            if candidate not in self.used and candidate.lower() not in _RESERVED and len(candidate) >= 4:
                self.used.add(candidate)
                return candidate
        return self.word()

    def given(self) -> str:
        """A given name from the shared pool (given names repeat across people on purpose)."""
        return self.rng.choice(self.given_names)
