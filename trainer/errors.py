"""The trainer's exceptions: messages say what was expected, what came, and what to do."""

from __future__ import annotations


class TrainerError(Exception):
    """Base class of trainer errors."""


class PrefixExtensionError(TrainerError):
    """A turn's rendered prompt does not extend the previous turn's text: the chat template rewrote history.

    Training on such episodes would score tokens the policy never saw (the classic multi-turn bug), so the
    rollout stops instead. Typical cause: templates that drop ``<think>`` blocks of earlier assistant turns
    or re-format past messages; train such templates with ``rollout.sample_unit=turn`` (or ``auto``), or
    use one that renders past turns verbatim (``policy.chat_template`` / ``policy.chat_template_kwargs``).
    A reply that ends with a stop id other than the template's end-of-turn id is not this case (see
    :meth:`trainer.models.backends.chat_tokens.ChatTokens.decode_as_turn`).
    """


class ConfigError(TrainerError, ValueError):
    """A configuration value is invalid; the message names the field and the remedy."""


class CheckpointError(TrainerError):
    """A checkpoint is missing, incomplete or from an incompatible config."""


class BackendError(TrainerError, RuntimeError):
    """A generation backend failed for a reason outside the caller's input (an engine that did not start,
    died, or returned something malformed); the message says which and what it returned."""


def require(ok: bool, message: str) -> None:
    """Raise :class:`ConfigError` with ``message`` unless ``ok``: how each settings dataclass checks its fields."""
    if not ok:
        raise ConfigError(message)
