"""Which real backends the sandbox and terminal tests run on, and the rule for a missing one.

Real backends never skip silently: CI runs ``scripts/setup_sandboxes.sh`` first, so a backend that cannot
start is a failure with the reason. To leave one out on purpose (a laptop without Docker), set
``AGENTGYM_SKIP_BACKENDS=docker``.
"""

from __future__ import annotations

import os

import pytest

import sandboxes

SKIPPED = {b.strip() for b in os.environ.get("AGENTGYM_SKIP_BACKENDS", "").split(",") if b.strip()}


def require_backend(backend: str) -> None:
    """Skip only when asked to (AGENTGYM_SKIP_BACKENDS); otherwise a missing backend fails with the fix."""
    if backend in SKIPPED:
        pytest.skip(f"{backend} left out by AGENTGYM_SKIP_BACKENDS")
    problem = sandboxes.unavailable_reason(backend)
    if problem:
        pytest.fail(f"the {backend} backend cannot run here: {problem}", pytrace=False)
