#!/usr/bin/env bash
# The tests marked `verifiers` and `openenv` (the interop adapters driven by verifiers' and OpenEnv's own loops), each
# in its own virtualenv (built or reused by scripts/install_interop.sh: the two packages pin different `mcp`
# versions). scripts/test.sh runs this after the vLLM stage; the main suite deselects these tests. Extra arguments
# go to both pytest runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_interop.sh
status=0
# AGENTGYM_REQUIRE_*: a package that does not import is an error here, never a silent deselection
AGENTGYM_REQUIRE_VERIFIERS=1 .venv-verifiers/bin/python -m pytest -q -m verifiers \
  tests/interop/test_interop_verifiers.py tests/test_doctests.py "$@" || status=$?
AGENTGYM_REQUIRE_OPENENV=1 .venv-openenv/bin/python -m pytest -q -m openenv \
  tests/interop/test_interop_openenv.py tests/test_doctests.py "$@" || status=$?
exit "$status"
