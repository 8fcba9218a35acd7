"""A text space that admits any Unicode string up to a length bound, and works with gymnasium's utilities.

Gymnasium's :class:`~gymnasium.spaces.Text` only admits characters from a finite charset (alphanumerics by
default), which rejects ordinary model output such as ``"take apple 1 from countertop 2"``. ``UnicodeText``
keeps ``Text``'s interface (so wrappers and checkers that know ``Text`` keep working) but ``contains`` accepts
any ``str`` whose length is within bounds; ``sample`` draws from a printable, mixed-script alphabet.

>>> space = UnicodeText(max_length=40)
>>> space.contains("put mug 1 in/on coffeemachine 1 ☕")
True
>>> space.contains("x" * 41), space.contains(b"bytes")
(False, False)

Gymnasium's own tools dispatch on the space type, and their ``Text`` versions index characters into the
charset (a ``KeyError`` on the first ``×``). This module registers ``UnicodeText`` versions with them, so that
``gymnasium.spaces.flatten``/``unflatten``/``flatten_space`` and the vector envs' shared memory
(``AsyncVectorEnv(..., shared_memory=True)``, the default) work on every env. The flat form is one ``int32``
per character, its Unicode code point (lone surrogates included), padded with :data:`PAD` to ``max_length``:

>>> from gymnasium.spaces import flatten, unflatten
>>> flat = flatten(UnicodeText(4), "a×\\x00")
>>> flat.tolist(), unflatten(UnicodeText(4), flat) == "a×\\x00"
([97, 215, 0, 1114112], True)
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Box, Text
from gymnasium.spaces import utils as space_utils
from gymnasium.vector.utils import shared_memory

from .errors import AgentGymError

#: Sampling alphabet: printable ASCII plus a few non-Latin letters, accents and symbols.
SAMPLE_CHARSET = frozenset(string.ascii_letters + string.digits + string.punctuation + " \n\t" + "éüßçñ中文日本語Ωπ☕→€")
#: The padding value of the flat form: one past the largest code point (``0x10FFFF``).
PAD = 0x110000


class TextTooLong(AgentGymError, ValueError):
    """A string longer than the space's ``max_length`` was given to ``flatten`` (it has no flat form)."""


class UnicodeText(Text):
    """Any Unicode string whose length lies in ``[min_length, max_length]``."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | np.random.Generator | None = None,
                 sample_charset: frozenset[str] | str = SAMPLE_CHARSET):
        """``sample_charset`` only shapes ``sample()``; ``contains`` admits every character regardless."""
        super().__init__(max_length, min_length=min_length, charset=sample_charset, seed=seed)
        self._sample_codes = np.array([ord(c) for c in self.character_list], dtype="<u4")

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random string (uniform length, uniform characters of ``sample_charset``), from the space's seed.

        Vectorised: a 1 MiB space samples in milliseconds (gymnasium's per-character join takes ~0.3 s).
        With a ``mask`` or ``probability`` (gymnasium's semantics), gymnasium's own sampler is used.
        """
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        length = int(self.np_random.integers(self.min_length, self.max_length + 1))
        picks = self.np_random.integers(0, len(self._sample_codes), size=length)
        return self._sample_codes[picks].tobytes().decode("utf-32-le")

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash((UnicodeText, self.min_length, self.max_length))


# ----------------------------------------------------------------------------- gymnasium's dispatch
def code_points(space: UnicodeText, x: str) -> np.ndarray:
    """The flat form of ``x``: ``int32`` code points padded with :data:`PAD` to ``space.max_length``."""
    if len(x) > space.max_length:
        raise TextTooLong(f"expected a string of at most {space.max_length:,} characters for {space!r}, "
                          f"got {len(x):,}; shorten it (envs bound their observations) or use a larger space")
    flat = np.full(space.max_length, PAD, dtype=np.int32)
    flat[:len(x)] = np.frombuffer(x.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    return flat


def from_code_points(values: np.ndarray) -> str:
    """The string whose code points are ``values``; padding (and anything out of range) is dropped."""
    values = np.asarray(values).astype(np.int64, copy=False).ravel()
    kept = values[(values >= 0) & (values < PAD)]
    return kept.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")


@space_utils.flatten.register(UnicodeText)
def _flatten(space: UnicodeText, x: str) -> np.ndarray:
    return code_points(space, x)


@space_utils.unflatten.register(UnicodeText)
def _unflatten(space: UnicodeText, x: np.ndarray) -> str:
    return from_code_points(x)


@space_utils.flatten_space.register(UnicodeText)
def _flatten_space(space: UnicodeText) -> Box:
    return Box(low=0, high=PAD, shape=(space.max_length,), dtype=np.int32)


@space_utils.flatdim.register(UnicodeText)
def _flatdim(space: UnicodeText) -> int:
    return space.max_length


@space_utils.is_space_dtype_shape_equiv.register(UnicodeText)
def _dtype_shape_equiv(space_1: UnicodeText, space_2: Any) -> bool:
    return isinstance(space_2, UnicodeText) and space_1.max_length == space_2.max_length


class SharedTexts(Sequence[str]):
    """The strings in a vector env's shared memory, read when accessed (not when created).

    ``AsyncVectorEnv`` calls ``read_from_shared_memory`` once, at construction, and hands the same object
    back after every ``reset``/``step``: for a ``Box`` that is a live numpy view of the buffer. Gymnasium's
    ``Text`` version returns a tuple of the strings found at construction (all empty), so its observations
    never change; this is the live equivalent. ``deepcopy`` (what ``AsyncVectorEnv(copy=True)``, the
    default, returns) gives a plain tuple of the current strings.
    """

    def __init__(self, space: UnicodeText, memory: Any, n: int):
        self._rows = np.frombuffer(memory.get_obj(), dtype=np.int32).reshape((n, space.max_length))

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(from_code_points(row) for row in self._rows[index])
        return from_code_points(self._rows[index])

    def snapshot(self) -> tuple[str, ...]:
        """The current strings, as a tuple."""
        return tuple(from_code_points(row) for row in self._rows)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return self.snapshot()

    def __eq__(self, other: Any) -> bool:
        return self.snapshot() == (tuple(other) if isinstance(other, (list, SharedTexts)) else other)

    __hash__ = None  # type: ignore[assignment]  (mutable: its contents follow the buffer)

    def __repr__(self) -> str:
        return f"SharedTexts({self.snapshot()!r})"


@shared_memory.read_from_shared_memory.register(UnicodeText)
def _read_shared(space: UnicodeText, memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(space, memory, n)


@shared_memory.write_to_shared_memory.register(UnicodeText)
def _write_shared(space: UnicodeText, index: int, value: str, memory: Any) -> None:
    size = space.max_length
    destination = np.frombuffer(memory.get_obj(), dtype=np.int32)
    destination[index * size:(index + 1) * size] = code_points(space, value)
