"""The trajectory-capturing gateway: train agents whose loop we do not own (docs/trainer.md, The gateway).

An external harness (any code that talks to an OpenAI-compatible endpoint) opens a session, points its client at
``…/sessions/{sid}/v1`` and runs its own loop; the gateway samples every reply with the trainer's token policy and
records the exact prompt ids, sampled ids and log-probs (:mod:`.sessions`: token-in, prefix fingerprint,
segments when history is rewritten), serves OpenAI-format responses with tool calls parsed by our protocol layer
(:mod:`.wire`, :mod:`.server`), takes the outcome from ``POST /sessions/{sid}/reward`` or from an agentgym env it
steps itself (:mod:`.envs`), and turns finished sessions into the trainer's trajectories (:mod:`.assemble`).
``agentgym train rollout.source=gateway`` trains from them (:mod:`.source`); ``agentgym gateway`` serves one.
"""

from importlib import import_module
from typing import Any

#: name -> submodule; imported on first use, so ``trainer.config`` (which needs only ``.config``) stays light.
_EXPORTS = {"check_session": "assemble", "logprob_gap": "assemble", "to_trajectory": "assemble",
            "GatewayLimits": "server", "GatewayServer": "server",
            "Segment": "sessions", "Session": "sessions", "SessionError": "sessions", "fingerprint": "sessions"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'trainer.serve.gateway' has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
