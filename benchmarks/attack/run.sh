#!/bin/sh
# Evaluate each named strategy of server.py on a run's tasks: benchmarks/attack/run.sh RUN_DIR PORT STRATEGY...
RUN=$1; PORT=$2; shift 2
for s in "$@"; do
  OPENAI_BASE_URL=http://127.0.0.1:$PORT/v1 OPENAI_API_KEY=x OPENAI_MODEL=$s \
    nice -n 10 uv run --no-sync envkernel eval --plugins +openai --policy openai \
      --tasks "$RUN" --split all --k 1 --out /tmp/atk/eval --run-id "$s" > /tmp/atk/eval-$s.log 2>&1
  echo "$s exit=$?"
done
