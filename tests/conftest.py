"""Shared test settings: hypothesis profiles with fixed derandomised seeds (determinism in CI)."""

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")

# Triton kernels are tested through its interpreter on machines without a GPU. The variable must be set
# before anything (torch, transformers) first imports triton, so it is set here, at collection start.
import os
import shutil

if shutil.which("nvidia-smi") is None:
    os.environ.setdefault("TRITON_INTERPRET", "1")
