#!/usr/bin/env bash
# The GPU benchmark in one command, on a machine without network (one H100; Python 3.12 with torch, transformers and
# pandas; docs/performance.md, "GPU run"): installs the wheels of .whl/ the machine lacks (benchmarks/gpu_wheels.py),
# runs benchmarks/gpu_pointwise.py on the transformers path in bf16 for the Mistral-7B (FollowIR-7B) and Qwen3-8B
# (Qwen3-Reranker-8B) configurations, share_prefix off and on, each model under its own time limit, and writes the
# table to $OUT/gpu_pointwise.md (rows as JSON beside it). Extra arguments go to gpu_pointwise.py (--tiny: a CPU smoke run).
#
#   bash benchmarks/gpu_run.sh                 # ~5 minutes on one H100 (8 queries x 250 candidates per model)
#   QUERIES=20 MODEL_TIMEOUT=500 bash benchmarks/gpu_run.sh
#   MODELS=qwen3-reranker-8b bash benchmarks/gpu_run.sh    # one of the models only
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-results/gpu}
WHEELS=${WHEELS:-.whl}
SITE=${SITE:-$WHEELS/site}
mkdir -p "$OUT"
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$PY" benchmarks/gpu_wheels.py install --wheels "$WHEELS" --site "$SITE"
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')"
rows=()
for model in ${MODELS:-followir-7b qwen3-reranker-8b}; do
  rm -f "$OUT/$model.json"
  # a model that runs past its limit keeps the rows it finished (written after each run)
  timeout "${MODEL_TIMEOUT:-270}" "$PY" benchmarks/gpu_pointwise.py --backends hf --models "$model" \
    --queries "${QUERIES:-8}" --docs "${DOCS:-250}" --out "$OUT/$model.json" "$@" || echo "$model: exit status $?" >&2
  [ -f "$OUT/$model.json" ] && rows+=("$OUT/$model.json")
done
"$PY" benchmarks/gpu_pointwise.py --report "${rows[@]}" | tee "$OUT/gpu_pointwise.md"
