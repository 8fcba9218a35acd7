"""Sandbox fixtures: one warm sandbox per real backend for the whole session, reset before each test.

Backends that cannot run fail rather than skip (see ``sandbox_backends.py``).
"""

from __future__ import annotations

import pytest
from sandbox_backends import require_backend

import sandboxes


@pytest.fixture(scope="session")
def warm_boxes():
    boxes: dict[str, sandboxes.SupervisedSandbox] = {}
    yield boxes
    for box in boxes.values():
        box.close()


@pytest.fixture(params=sandboxes.REAL_BACKENDS)
def backend(request) -> str:
    require_backend(request.param)
    return request.param


@pytest.fixture
def box(backend, warm_boxes) -> sandboxes.SupervisedSandbox:
    """A pristine sandbox of ``backend`` (the session's warm one, reset)."""
    if backend not in warm_boxes or not warm_boxes[backend].alive:
        warm_boxes[backend] = sandboxes.make(backend)
    else:
        warm_boxes[backend].reset()
    return warm_boxes[backend]
