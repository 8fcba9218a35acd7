"""Scripted designers for EnvDesign-v0: each a policy ``observation -> module source``.

They are the tests' adversaries and the docs' examples (``docs/meta_envs.md``). Every source comes from
``meta_envs/design/modules/`` (data files read as text, never imported here) or is derived from one:

* ``good`` -- the good parametric family (``lamps.py``): :func:`good_module` bakes a difficulty knob
  into the module as its top-level ``DIFFICULTY`` (what EnvDesign-v0 builds ``Env`` with), which moves
  the default solver's success smoothly from 1 (knob 0) to 0 (knob 1);
* ``trivial``, ``impossible``, ``coin-flip``, ``leaky``, the non-determinism sources and the hostile
  modules -- one file each, which the gates must reject;
* ``renamed-duplicate`` -- the good module with every identifier and message renamed (the same code
  under other names: novelty must cut its reward);
* ``hill-climber`` (:class:`HillClimber`) -- reads the solver's success of its last design from the
  brief and bisects the knob towards p_hat = 0.5.

``DESIGNERS`` maps a name to a designer (``agentgym selfplay --designer scripted:<name>``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

MODULES = Path(__file__).resolve().parent / "modules"
GOOD_FILE = "lamps.py"
_KNOB = re.compile(r"^DIFFICULTY = .*$", re.MULTILINE)
_FIRST_IMPORT = re.compile(r"^import .*$", re.MULTILINE)
_LAST_P_HAT = re.compile(r"^Last design: .*?p_hat=(\d+(?:\.\d+)?|None)", re.MULTILINE)

RENAMES = (("COLOURS", "HUES"), ("PANELS", "BOARDS"), ("answer", "secret"), ("layout", "order"),
           ("panel", "board"), ("presses", "tries"), ("steady", "calm"), ("lamps", "bulbs"),
           ("_light", "_glow"), ("shown", "seen"), ("said", "told"), ("rng", "gen"),
           ("right", "good"), ("reward", "gain"), ("how", "manner"))
"""Identifier renames of the renamed duplicate (whole words; the contract's names stay)."""
REWORDS = (("A row of", "There are"), ("You win.", "Victory."), ("You lose.", "Defeat."),
           ("The game is over.", "Nothing more to do."), ("Wrong: the buzzer sounds.", "Wrong button."))


def module_source(name: str) -> str:
    """The text of ``modules/<name>`` (``.py`` added when missing)."""
    path = MODULES / (name if name.endswith(".py") else name + ".py")
    return path.read_text(encoding="utf-8")


def good_module(difficulty: float = 0.4) -> str:
    """The good parametric family with its knob set to ``difficulty`` (rounded to 3 decimals)."""
    source = module_source(GOOD_FILE)
    knob = min(1.0, max(0.0, round(float(difficulty), 3)))
    if _KNOB.search(source):
        return _KNOB.sub(f"DIFFICULTY = {knob}", source, count=1)
    anchor = _FIRST_IMPORT.search(source)
    if anchor is None:
        raise ValueError(f"expected an import line in {GOOD_FILE} to put DIFFICULTY after, found none")
    return source[:anchor.end()] + f"\n\nDIFFICULTY = {knob}" + source[anchor.end():]


def renamed_duplicate(source: str | None = None) -> str:
    """``source`` (default: :func:`good_module`) with its identifiers renamed and its messages reworded."""
    text = good_module() if source is None else source
    for old, new in RENAMES:
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    for old, new in REWORDS:
        text = text.replace(old, new)
    return text


def last_p_hat(observation: str) -> float | None:
    """The solver's success on the last design, as the brief reports it (None: no accepted last design)."""
    match = _LAST_P_HAT.search(observation)
    if not match or match.group(1) == "None":
        return None
    return float(match.group(1))


class HillClimber:
    """Bisects the good family's knob until the solver's success is in the learnable middle.

    Too easy (p_hat > 0.6) raises the knob, too hard (< 0.4) lowers it; each move halves the interval.
    A design without a p_hat (rejected, e.g. as a behavioural duplicate) nudges the knob by a little so
    the next one differs. A brief without a "Last design" line is a fresh design env: the climb restarts,
    so one instance can serve as the ``DESIGNERS`` entry.
    """

    def __init__(self, start: float = 0.05):
        self.start = start
        self.low, self.high, self.knob = 0.0, 1.0, start

    def __call__(self, observation: str) -> str:
        if "\nLast design: " not in observation:
            self.low, self.high, self.knob = 0.0, 1.0, self.start
            return good_module(self.knob)
        p_hat = last_p_hat(observation)
        if p_hat is None:
            self.knob = min(1.0, self.knob + 0.013)
        elif p_hat > 0.6:
            self.low, self.knob = self.knob, (self.knob + self.high) / 2
        elif p_hat < 0.4:
            self.high, self.knob = self.knob, (self.low + self.knob) / 2
        return good_module(self.knob)


def _fixed(source_fn: Callable[[], str]) -> Callable[[str], str]:
    return lambda observation: source_fn()


def _file(name: str) -> Callable[[str], str]:
    return _fixed(lambda: module_source(name))


BAD_MODULES = {
    "trivial": "trivial", "impossible": "impossible", "coin-flip": "coinflip", "leaky": "leaky",
    "nondeterministic-time": "nondet_time", "nondeterministic-urandom": "nondet_urandom",
    "nondeterministic-random": "nondet_random", "nondeterministic-hash": "nondet_hash",
    "hostile-read-host": "hostile_read", "hostile-socket": "hostile_socket",
    "hostile-fork-bomb": "hostile_forkbomb", "hostile-allocate": "hostile_memory",
    "hostile-write-outside": "hostile_write", "hostile-infinite-loop": "hostile_loop",
}
"""Designer name -> file in ``modules/`` of the designs every gate set must reject."""

DESIGNERS: dict[str, Callable[[str], str]] = {
    "good": _fixed(good_module),
    "renamed-duplicate": _fixed(renamed_duplicate),
    "hill-climber": HillClimber(),
    **{name: _file(stem) for name, stem in BAD_MODULES.items()},
}
"""Name -> a designer (a callable of the brief); the hill climber restarts on a fresh env's brief."""
