"""``gateway.*``: how ``agentgym train rollout.source=gateway`` serves an external harness (docs/trainer.md, The gateway)."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError


@dataclass
class GatewayConfig:
    """The trainer's gateway: where it listens, which harness it starts, and how long it waits."""

    harness: str = ""
    """A command the trainer starts once (``AGENTGYM_GATEWAY_URL`` in its environment holds the gateway's URL) and
    stops after training; ``""``: start your harness yourself against the URL the trainer logs."""
    host: str = "127.0.0.1"
    port: int = 0
    """0: the OS picks a free port (logged, and passed to the harness)."""
    env_driven: bool = False
    """The gateway steps ``env.env_id`` with every reply and the env's rewards are the outcome (the harness
    does not post rewards); otherwise the harness plays the env and posts ``/sessions/{sid}/reward``."""
    model_name: str = "agentgym"
    step_timeout_s: float = 600.0
    """How long one step waits for its sessions; the ones still missing are counted lost (``infra_error``)."""
    session_ttl_s: float = 300.0
    """A session idle this long is ended as expired (kept, not trained on)."""
    max_sessions: int = 256
    max_calls: int = 64
    """Calls per session (an episode's turns); bounds the memory a session holds."""
    max_held_tokens: int = 8_000_000
    """Tokens all held sessions together may hold (~18 bytes each); a call that could pass it is refused (429)."""
    max_batch: int = 1
    """Concurrent sessions' calls sampled in one batch (trainer/serve/gateway/batcher.py): faster with many harness
    workers; 1 keeps every session's tokens a bit-for-bit function of its seed and requests."""

    def __post_init__(self) -> None:
        checks = [(self.step_timeout_s > 0, f"gateway.step_timeout_s must be > 0, got {self.step_timeout_s}"),
                  (self.session_ttl_s > 0, f"gateway.session_ttl_s must be > 0, got {self.session_ttl_s}"),
                  (self.max_sessions >= 1, f"gateway.max_sessions must be >= 1, got {self.max_sessions}"),
                  (self.max_calls >= 1, f"gateway.max_calls must be >= 1, got {self.max_calls}"),
                  (self.max_held_tokens >= 1, f"gateway.max_held_tokens must be >= 1, got {self.max_held_tokens}"),
                  (self.max_batch >= 1, f"gateway.max_batch must be >= 1, got {self.max_batch}"),
                  (0 <= self.port < 65536, f"gateway.port must be in 0..65535, got {self.port}")]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
