"""Shared test settings: hypothesis profiles with fixed derandomised seeds (determinism in CI)."""

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")
