#!/usr/bin/env bash
# One lent GPU, one call: train a tactic generator from scratch and score it (issue 38).
#
#   bash benchmarks/on_device_generator.sh DEADLINE_S [key=value ...]
#
# Everything it reads travels with the checkout in ignored folders (the device tool's `carry`):
# .devcarry/gen/ (`python benchmarks/device_generator.py pack`, run here first) and .whl/
# (omegaconf and antlr4 for Python 3.12: what the device image lacks). No Ray, corpus or index is
# needed there. What is done by DEADLINE_S (counted from this script's start, install included) is
# packed under $OUT: results.tgz (results JSON/Markdown and per-example outcomes: land them with
# `python benchmarks/device_generator.py land`), train.tgz (the training logs and summaries) and the
# trained model's bf16 weights, model-part-NN.safetensors (land reassembles them; issue 54).
# CONFIG and PACK default to the device run's; the rehearsal (tests/test_device_generator.py) sets
# tiny ones and runs this same script on a CPU.
set -uo pipefail
export START_EPOCH=$(date +%s)
DEADLINE=$1; shift
OUT=${OUT:-/tmp/device-out}
CONFIG=${CONFIG:-configs/generator/device.yaml}
PACK=${PACK:-.devcarry/gen}
WHEELS=${WHEELS:-.whl}
source "$(dirname "$0")/device_setup.sh"
RES=$(mktemp -d)
# The results are packed whatever the run's end: a deadline or a crash still returns its rows. The
# run's own deadline is 20 s before DEADLINE and `timeout` stops it 10 s before: the run ends its
# phases itself (the second lease's run finished at its deadline and `timeout` fired as it exited).
timeout $(( ${DEADLINE%.*} - $(date +%s) + START_EPOCH - 10 )) \
  python3 benchmarks/device_generator.py run --config "$CONFIG" --pack "$PACK" --deadline $(( ${DEADLINE%.*} - 20 )) --out "$RES" --parts "$OUT" "$@" \
  2>&1 | tee "$RES/run.log"
STATUS=${PIPESTATUS[0]}
echo "run exit $STATUS at $(( $(date +%s) - START_EPOCH )) s"
tar czf "$OUT/train.tgz" -C "$RES" run.log $(cd "$RES" && ls train*/summary.json train*/train_log.jsonl 2>/dev/null)
tar czf "$OUT/results.tgz" -C "$RES" --exclude=train --exclude=train-bare --exclude=run.log .
ls -la "$OUT"
exit $STATUS
