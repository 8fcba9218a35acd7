"""Every seed this project derives, in one place: which derivation to use when, and why.

A seed derived from another seed (a turn of an episode, a restart of a vector env, a task of a split)
must be the same in every process, on every machine and under every Python version, or runs stop being
reproducible. So nothing here uses ``hash()`` (salted per process by ``PYTHONHASHSEED``) or global RNG
state. There are three derivations, kept apart because committed results and pinned task sets depend on
each one's exact numbers:

* :func:`derive_seed` — **integers to a 32-bit seed**, via NumPy's ``SeedSequence`` (well mixed, the
  keys give independent streams). Use it for seeds passed on: ``reset(seed=...)`` of a restarted or
  grouped env, a sampler's per-turn seed, ``torch.manual_seed``. ``None`` means "unseeded": fresh OS
  entropy (a vector env without a base seed).
* :func:`derive_rng` — **integers to a generator**, ``np.random.default_rng(SeedSequence(keys))``. Use it
  when the caller needs draws, not a seed: a baseline agent's stream, kept apart from the env's own
  stream seeded with the same integer (equal seeds would make the agent mirror the env's draws).
  It is *not* ``default_rng(derive_seed(...))``: both are stable, but they are different streams.
* :func:`text_seed` — **any parts (strings too) to a 64-bit seed**, via BLAKE2b of their text. Use it
  for ids named by words (``("household", "train", 7)``, a state key), and wherever the result must not
  depend on NumPy at all: task sets are pinned across NumPy releases. ``bits=63`` gives a seed that
  fits a signed 64-bit integer (vLLM's per-request seed).

Evaluation episodes are reset with plain consecutive seeds, :func:`episode_seed` (``seed + i``): the
number in a results table is then the seed a reader passes to ``reset`` to replay that episode.

>>> derive_seed(0, 1) == derive_seed(0, 1) != derive_seed(0, 2)
True
>>> text_seed("household", "train", 0) == text_seed("household", "train", 0) < 2**64
True
>>> derive_rng(3, 7).integers(100, size=4).tolist() == derive_rng(3, 7).integers(100, size=4).tolist()
True
"""

from __future__ import annotations

import hashlib

import numpy as np

_PART_SEPARATOR = "\x1f"


def derive_seed(seed: int | None, *keys: int) -> int:
    """A 32-bit seed that is a pure function of ``seed`` and ``keys`` (independent streams per key).

    ``seed=None`` returns a fresh seed from OS entropy (an unseeded run stays unseeded).
    """
    sequence = np.random.SeedSequence() if seed is None else np.random.SeedSequence([seed, *keys])
    return int(sequence.generate_state(1)[0])


def derive_rng(seed: int, *keys: int) -> np.random.Generator:
    """A generator whose stream is a pure function of ``seed`` and ``keys``, apart from ``default_rng(seed)``."""
    return np.random.default_rng(np.random.SeedSequence([seed, *keys]))


def text_seed(*parts: object, bits: int = 64) -> int:
    """A ``bits``-bit seed (at most 64) from the text of ``parts``, independent of NumPy and of ``hash()``.

    The parts are joined by ``\\x1f`` before hashing, so ``("a", "b")`` and ``("a\\x1fb",)`` collide
    (on purpose: a single part hashes its own text, which lets a string key be a seed directly).
    """
    if not 1 <= bits <= 64:
        raise ValueError(f"expected 1 <= bits <= 64, got {bits}")
    text = _PART_SEPARATOR.join(str(p) for p in parts).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") >> (64 - bits)


def episode_seed(seed: int, index: int) -> int:
    """The reset seed of evaluation episode ``index`` of a run seeded with ``seed``: ``seed + index``."""
    return seed + index
