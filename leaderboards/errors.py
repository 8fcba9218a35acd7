"""The leaderboards' exceptions: each message says what was expected, what came, and what to do.

The CLI prints these without a traceback and exits with status 2; anything else is a bug and keeps its
traceback. None of them is raised after a store write has begun, so stored results are never lost to one.
"""

from __future__ import annotations


class LeaderboardError(Exception):
    """Base class of leaderboard errors (user-facing: printed without a traceback)."""


class SuiteError(LeaderboardError, ValueError):
    """A suite file is missing, malformed, or names an unknown env or family."""


class PolicySpecError(LeaderboardError, ValueError):
    """A ``--policy`` SPEC does not match any of the accepted forms."""


class PolicyLoadError(LeaderboardError):
    """A well-formed SPEC names something that cannot be loaded (missing directory, missing package)."""


class StoreError(LeaderboardError):
    """The results store cannot be opened safely (not SQLite, corrupted, newer schema, mismatched suite)."""


class RunAborted(LeaderboardError):
    """The run stopped early (an endpoint down, too many infrastructure failures); finished episodes are kept."""
