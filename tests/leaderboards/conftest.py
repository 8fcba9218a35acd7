"""Fixtures for the leaderboard tests; the helpers live in ``lb_helpers`` (a unique module name, since
several test folders have a ``conftest``)."""

from lb_helpers import flaky_attempts  # noqa: F401  (a fixture)
