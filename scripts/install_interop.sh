#!/usr/bin/env bash
# The interop virtualenvs (git-ignored), where the tests marked `verifiers` and `openenv` run (scripts/test_interop.sh):
#   bash scripts/install_interop.sh [verifiers|openenv|all]   # build, or reuse when it matches this recipe (~1 s)
# verifiers 0.4.0 and openenv 0.10.0 pin different `mcp` versions, so each adapter gets a virtualenv of its own, built
# with uv (from .venv, or installed there with pip when missing), holding this package editable WITHOUT its
# dependencies plus the few packages the tests import; no torch:
# * .venv-verifiers: verifiers with its dependencies; `uv` itself (verifiers' subprocess runtime prepares its chat
#   harness program with `uv sync --script`); and chat-wheels/, the wheels of that program's packages, so that a test
#   run resolves them from disk and talks to loopback only (tests/interop/test_interop_verifiers.py).
# * .venv-openenv: openenv WITHOUT its dependencies, plus those its server and client import: no gradio (openenv loads
#   its web UI only when gradio is installed), which would add ~180 MB and ~15 s to every import.
set -euo pipefail
cd "$(dirname "$0")/.."

WHICH=${1:-all}
PYTHON=${PYTHON:-python3}
TEST_DEPS=("gymnasium>=1.0" "pettingzoo>=1.24" "numpy>=1.26" "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100")
VERIFIERS=("verifiers==0.4.0" "uv==0.13.9")
OPENENV=("openenv==0.10.0")
OPENENV_DEPS=("fastapi>=0.116.0" "pydantic>=2.0.0" "uvicorn>=0.24.0" "websockets>=15.0.1" "fastmcp>=3.0.0,<4.0.0"
              "httpx>=0.28.1" "requests>=2.25.0" "packaging>=24.2" "typing_extensions>=4.0.0")

case "$WHICH" in
  verifiers|openenv|all) ;;
  *) echo "install_interop.sh: expected verifiers, openenv or all, got '$WHICH'" >&2; exit 2 ;;
esac

uv_bin() {  # uv from PATH or .venv, else installed into .venv (scripts/install.sh made it)
  if command -v uv >/dev/null 2>&1; then command -v uv; return; fi
  if [ ! -x .venv/bin/uv ]; then
    [ -x .venv/bin/python ] || { echo "install_interop.sh: no uv, no .venv: run bash scripts/install.sh" >&2; exit 1; }
    .venv/bin/python -m pip install -q "uv==0.13.9" 2>&1 | grep -v "^WARNING: Location" >&2 || true
  fi
  echo "$PWD/.venv/bin/uv"
}

ready() {  # $1 venv, $2 recipe, $3 module: the recipe matches, the module imports, agentgym_envs is this checkout
  [ -f "$1/.agentgym-recipe" ] && [ "$(cat "$1/.agentgym-recipe")" = "$2" ] &&
    (repo=$PWD && cd / && "$1/bin/python" - "$repo" "$3" >/dev/null 2>&1 <<'PY'
import importlib.util as u, os, sys
found = [u.find_spec(m) for m in (sys.argv[2], "agentgym_envs", "pytest", "gymnasium")]
sys.exit(not (all(found) and os.path.realpath(found[1].origin).startswith(os.path.realpath(sys.argv[1]) + os.sep)))
PY
    )
}

chat_wheels() {  # the wheels of verifiers' chat harness program's packages (its PEP 723 header), into $1/chat-wheels
  local venv=$1 reqs
  reqs=$(mktemp)
  "$venv/bin/python" - >"$reqs.in" <<'PY'
import ast, importlib.util, pathlib, re
root = pathlib.Path(importlib.util.find_spec("verifiers").origin).parent  # read, not imported: importing costs ~10 s
source = (root / "v1/harnesses/utils/launch.py").read_text()
print("\n".join(ast.literal_eval(re.search(r"# dependencies = (\[.*?\])", source).group(1))))
PY
  "$UV" pip compile -q --python "$venv/bin/python" "$reqs.in" -o "$reqs"
  rm -rf "$venv/chat-wheels"
  "$PYTHON" -m pip download -q --no-deps --only-binary=:all: -d "$venv/chat-wheels" -r "$reqs" 2>&1 |
    grep -v "^WARNING: Location" >&2 || true
  rm -f "$reqs" "$reqs.in"
  ls "$venv/chat-wheels"/*.whl >/dev/null  # fails the build when nothing came
}

build() {  # $1 name ("verifiers" | "openenv")
  local name=$1 venv="$PWD/.venv-$1" recipe start module
  if [ "$name" = verifiers ]; then module=verifiers.v1; recipe="1 ${VERIFIERS[*]} ${TEST_DEPS[*]}"
  else module=openenv.core; recipe="1 ${OPENENV[*]} --no-deps ${OPENENV_DEPS[*]} ${TEST_DEPS[*]}"; fi
  if ready "$venv" "$recipe" "$name" && { [ "$name" = openenv ] || ls "$venv/chat-wheels"/*.whl >/dev/null 2>&1; }; then
    echo "install_interop.sh: .venv-$name is ready"
    return
  fi
  start=$(date +%s)
  rm -rf "$venv"
  "$UV" venv -q --python "$PYTHON" "$venv"
  if [ "$name" = verifiers ]; then
    "$UV" pip install -q --python "$venv/bin/python" "${VERIFIERS[@]}" "${TEST_DEPS[@]}"
  else
    "$UV" pip install -q --python "$venv/bin/python" --no-deps "${OPENENV[@]}"
    "$UV" pip install -q --python "$venv/bin/python" "${OPENENV_DEPS[@]}" "${TEST_DEPS[@]}"
  fi
  "$UV" pip install -q --python "$venv/bin/python" --no-deps -e .
  [ "$name" = verifiers ] && chat_wheels "$venv"
  (cd / && "$venv/bin/python" -c "import importlib.metadata as m, importlib.util as u
assert u.find_spec('$module') and u.find_spec('agentgym_envs.interop'), 'expected $module and agentgym_envs to resolve'
print('install_interop.sh: $name', m.version('$name'))")
  echo "$recipe" >"$venv/.agentgym-recipe"
  echo "install_interop.sh: built .venv-$name in $(( $(date +%s) - start )) s"
}

UV=$(uv_bin)
[ "$WHICH" = openenv ] || build verifiers
[ "$WHICH" = verifiers ] || build openenv
