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
  (which would dilute a Jaccard index) leaves it at 1. The *whole* source is compared (up to
  :data:`MAX_SOURCE_CHARS`, twice what the size gate lets through), both as written and in its live form
  (:func:`live_source`: parsed with ``ast``, never run; docstrings, bare constants and top-level
  definitions nothing uses dropped), so dead code in front of a copy can neither push it out of reach nor
  hide it; an archived env is compared by its live form.
* **Behavioural similarity**: the share of per-seed entries of the gates' fingerprint
  (``report.stats["fingerprint"]``: what the expert saw and could do on each seed) that are equal, by
  exact text or, where the entries carry one (:func:`fingerprint_entry`), by *structure*: the rewards,
  the step count, how many actions were legal and which of them the expert chose, with no text at all,
  so rewording an observation does not make a copy behave differently. Fingerprints compare because they
  are taken on the same seeds: :func:`fingerprint_seeds`, keyed by the archive's own secret
  (:meth:`~meta_envs.design.archive.EnvArchive.fingerprint_key`), so every module measured against one
  archive, by any host process, is fingerprinted on the same seeds, which no module can compute. The gates
  play them among their own seeds, with every policy, so a module cannot tell which ones they are.

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

import ast
import functools
import hashlib
import hmac
import io
import json
import keyword
import time
import tokenize
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .archive import EnvArchive

from .sandboxed import measured_seed

SHINGLE = 5
N_FINGERPRINT_SEEDS = 8
"""Seeds the expert's fingerprint is taken on (the gates play them besides their own seeds)."""
FLOOR, FULL = 0.5, 0.9
MAX_SOURCE_CHARS = 64 * 1024
"""Sources are compared up to here: twice the size gate's 32 KB, so a gated module is compared whole (issue 31:
a cut at 20,000 tokens let a copy behind 20,000 tokens of dead code score 0)."""
MAX_TOKENS = 200_000
"""A bound on one token stream, above anything :data:`MAX_SOURCE_CHARS` of source can hold."""
_LIVE_ROUNDS = 8
"""Rounds of dropping unused top-level definitions (a dead helper used only by another dead one goes next)."""

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


def live_source(source: str, *, drop_unused: bool = True) -> str | None:
    r"""``source`` without code that cannot matter, via ``ast`` (never executed); None if it does not parse.

    Dropped: docstrings and other bare constant statements, ``if <constant false>:`` blocks, and top-level
    functions, classes and plain assignments whose names nothing else loads (``Env`` always stays; kept
    with ``drop_unused=False``). The result is ``ast.unparse``'s layout, the same for every source.

    >>> print(live_source('"doc"\nimport random\nPAD = [0] * 9\ndef unused():\n    return 1\n'
    ...                   'class Env:\n    "doc"\n    def step(self, a):\n        return random.random()\n'))
    import random
    <BLANKLINE>
    class Env:
    <BLANKLINE>
        def step(self, a):
            return random.random()
    """
    try:
        tree = ast.parse(source[:MAX_SOURCE_CHARS])
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If,
                                 ast.For, ast.While, ast.With, ast.Try)):
                _drop_inert(node)
        for _ in range(_LIVE_ROUNDS if drop_unused else 0):
            used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            kept = [s for s in tree.body if not _unused(s, used | {"Env"})]
            if len(kept) == len(tree.body):
                break
            tree.body = kept
        return ast.unparse(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _drop_inert(node: ast.AST) -> None:
    """Drop bare constants (docstrings) and constant-false ``if`` blocks from each statement list of ``node``."""
    for name in ("body", "orelse", "finalbody"):
        body = getattr(node, name, None)
        if not isinstance(body, list) or not body:
            continue
        kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                and not (isinstance(s, ast.If) and isinstance(s.test, ast.Constant) and not s.test.value
                         and not s.orelse)]
        setattr(node, name, kept or ([ast.Pass()] if name == "body" and not isinstance(node, ast.Module) else []))


def _unused(statement: ast.stmt, used: set[str]) -> bool:
    """A top-level definition or plain assignment whose every name is never loaded."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return not statement.decorator_list and statement.name not in used
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return all(isinstance(t, ast.Name) and t.id not in used for t in targets)
    return False


def shingles(source: str, size: int = SHINGLE) -> frozenset[tuple[str, ...]]:
    """The set of ``size``-token windows of the normalised stream (the whole stream if shorter)."""
    tokens = normalised_tokens(source)
    if len(tokens) <= size:
        return frozenset([tuple(tokens)]) if tokens else frozenset()
    return frozenset(tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1))


def contained(archived: frozenset, new: frozenset) -> float:
    """The share of ``archived``'s shingles found in ``new`` (0 when ``archived`` is empty)."""
    return len(archived & new) / len(archived) if archived else 0.0


def new_shingles(source: str) -> frozenset[tuple[str, ...]]:
    """A new module's shingles: of its whole bounded source as written and as :func:`live_source` lays it
    out, with and without its unused definitions (whatever an archived env's live form holds, a copy has)."""
    raw = source[:MAX_SOURCE_CHARS]
    forms = [raw, live_source(raw, drop_unused=False), live_source(raw)]
    return frozenset().union(*(shingles(form) for form in forms if form))


@functools.lru_cache(maxsize=1024)
def archived_shingles(source: str) -> frozenset[tuple[str, ...]]:
    """An archived module's shingles: of its live form (what a copy must reproduce), else of its source."""
    live = live_source(source)
    return (shingles(live) if live else frozenset()) or shingles(source[:MAX_SOURCE_CHARS])


def code_similarity(new: str, archived: str) -> float:
    """How much of ``archived`` (its normalised shingles) occurs in ``new``, in [0, 1]."""
    return round(contained(archived_shingles(archived), new_shingles(new)), 6)


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


def fingerprint_entry(text_digest: str, steps: Iterable[tuple[float, bool, int, int]]) -> dict[str, Any]:
    """One seed's fingerprint entry: the digest of the texts seen and the episode's *structure*.

    ``steps`` holds, per step, ``(reward, done, number of legal actions, index of the action taken among
    them, -1 if not legal)``. The structure keeps no text, so a copy with reworded observations or renamed
    actions has the same structure as its original.

    >>> fingerprint_entry("ab12", [(0.0, False, 6, 2), (1.0, True, 6, 0)])
    {'text': 'ab12', 'structure': '2|0,F,6,2;1,T,6,0'}
    """
    parts = [f"{round(float(r), 4):g},{'T' if d else 'F'},{int(n)},{int(i)}" for r, d, n, i in steps]
    return {"text": str(text_digest), "structure": f"{len(parts)}|" + ";".join(parts)}


def fingerprint_seeds(n: int = N_FINGERPRINT_SEEDS, key: bytes | None = None) -> list[int]:
    """The seeds fingerprints are taken on: keyed by ``key`` (an archive's secret), else by the host's.

    Uniform in ``[0, 2**31 - 1)`` like gate and play seeds. The same key gives the same seeds in every
    process, so fingerprints taken against one archive compare; without a key they compare only within one
    host process (:func:`~meta_envs.design.sandboxed.measured_seed`).
    """
    if key is None:
        return [measured_seed("fingerprint-seed", i) for i in range(n)]
    digests = (hmac.new(bytes(key), repr(("fingerprint-seed", i)).encode(), hashlib.sha256).digest() for i in range(n))
    return [int.from_bytes(d[:8], "big") % (2**31 - 1) for d in digests]


def _same_behaviour(x: Any, y: Any) -> bool:
    """Two per-seed entries behave alike: equal, or (both carrying one) of equal structure."""
    if x == y:
        return True
    return (isinstance(x, dict) and isinstance(y, dict) and isinstance(x.get("structure"), str)
            and x.get("structure") == y.get("structure"))


def _items(fingerprint: Any) -> list[Any]:
    if isinstance(fingerprint, dict):
        return [fingerprint[k] for k in sorted(fingerprint, key=str)]
    if isinstance(fingerprint, (list, tuple)):
        return list(fingerprint)
    return [] if fingerprint is None else [fingerprint]


def behaviour_similarity(a: Any, b: Any) -> float:
    """The share of seeds at which two fingerprints behave alike (0 when either is empty).

    >>> old, copy = fingerprint_entry("aa", [(1.0, True, 4, 3)]), fingerprint_entry("bb", [(1.0, True, 4, 3)])
    >>> behaviour_similarity({"0": old}, {"0": copy}), behaviour_similarity({"0": "aa"}, {"0": "bb"})
    (1.0, 0.0)
    """
    ia, ib = _items(a), _items(b)
    if not ia or not ib:
        return 0.0
    return sum(_same_behaviour(x, y) for x, y in zip(ia, ib)) / max(len(ia), len(ib))


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
    mine = new_shingles(source)
    best = {"sha": None, "code": 0.0, "behaviour": 0.0, "dup": 0.0, "exact_behaviour": False}
    for sha, other_source, other_fingerprint in archived:
        code = round(contained(archived_shingles(other_source), mine), 6)
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


class NoveltyGate:
    """The ``novelty`` gate against one archive, for :func:`meta_envs.design.gates.validate_module`.

    Called with ``(source, stats)``, it returns a ``GateResult`` that fails only when the module's
    behavioural fingerprint equals an archived env's exactly; its detail names the nearest env and both
    similarities (the reward's ``dup`` is computed again by the caller from the same data).
    ``fingerprint_seeds`` are the archive's (:func:`fingerprint_seeds` of its ``fingerprint_key()``; the
    host's when it has none): ``validate_module`` fingerprints on them when given this gate.
    """

    def __init__(self, archive: Any):
        self.archive = archive

    @functools.cached_property
    def fingerprint_seeds(self) -> list[int]:
        """Read (or drawn) only when asked: judging a fingerprint needs no key."""
        key = getattr(self.archive, "fingerprint_key", None)
        return fingerprint_seeds(key=key() if callable(key) else None)

    def __call__(self, source: str, stats: dict) -> Any:
        from .gates import GateResult

        start = time.perf_counter()
        near = duplicate_share(source, stats.get("fingerprint"), self.archive)
        detail = (f"nearest {near['sha'] or 'none'}: code similarity {near['code']:.2f}, behaviour "
                  f"similarity {near['behaviour']:.2f}, dup {near['dup']:.2f}")
        if near["exact_behaviour"]:
            detail = "behaves exactly like archived env " + f"{near['sha']}; " + detail
        return GateResult("novelty", not near["exact_behaviour"], detail, time.perf_counter() - start)


def novelty_gate(archive: EnvArchive) -> NoveltyGate:
    """The ``novelty`` gate against ``archive`` (:class:`NoveltyGate`)."""
    return NoveltyGate(archive)
