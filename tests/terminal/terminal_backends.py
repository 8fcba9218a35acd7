"""The rule for a missing backend in the terminal tests: fail with the fix, unless left out on purpose.

CI runs ``scripts/setup_sandboxes.sh`` first; set ``AGENTGYM_SKIP_BACKENDS=docker`` to leave Docker out
deliberately (the same switch as the sandbox tests).
"""

from __future__ import annotations

import os

import pytest

import sandboxes

REAL_BACKENDS = sandboxes.REAL_BACKENDS
SKIPPED = {b.strip() for b in os.environ.get("AGENTGYM_SKIP_BACKENDS", "").split(",") if b.strip()}


def require_backend(backend: str) -> None:
    if backend in SKIPPED:
        pytest.skip(f"{backend} left out by AGENTGYM_SKIP_BACKENDS")
    problem = sandboxes.unavailable_reason(backend)
    if problem:
        pytest.fail(f"the {backend} backend cannot run here: {problem}", pytrace=False)
