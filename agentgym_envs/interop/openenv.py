"""An agentgym env served as an OpenEnv environment (``openenv==0.10.0``, extra ``openenv``).

OpenEnv serves an ``Environment`` subclass with typed pydantic ``Action``/``Observation`` models through
``create_app`` (a FastAPI app: WebSocket sessions on ``/ws``, stateless ``/reset`` and ``/step``), and
clients subclass ``EnvClient``. Here:

* :class:`AgentgymAction` is one reply, ``text`` (parsed by the action ``protocol``, ``plain`` by default:
  a malformed or over-long reply comes back as an observation saying what was wrong, with
  ``action_valid=False``, never as a server error);
* :class:`AgentgymObservation` carries the observation ``text``, the step's ``reward`` and ``done``,
  ``action_valid``, ``won``, ``native_action`` and a JSON-safe copy of ``info``;
* :class:`AgentgymEnvironment` wraps ``agentgym_envs.make(env_id, protocol=...)``; ``reset(seed=...,
  task_index=...)`` is the env's own seeded reset, so the same seed and actions give the same observations;
* :func:`create_app` builds the server app for one env id, :class:`AgentgymEnvClient` is the typed client.

A request whose action does not match :class:`AgentgymAction` (not JSON, a missing or non-string ``text``)
is refused by OpenEnv itself (HTTP 422, or an error message on the WebSocket) before reaching the env.
``openenv`` and ``verifiers`` 0.4 pin different ``mcp`` versions: install this extra in its own virtualenv
(``bash scripts/install_interop.sh openenv`` builds ``.venv-openenv``).

>>> env = AgentgymEnvironment("agentgym/Maze-Easy-v0")
>>> first = env.reset(seed=0)
>>> step = env.step(AgentgymAction(text=env.expert_action()))
>>> (first.done, step.action_valid, env.state.step_count)
(False, True, 1)
"""

from __future__ import annotations

import math
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server import http_server
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from ..policies.env_side import expert_action
from ..registration import make

__all__ = ["AgentgymAction", "AgentgymObservation", "AgentgymState", "AgentgymEnvironment", "AgentgymEnvClient",
           "ResetRefused", "create_app"]


class ResetRefused(ValueError):
    """A ``reset`` argument the env cannot take (a bad ``task_index``): the client's mistake, answered with HTTP
    422 (:func:`create_app`) or a WebSocket error message, never a 500."""


class AgentgymAction(Action):
    """One reply to the env: what a model wrote, parsed by the env's action protocol."""

    text: str = Field(description="The reply (with protocol=None: the env's native action)")


class AgentgymObservation(Observation):
    """What the env answered; ``reward`` and ``done`` are the step's own (``done``: terminated or truncated)."""

    text: str = Field(default="", description="The observation text")
    action_valid: bool = Field(default=True, description="info['action_valid']: the reply was a legal move")
    won: bool = Field(default=False, description="info['won']")
    native_action: str | None = Field(default=None, description="The native action the reply became, if any")
    info: dict[str, Any] = Field(default_factory=dict, description="A JSON-safe copy of the step's info")


class AgentgymState(State):
    """The session's episode so far."""

    env_id: str = ""
    seed: int | None = None
    total_reward: float = 0.0
    won: bool = False
    done: bool = False


class AgentgymEnvironment(Environment[AgentgymAction, AgentgymObservation, AgentgymState]):
    """One agentgym env behind OpenEnv's ``Environment`` contract; one instance per session."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session gets its own instance from the factory; nothing is shared

    def __init__(self, env_id: str, *, protocol: str | None = "plain", max_turns: int | None = None,
                 **make_kwargs: Any) -> None:
        super().__init__()
        self.env_id = env_id
        self._env = make(env_id, protocol=protocol, max_turns=max_turns, **make_kwargs)
        self._state = AgentgymState(env_id=env_id)
        self._started = False

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_index: int | None = None,
              **kwargs: Any) -> AgentgymObservation:
        """The env's seeded reset; ``task_index`` picks a task of a task env (``options={"task_index": i}``)."""
        options = None if task_index is None else {"task_index": self._task_index(task_index)}
        text, info = self._env.reset(seed=seed, options=options)
        self._state = AgentgymState(env_id=self.env_id, seed=seed, episode_id=episode_id, step_count=0)
        self._started = True
        return _observation(text, 0.0, False, info)

    def step(self, action: AgentgymAction, timeout_s: float | None = None, **kwargs: Any) -> AgentgymObservation:
        """One reply. Before ``reset`` or after the episode ended, an observation says so (no exception)."""
        if not self._started or self._state.done:
            why = "no episode has started" if not self._started else "the episode has ended"
            return AgentgymObservation(text=f"Expected reset() before step(): {why}. Call reset() to start one.",
                                       done=True, reward=0.0, action_valid=False)
        text, reward, terminated, truncated, info = self._env.step(action.text)
        state = self._state
        state.step_count += 1
        state.total_reward += float(reward)
        state.won = bool(info.get("won", state.won))
        state.done = bool(terminated or truncated)
        return _observation(text, reward, state.done, info)

    def _task_index(self, task_index: Any) -> int:
        """``task_index`` as the client sent it, checked: an int (not a bool) in the env's task list (any index in
        ``[0, 2**63)`` for an env without one, which ignores it); else :class:`ResetRefused` (HTTP 422)."""
        tasks = getattr(self._env.unwrapped, "num_tasks", None)
        limit = tasks if isinstance(tasks, int) else 1 << 63
        if isinstance(task_index, bool) or not isinstance(task_index, int) or not 0 <= task_index < limit:
            raise ResetRefused(f"task_index must be an int in [0, {limit}) for {self.env_id}, got "
                               f"{str(task_index)[:40]!r}")
        return task_index

    @property
    def state(self) -> AgentgymState:
        return self._state

    def expert_action(self) -> str:
        """The env's scripted expert move (what tests and demos send as a good reply)."""
        return expert_action(self._env)

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name=self.env_id, description=f"agentgym env {self.env_id}", version="0")

    def close(self) -> None:
        self._env.close()


class AgentgymEnvClient(EnvClient[AgentgymAction, AgentgymObservation, AgentgymState]):
    """OpenEnv's WebSocket client, typed for :class:`AgentgymEnvironment`."""

    def _step_payload(self, action: AgentgymAction) -> dict[str, Any]:
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AgentgymObservation]:
        fields = {**payload.get("observation", {}), "reward": payload.get("reward"), "done": payload.get("done", False)}
        return StepResult(observation=AgentgymObservation(**fields), reward=payload.get("reward"),
                          done=bool(payload.get("done", False)), metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> AgentgymState:
        return AgentgymState(**payload)


def create_app(env_id: str, *, protocol: str | None = "plain", max_turns: int | None = None,
               max_concurrent_envs: int = 8, **make_kwargs: Any) -> Any:
    """OpenEnv's FastAPI app serving ``env_id`` (``uvicorn.run(create_app("agentgym/Maze-Easy-v0"))``)."""
    def factory() -> AgentgymEnvironment:
        return AgentgymEnvironment(env_id, protocol=protocol, max_turns=max_turns, **make_kwargs)

    factory()  # fail here, at build time, on an unknown id or bad kwargs, not on the first client
    app = http_server.create_app(factory, AgentgymAction, AgentgymObservation, env_name=env_id.replace("/", "_"),
                                 max_concurrent_envs=max_concurrent_envs, state_cls=AgentgymState)
    app.add_exception_handler(ResetRefused, _refused)
    return app


def _refused(request: Any, error: Exception) -> Any:
    """HTTP 422 in FastAPI's own shape for a :class:`ResetRefused` (``/reset``'s body was valid JSON, its
    ``task_index`` is not one this env has)."""
    from fastapi.responses import JSONResponse

    return JSONResponse(status_code=422, content={"detail": [{"loc": ["body", "task_index"], "msg": str(error),
                                                              "type": "value_error"}]})


def _observation(text: Any, reward: Any, done: bool, info: dict[str, Any]) -> AgentgymObservation:
    native = info.get("native_action")
    return AgentgymObservation(text=_utf8(str(text)), reward=float(reward), done=done,
                               action_valid=bool(info.get("action_valid", True)), won=bool(info.get("won", False)),
                               native_action=None if native is None else _utf8(str(native)), info=_json_safe(info))


def _utf8(text: str) -> str:
    """``text`` with each lone surrogate (a reply's ``"\\ud800"`` escape, echoed by the env) replaced by U+FFFD: it
    cannot be written as UTF-8, and the observation of a step the env has already taken must reach the client.
    Surrogate pairs become the characters they encode."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _json_safe(value: Any) -> Any:
    """``value`` as plain JSON types: numpy scalars unwrapped, non-finite floats as None, the rest as strings."""
    if isinstance(value, dict):
        return {_utf8(str(key)): _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_safe(item) for item in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return _utf8(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    return _utf8(str(value))
