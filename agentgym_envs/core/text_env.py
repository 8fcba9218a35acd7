"""The text-environment contract, written once.

Every single-agent env in this package is a :class:`TextEnv`: a ``gymnasium.Env`` whose observations and
actions are strings.

    obs, info = env.reset(seed=None, options=None)
    obs, reward, terminated, truncated, info = env.step(action)

Contract (``docs/architecture.md``, The text-env contract), enforced here so that subclasses cannot break it:

* **Bad input never raises.** A non-string, empty, over-long or unparseable action yields an observation
  that says what was wrong, ``info["action_valid"] = False``, ``info["parse_error"]`` set, reward
  ``invalid_action_penalty`` (0 by default), and the episode goes on, or ends (``terminated``) where the env
  sets ``invalid_action_ends_episode`` (the games' "an illegal move loses at once"). A penalty never takes the
  episode's return below ``reward_bounds[0]``: once there, further invalid actions cost nothing
  (``info["reward_uncut"]`` holds the penalty that was cut). This is the
  rule the protocol wrapper applies to replies it cannot parse, so one rule holds under every protocol.
  A step after the episode ended pays 0. Subclasses signal an invalid action by raising
  :class:`~agentgym_envs.core.errors.InvalidAction` from ``_step``; only programming errors propagate.
* **Infrastructure failures are not the agent's fault.** :class:`~agentgym_envs.core.errors.InfraError`
  raised by ``_step`` truncates the episode with ``info["infra_error"]`` set.
* **Determinism.** All randomness comes from ``self.np_random`` (seeded by ``reset(seed=...)``); no global
  RNG, no wall clock.
* **Standard info keys** on every step: ``action_valid``, ``parse_error``, ``won``, ``score``,
  ``state_key``, ``infra_error``, ``metrics``, plus ``valid_actions``/``tools`` where the env provides
  them; on reset also ``instruction`` and ``system_prompt``. Their types are tabled once, in
  :mod:`agentgym_envs.core.info` (:class:`~agentgym_envs.core.info.StepInfo`); actions are turned into
  text by :func:`~agentgym_envs.core.actions.coerce_action`.
* **Snapshots.** ``get_state() -> bytes`` / ``set_state(bytes)`` round-trip the whole env (RNG included).
  They live on the unwrapped env: wrappers' counters (``TimeLimit``'s elapsed steps) are not included, so
  a branch restored mid-episode keeps the restoring wrapper's step count.
  The default pickles the instance's attributes except ``snapshot_exclude`` (static data such as task
  sets); override ``_get_state``/``_set_state`` for anything that does not pickle.
  **Snapshots are valid within the process tree that made them**: the pickle is sealed with an HMAC key
  of the process tree (shared with vector workers and child processes), and ``set_state`` checks the
  seal before it unpickles anything, so forged, foreign or truncated bytes raise ``SnapshotError`` and
  never run code. To restore snapshots on another machine or in a later run, set the same
  ``AGENTGYM_SNAPSHOT_KEY`` in each process tree (:mod:`~agentgym_envs.core.snapshots` has the details).

Subclasses implement ``_reset(options) -> (observation, info)`` and ``_step(action) -> Step``, and may
override ``valid_actions()``, ``tools`` (see :class:`~agentgym_envs.core.tool_env.ToolEnv`), ``metrics()``,
``state_key_material()``, if they have a scripted solver ``expert_action()``, and, when admissible actions
are too many to list, ``random_action(rng) -> str`` (a random well-formed move: the random baseline).
The two optional hooks are declared here and raise :class:`~agentgym_envs.core.errors.NoExpert` /
:class:`~agentgym_envs.core.errors.NoRandomAction` until overridden; ask with
:func:`agentgym_envs.core.hooks.has_expert` / :func:`~agentgym_envs.core.hooks.has_random_action`, not ``hasattr``.

``info["system_prompt"]`` is the authority on the prompt (``_reset`` may put one that depends on make
kwargs there); the ``system_prompt`` class attribute is only the default.

Reserved attribute names (set by gymnasium or this base; don't store your own data there): ``spec``,
``np_random``, ``unwrapped``, ``render_mode``, ``metadata``, ``action_space``, ``observation_space``,
``instruction``, ``tools``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium

from .actions import coerce_action
from .errors import InfraError, InvalidAction, NoExpert, NoRandomAction, ResetNeeded, SnapshotError
from .info import StepInfo
from .snapshots import open_snapshot, seal_snapshot
from .spaces import UnicodeText

if TYPE_CHECKING:
    import numpy as np

SNAPSHOT_VERSION = 1
TRUNCATION_MARKER = "\n…[truncated {n} characters]"


@dataclass
class Step:
    """What ``_step`` returns: the observation and, optionally, reward, end flags, outcome and extra info."""

    observation: str
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    won: bool | None = None
    """Set when the outcome is known (usually with ``terminated``); ``None`` keeps the previous value."""
    score: float | None = None
    info: dict[str, Any] = field(default_factory=dict)


class TextEnv(gymnasium.Env[str, str]):
    """Base class of all text envs; see the module docstring for the contract."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"]}

    #: Default recommended system prompt; envs override with their rules and action grammar.
    system_prompt: ClassVar[str] = "You are an agent acting in a text environment. Reply with one action."
    #: Reward bounds the env promises (checked by ``check_env``).
    reward_bounds: ClassVar[tuple[float, float]] = (0.0, 1.0)
    #: Reward for an invalid action (keep it inside ``reward_bounds``).
    invalid_action_penalty: ClassVar[float] = 0.0
    #: Whether an invalid action ends the episode (the games' "an illegal move loses at once"); the protocol
    #: wrapper applies the same rule to replies it cannot parse.
    invalid_action_ends_episode: ClassVar[bool] = False
    #: The phrases of this env's system prompt, instruction or first observation that say how to *reply*
    #: (phrase as written -> protocol-neutral wording, ``""`` to drop). Shown as written under ``plain``;
    #: other protocols get the neutral wording and say the format themselves (:mod:`agentgym_envs.protocols.prompt`).
    reply_format: ClassVar[dict[str, str]] = {"Reply with one action.": ""}
    #: Longest action accepted; longer ones are rejected with an explanation (never an exception).
    max_action_chars: ClassVar[int] = 16_384
    #: Observations longer than this are cut with a visible marker.
    max_observation_chars: ClassVar[int] = 65_536
    #: Attribute names left out of snapshots (static data that never changes during an episode).
    snapshot_exclude: ClassVar[tuple[str, ...]] = ()

    _ALWAYS_EXCLUDED = frozenset({"action_space", "observation_space", "spec", "render_mode", "metadata", "_instance_tool_schemas"})

    def __init__(self, render_mode: str | None = None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        self.action_space = UnicodeText(self.max_action_chars)
        self.observation_space = UnicodeText(self.max_observation_chars)
        self._episode_started = False
        self._episode_over = False
        self._end_flags = (False, False)
        self._infra_error: str | None = None
        self._instruction = ""
        self._last_observation = ""
        self._won = False
        self._score = 0.0

    # ----------------------------------------------------------------- subclass hooks
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Start an episode using ``self.np_random``; return the first observation and info.

        The info should hold ``instruction`` (the task); missing standard keys are filled in by the base.
        """
        raise NotImplementedError

    def _step(self, action: str) -> Step:
        """Carry out a stripped, non-empty action; raise ``InvalidAction(reason)`` when it is not valid."""
        raise NotImplementedError

    def valid_actions(self) -> list[str] | None:
        """Admissible actions in the current state, or ``None`` when they cannot be enumerated."""
        return None

    def expert_action(self) -> str:
        """The scripted solver's next action (optional hook; :func:`~agentgym_envs.core.hooks.has_expert` tells)."""
        raise NoExpert(f"{type(self).__name__} has no scripted expert (expert_action); check "
                       "agentgym_envs.core.hooks.has_expert(env) before asking, or use another policy")

    def expert_detours(self) -> list[str]:
        """Wrong turns the expert may take here and recover from (for exploring BC data); none by default."""
        return []

    def random_action(self, rng: np.random.Generator) -> str:
        """A random well-formed action drawn from ``rng`` (optional hook, for envs whose actions cannot be listed)."""
        raise NoRandomAction(f"{type(self).__name__} has no random_action(rng); check "
                             "agentgym_envs.core.hooks.has_random_action(env), or draw from valid_actions()")

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """OpenAI-style function schemas when the env exposes tools."""
        return None

    def as_tool_call(self, action: str) -> dict[str, Any] | None:
        """A native ``action`` written in a grammar other than calls (a bash command, a ``<search>`` tag) as a
        call ``{"name", "arguments"}`` of :attr:`tools`, so the tool-call protocol can render scripted replies;
        ``None`` (default) when the action is a call expression already (``guess(number=3)``)."""
        return None

    def metrics(self) -> dict[str, float]:
        """Numbers about the current state worth logging, in ``info["metrics"]`` on every step (also invalid ones).

        A step's own ``Step.info["metrics"]`` is merged on top.
        """
        return {}

    def state_key_material(self) -> str:
        """Canonical text of the state as the agent can know it (hashed into ``info["state_key"]``).

        The default is the instruction plus the last observation; envs whose observations do not
        identify the state override this.
        """
        return self._instruction + "\x1f" + self._last_observation

    # ----------------------------------------------------------------- the contract
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        self._episode_started = True
        self._episode_over = False
        self._won, self._score, self._infra_error = False, 0.0, None
        self._return_paid = 0.0  # rewards paid this episode: the floor for invalid-action penalties
        try:
            observation, extra = self._reset(dict(options or {}))
        except InfraError as e:
            observation, extra = f"The environment failed to start (not your fault): {e}", {"infra_error": str(e)}
            self._episode_over, self._end_flags, self._infra_error = True, (False, True), str(e)
        self._instruction = str(extra.get("instruction", ""))
        observation = self._bound_observation(observation)
        self._last_observation = observation
        info = self._standard_info(extra, action_valid=True, parse_error=None)
        info.setdefault("instruction", self._instruction)
        info.setdefault("system_prompt", self.system_prompt)
        return observation, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict]:
        if not self._episode_started:
            raise ResetNeeded("step() was called before reset(); call env.reset(seed=...) first")
        if self._episode_over and self._infra_error is not None:
            return self._infra_failed(self._infra_error)
        if self._episode_over:
            return self._after_end()
        text, problem = self._coerce_action(action)
        if problem is not None:
            return self._invalid(problem)
        try:
            result = self._step(text)
        except InvalidAction as e:
            return self._invalid(e.reason, penalty=e.penalty)
        except InfraError as e:
            return self._infra_failed(str(e))
        return self._finish_step(result)

    # ----------------------------------------------------------------- snapshots
    def get_state(self) -> bytes:
        """The whole env state (RNG included) as bytes; restore with :meth:`set_state`."""
        payload = {"version": SNAPSHOT_VERSION, "cls": self._class_path(), "state": self._get_state()}
        return seal_snapshot(payload)

    def set_state(self, state: bytes) -> None:
        """Restore a snapshot taken with :meth:`get_state` on an env of the same class, in this process tree.

        The seal is checked before anything is unpickled; bytes this process tree did not make raise
        :class:`SnapshotError`.
        """
        payload = open_snapshot(state)
        if not isinstance(payload, dict) or payload.get("version") != SNAPSHOT_VERSION:
            raise SnapshotError(f"expected a version-{SNAPSHOT_VERSION} snapshot from get_state(), got something else")
        if payload["cls"] != self._class_path():
            raise SnapshotError(f"snapshot is of {payload['cls']}, cannot restore into {self._class_path()}")
        self._set_state(payload["state"])

    def _get_state(self) -> Any:
        excluded = self._ALWAYS_EXCLUDED | set(self.snapshot_exclude)
        return {k: v for k, v in vars(self).items() if k not in excluded}

    def _set_state(self, state: Any) -> None:
        self.__dict__.update(state)

    # ----------------------------------------------------------------- rendering
    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._last_observation
        if self.render_mode == "human":
            print(self._last_observation)
        return None

    # ----------------------------------------------------------------- helpers
    @property
    def instruction(self) -> str:
        return self._instruction

    @property
    def last_observation(self) -> str:
        return self._last_observation

    def state_key(self) -> str:
        return hashlib.blake2b(self.state_key_material().encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()

    def _class_path(self) -> str:
        return f"{type(self).__module__}.{type(self).__qualname__}"

    def _coerce_action(self, action: Any) -> tuple[str, str | None]:
        """``(text, None)`` for a usable action, else ``("", observation explaining why)``."""
        coerced = coerce_action(action, self.max_action_chars)
        if coerced.problem is None:
            return coerced.text, None
        advice = {"too_long": " Reply with one short action.", "empty": " " + self._expected_hint()}.get(coerced.kind, "")
        return "", f"Invalid action: {coerced.problem}.{advice}"

    def _expected_hint(self) -> str:
        actions = self.valid_actions()
        if actions:
            shown = ", ".join(actions[:8]) + (", …" if len(actions) > 8 else "")
            return f"Valid actions now: {shown}"
        return "Reply with one action."

    def _infra_failed(self, error: str):
        """Truncate the episode because the env's own machinery failed; the agent is not blamed."""
        self._episode_over, self._end_flags, self._infra_error = True, (False, True), error
        observation = f"The environment's infrastructure failed (not your fault): {error}"
        info = self._standard_info({"infra_error": error}, action_valid=True, parse_error=None)
        return observation, 0.0, False, True, info

    def _invalid(self, reason: str, *, penalty: float | None = None):
        """An action the env rejected: its penalty (cut at the return's floor); ends the episode if the env says so."""
        uncut = reward = float(self.invalid_action_penalty if penalty is None else penalty)
        if reward < 0:
            reward = max(reward, min(0.0, self.reward_bounds[0] - self._return_paid))
        self._return_paid += reward
        terminated = self.invalid_action_ends_episode
        if terminated:
            self._episode_over, self._end_flags = True, (True, False)
            reason += "\nAn invalid action ends this episode, as an illegal move does."
        observation = self._bound_observation(reason)
        info = self._standard_info({}, action_valid=False, parse_error=reason)
        if reward != uncut:  # as the protocol wrapper and the meta-envs say what they cut
            info["reward_uncut"] = uncut
        return observation, reward, terminated, False, info

    def _after_end(self):
        """A step after the episode ended: nothing happens and nothing is paid; the end flags repeat."""
        reason = "The episode is over; call reset() to start a new one."
        terminated, truncated = self._end_flags
        info = self._standard_info({}, action_valid=False, parse_error=reason)
        return self._bound_observation(reason), 0.0, terminated, truncated, info

    def _finish_step(self, result: Step):
        if result.won is not None:
            self._won = bool(result.won)
        if result.score is not None:
            self._score = float(result.score)
        observation = self._bound_observation(result.observation)
        self._last_observation = observation
        if result.terminated or result.truncated:
            self._episode_over = True
            self._end_flags = (bool(result.terminated), bool(result.truncated))
        info = self._standard_info(result.info, action_valid=True, parse_error=None)
        self._return_paid += float(result.reward)
        return observation, float(result.reward), bool(result.terminated), bool(result.truncated), info

    def _bound_observation(self, observation: str) -> str:
        limit = self.max_observation_chars
        if len(observation) <= limit:
            return observation
        marker = TRUNCATION_MARKER.format(n=len(observation) - limit)
        return observation[: limit - len(marker)] + marker

    def _standard_info(self, extra: dict[str, Any], *, action_valid: bool, parse_error: str | None) -> StepInfo:
        info: StepInfo = {
            "action_valid": action_valid,
            "parse_error": parse_error,
            "won": self._won,
            "score": self._score,
            "state_key": self.state_key(),
            "infra_error": None,
            "metrics": self.metrics(),
        }
        actions = self.valid_actions()
        if actions is not None:
            info["valid_actions"] = actions
        tools = self.tools
        if tools is not None:
            info["tools"] = tools
        step_metrics = extra.get("metrics")
        info.update(extra)
        if step_metrics:
            info["metrics"] = {**self.metrics(), **step_metrics}
        return info
