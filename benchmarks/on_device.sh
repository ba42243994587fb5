#!/usr/bin/env bash
# Train the cpu.yaml retrievers on a lent GPU machine and benchmark them there.
#
#   bash benchmarks/on_device.sh STRATEGY DEADLINE_S SPLIT [SPLIT ...]
#   e.g. bash benchmarks/on_device.sh random 560 random/test leandojo-real/val
#
# cpu.yaml fixes every stage's optimiser steps to what its 45 CPU-minutes buy on the 2-core
# reference machine, so the GPU trains the shipped CPU recipe step for step, only faster; the
# rows' training records say which device ran them. Everything the run needs travels with the
# checkout in ignored folders (the device tool's `carry`): .whl/ (faiss-cpu, bm25s, omegaconf,
# antlr4 wheels for Python 3.12) and .devcarry/data/mathlib-src/ (corpus + the splits used).
# Training and benchmarks resume (a warm machine keeps runs/), and what is done by DEADLINE_S
# is packed under $OUT: results + rankings, logs, and the trained models without their cached
# embeddings (each archive under the tool's 16 MiB per file).
set -uo pipefail
STRATEGY=$1; DEADLINE=$2; shift 2
OUT=${OUT:-/tmp/device-out}
START=$(date +%s)
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }

# CONFIG, BENCH and DATA default to the device run's; a local rehearsal sets them to tiny ones.
CONFIG=${CONFIG:-configs/retriever/cpu-car.yaml}  # cpu.yaml and CAR: the whole comparison
BENCH=${BENCH:-configs/retrieval/benchmark_cpu.yaml}
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PROVER_DATA=${DATA:-$PWD/.devcarry/data} PYTHONUNBUFFERED=1
mkdir -p /tmp/bin
printf '#!/bin/sh\nexec python3 -c "import sys; from prover.cli import main; sys.exit(main())" "$@"\n' > /tmp/bin/prover
chmod +x /tmp/bin/prover
export PATH=/tmp/bin:$PATH
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || echo "no GPU: a rehearsal"
DEVICE=$(python3 -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')")

RUN=runs/retriever-$(basename "$CONFIG" .yaml | sed "s/-car$//")$([ "$STRATEGY" = random ] || echo "-$STRATEGY")
RES=runs/device-results
mkdir -p "$RES" "$OUT"
# Four stages at once: the GPU has room, and the longest chain (pretrain -> CFR -> CAR) decides.
timeout $(( $(left) - 120 )) python3 benchmarks/retriever_pipeline.py --config "$CONFIG" \
  --strategy "$STRATEGY" --run-dir "$RUN" --jobs 4 --no-benchmark
echo "training exit $? at $(( $(date +%s) - START )) s"

# The learned rows whose training finished (no-learning rows are computed on any CPU, into the
# same results file: a rerun there keeps these rows and adds its own).
ROWS=""
has() { [ -f "$RUN/$1/summary.json" ]; }
has reprover && ROWS="$ROWS,reprover"
has cfr-conventional && ROWS="$ROWS,cfr-conventional"
has cfr && ROWS="$ROWS,cfr,hybrid"
has car-conventional && ROWS="$ROWS,cfr-conventional+car-only,cfr-conventional+car"
ROWS="[${ROWS#,}]"
echo "rows: $ROWS"
for SPLIT in "$@"; do
  [ "$(left)" -gt 60 ] || break
  timeout $(( $(left) - 45 )) python3 benchmarks/retrieval.py --config "$BENCH" \
    data.split="$SPLIT" retriever.run_dir="$RUN" retriever.models="$CONFIG" retriever.device=$DEVICE robustness=false \
    results_dir="$RES" results_tag=cpu "retrievers=$ROWS"
  echo "benchmark $SPLIT exit $? at $(( $(date +%s) - START )) s"
done

tar czf "$OUT/results.tgz" -C "$RES" .
tar czf "$OUT/logs.tgz" "$RUN"/logs "$RUN"/*/summary.json "$RUN"/*/train_log.jsonl 2>/dev/null
for m in cfr-conventional cfr car-conventional reprover; do
  [ -d "$RUN/$m/model" ] && tar czf "$OUT/model-$m.tgz" --exclude='*.npy' "$RUN/$m/model" "$RUN/$m/summary.json"
done
ls -la "$OUT"
