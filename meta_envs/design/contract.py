"""The contract of a generated environment: what a designer's Python module must define.

A designer in ``agentgym/EnvDesign-v0`` answers with one Python module. The module never runs in the
host process: :class:`~meta_envs.design.sandboxed.SandboxedModuleEnv` runs it inside a sandbox and
:func:`~meta_envs.design.gates.validate_module` puts it through the gates (``docs/meta_envs.md``).

The module defines ``class Env``::

    class Env:
        max_steps = 20                    # int, 1..100: the episode ends (done=True) by this many steps

        def __init__(self, difficulty: float = 0.5): ...   # the knob, 0 (easy) .. 1 (hard)
        def reset(self, seed: int) -> str: ...             # start episode `seed`; returns the first observation
        instruction: str                                   # attribute or property, set by reset
        def step(self, action: str) -> tuple[str, float, bool]: ...   # (observation, reward in [-1, 1], done)
        def legal_actions(self) -> list[str]: ...          # the actions that make sense now (1..64 strings)
        def expert_action(self) -> str: ...                # a good action now (the env's own solver)
        def hint(self) -> str: ...                         # optional: a tip for the solver

Rules the gates check:

- **Success** is an episode whose rewards sum to at least :data:`SUCCESS_RETURN` (1.0).
- **Deterministic.** Everything follows from ``difficulty`` and the ``seed`` given to ``reset``: draw
  randomness from ``random.Random(seed)``; never the clock, ``os.urandom``, the global ``random``
  functions or ``hash()`` of a string (it changes with ``PYTHONHASHSEED``). Two fresh processes must
  play identical episodes, and so must two episodes of the same seed in one process.
- **Any action string is safe.** ``step`` gets whatever the solver wrote (empty, huge, binary-looking,
  not in ``legal_actions``): answer it with an observation, never an exception.
- **Skill, not luck.** The expert wins at least 7 of 8 seeds; doing nothing (the empty action), always
  the first legal action, and uniformly random legal actions each win at most 10% of them. Different seeds
  give different starts (at least 6 of 8).
- **No leak.** The instruction, the first observation and the hint contain no run of 3 words of the
  expert's actions in order (when the expert's whole episode has fewer than 3 words, that whole run).
- **Fast and bounded.** A step's median time is at most 50 ms; episodes end by ``max_steps``;
  observations at most :data:`MAX_OBSERVATION_CHARS` characters, the instruction and hint at most
  :data:`MAX_INSTRUCTION_CHARS`, each legal action at most :data:`MAX_ACTION_CHARS` characters.
- **Small and self-contained.** At most :data:`MAX_SOURCE_BYTES` bytes; imports only from
  :data:`ALLOWED_IMPORTS` (a lint: the sandbox, not the lint, is what contains the code).
"""

from __future__ import annotations

from pathlib import Path

SUCCESS_RETURN = 1.0
"""An episode succeeds when the sum of its rewards is at least this (less :data:`RETURN_TOLERANCE`)."""
RETURN_TOLERANCE = 1e-9
"""Slack for float sums (ten rewards of 0.1 add up to 0.9999999999999999)."""
MAX_SOURCE_BYTES = 32 * 1024
MAX_STEPS_LIMIT = 100
MAX_LEGAL_ACTIONS = 64
MAX_ACTION_CHARS = 200
"""The longest legal action; longer actions sent by a solver reach the module cut to :data:`MAX_SENT_CHARS`."""
MAX_SENT_CHARS = 16 * 1024
MAX_OBSERVATION_CHARS = 16 * 1024
MAX_INSTRUCTION_CHARS = 8 * 1024
REWARD_RANGE = (-1.0, 1.0)

ALLOWED_IMPORTS = frozenset({
    "__future__", "bisect", "collections", "dataclasses", "enum", "fractions", "functools", "heapq",
    "itertools", "json", "math", "operator", "random", "re", "statistics", "string", "textwrap", "typing",
})
"""Pure standard-library modules a generated env may import (no clock, files, processes or network)."""


def is_success(episode_return: float) -> bool:
    """Whether an episode with this return counts as a win (the one place success is defined)."""
    return episode_return >= SUCCESS_RETURN - RETURN_TOLERANCE


def _brief() -> str:
    """This docstring from "The module defines" on, with each ``:data:`NAME``` replaced by its value."""
    text = "Your module defines" + __doc__.split("The module defines", 1)[1]
    names = {"SUCCESS_RETURN": SUCCESS_RETURN, "MAX_OBSERVATION_CHARS": MAX_OBSERVATION_CHARS,
             "MAX_INSTRUCTION_CHARS": MAX_INSTRUCTION_CHARS, "MAX_ACTION_CHARS": MAX_ACTION_CHARS,
             "MAX_SOURCE_BYTES": MAX_SOURCE_BYTES, "ALLOWED_IMPORTS": ", ".join(sorted(ALLOWED_IMPORTS))}
    for name, value in names.items():
        text = text.replace(f":data:`{name}`", str(value))
    return text.replace("``", "`")


CONTRACT_BRIEF = _brief()
"""The contract as shown to a designer (rendered into EnvDesign-v0's brief)."""


MODULES_DIR = Path(__file__).with_name("modules")
"""Example modules as data (the scripted designers' answers): read as text, never imported by the host."""


def example_module(name: str) -> str:
    """The source of ``modules/<name>.py`` (``lamps`` is the good family; see :func:`example_names`)."""
    path = MODULES_DIR / f"{name}.py"
    if name not in example_names():
        raise KeyError(f"expected one of {example_names()}, got {name!r}")
    return path.read_text(encoding="utf-8")


def example_names() -> list[str]:
    return sorted(p.stem for p in MODULES_DIR.glob("*.py"))
