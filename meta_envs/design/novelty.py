"""Novelty of a generated env against the archive: code near-duplicates and behavioural fingerprints.

R-Zero's questioner, left alone, produced near-identical questions; our designer could resubmit an
accepted env with its names changed. Two measures catch that, and ``dup`` (the near-duplicate share in
the designer's reward, :mod:`meta_envs.design.reward`) is the larger of the two against the closest
archived env:

* **Code similarity**: the source is lexed (``tokenize``, never executed) into a normalised token stream
  in which every identifier becomes ``N`` and every string literal ``S`` (so renaming classes,
  variables, attributes and messages changes nothing), comments and layout are dropped, keywords,
  operators and numbers are kept. The similarity is the share of the *archived* env's
  :data:`SHINGLE`-token windows that also occur in the new source: padding a copy with dead code
  (which would dilute a Jaccard index) leaves it at 1.
* **Behavioural similarity**: the share of per-seed entries of the gates' fingerprint
  (``report.stats["fingerprint"]``: what the expert saw and could do on each seed) that are equal.

Unrelated envs written to the same contract share boilerplate, so a similarity only counts above
:data:`FLOOR` and counts fully from :data:`FULL`: ``dup = clip((sim - FLOOR) / (FULL - FLOOR), 0, 1)``.
An *exact* behavioural duplicate (every fingerprint entry equal) fails the ``novelty`` gate
(:func:`novelty_gate`); near duplicates pass and only cut the reward.

>>> a = "class Env:\\n    def step(self, action):\\n        return action, 1.0, True\\n"
>>> b = "class Game:\\n    def step(self, move):  # renamed\\n        return move, 1.0, True\\n"
>>> code_similarity(a, b)
1.0
"""

from __future__ import annotations

import io
import json
import keyword
import time
import tokenize
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .archive import EnvArchive

SHINGLE = 5
FLOOR, FULL = 0.5, 0.9
MAX_TOKENS = 20_000
"""Token streams are cut here (gated sources are at most 32 KB, so this bounds only hostile input)."""

_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENCODING, tokenize.ENDMARKER}
_STRINGS = {tokenize.STRING} | {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                                if hasattr(tokenize, n)}  # f-strings are several tokens from Python 3.12


def normalised_tokens(source: str) -> list[str]:
    """The source's tokens with identifiers as ``N`` and strings as ``S``; a lexing error ends the stream.

    >>> normalised_tokens("x = foo(1, 'a')  # c")
    ['N', '=', 'N', '(', '1', ',', 'S', ')']
    """
    out: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in _SKIPPED:
                continue
            if token.type == tokenize.NAME:
                out.append(token.string if keyword.iskeyword(token.string) else "N")
            elif token.type in _STRINGS:
                out.append("S")
            else:
                out.append(token.string)
            if len(out) >= MAX_TOKENS:
                break
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # the stream so far still describes the code
    return out


def shingles(source: str, size: int = SHINGLE) -> frozenset[tuple[str, ...]]:
    """The set of ``size``-token windows of the normalised stream (the whole stream if shorter)."""
    tokens = normalised_tokens(source)
    if len(tokens) <= size:
        return frozenset([tuple(tokens)]) if tokens else frozenset()
    return frozenset(tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1))


def contained(archived: frozenset, new: frozenset) -> float:
    """The share of ``archived``'s shingles found in ``new`` (0 when ``archived`` is empty)."""
    return len(archived & new) / len(archived) if archived else 0.0


def code_similarity(new: str, archived: str) -> float:
    """How much of ``archived`` (its normalised shingles) occurs in ``new``, in [0, 1]."""
    return round(contained(shingles(archived), shingles(new)), 6)


def _entries(fingerprint: Any) -> list[str]:
    """A fingerprint as a list of canonical per-seed entries (a dict's values in key order, a list's items)."""
    if isinstance(fingerprint, dict):
        items: Iterable = (fingerprint[k] for k in sorted(fingerprint, key=str))
    elif isinstance(fingerprint, (list, tuple)):
        items = fingerprint
    elif fingerprint is None:
        return []
    else:
        items = [fingerprint]
    return [json.dumps(item, sort_keys=True, default=str) for item in items]


def behaviour_similarity(a: Any, b: Any) -> float:
    """The share of positions at which two fingerprints' entries are equal (0 when either is empty)."""
    ea, eb = _entries(a), _entries(b)
    if not ea or not eb:
        return 0.0
    return sum(x == y for x, y in zip(ea, eb)) / max(len(ea), len(eb))


def ramp(similarity: float) -> float:
    """Similarity above the boilerplate floor, as a near-duplicate share in [0, 1].

    >>> ramp(0.3), ramp(0.7), ramp(0.95)
    (0.0, 0.5, 1.0)
    """
    return round(min(1.0, max(0.0, (similarity - FLOOR) / (FULL - FLOOR))), 6)


def nearest(source: str, fingerprint: Any, archived: Iterable[tuple[str, str, Any]]) -> dict:
    """The closest archived env to ``(source, fingerprint)``: ``sha``, ``code``, ``behaviour``, ``dup``.

    ``archived`` yields ``(sha, source, fingerprint)``; an empty archive gives ``dup`` 0 and ``sha`` None.
    """
    mine = shingles(source)
    best = {"sha": None, "code": 0.0, "behaviour": 0.0, "dup": 0.0, "exact_behaviour": False}
    for sha, other_source, other_fingerprint in archived:
        code = round(contained(shingles(other_source), mine), 6)
        behaviour = round(behaviour_similarity(fingerprint, other_fingerprint), 6)
        dup = ramp(max(code, behaviour))
        if best["sha"] is None or dup > best["dup"] or (dup == best["dup"] and max(code, behaviour) >
                                                         max(best["code"], best["behaviour"])):
            exact = bool(_entries(fingerprint)) and _entries(fingerprint) == _entries(other_fingerprint)
            best = {"sha": sha, "code": code, "behaviour": behaviour, "dup": dup, "exact_behaviour": exact}
    return best


def duplicate_share(source: str, fingerprint: Any, archive: EnvArchive) -> dict:
    """:func:`nearest` against every env in ``archive``."""
    return nearest(source, fingerprint, ((e.sha, e.source, e.fingerprint) for e in archive.entries()))


def novelty_gate(archive: EnvArchive) -> Callable[[str, dict], Any]:
    """The ``novelty`` gate for :func:`meta_envs.design.gates.validate_module`.

    The returned callable takes ``(source, stats)`` and returns a ``GateResult`` that fails only when the
    module's behavioural fingerprint equals an archived env's exactly; its detail names the nearest env
    and both similarities (the reward's ``dup`` is computed again by the caller from the same data).
    """
    from .gates import GateResult

    def gate(source: str, stats: dict) -> Any:
        start = time.perf_counter()
        near = duplicate_share(source, stats.get("fingerprint"), archive)
        detail = (f"nearest {near['sha'] or 'none'}: code similarity {near['code']:.2f}, behaviour "
                  f"similarity {near['behaviour']:.2f}, dup {near['dup']:.2f}")
        if near["exact_behaviour"]:
            detail = "behaves exactly like archived env " + f"{near['sha']}; " + detail
        return GateResult("novelty", not near["exact_behaviour"], detail, time.perf_counter() - start)

    return gate
