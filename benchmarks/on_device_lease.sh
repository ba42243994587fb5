#!/usr/bin/env bash
# One lent GPU, one call: the retriever's lease (issue 64), then the generator's if time is left.
#
#   bash benchmarks/on_device_lease.sh DEADLINE_S [key=value ...]     (overrides for the retriever's run)
#
# Everything it reads travels with the checkout in ignored folders (the device tool's `carry`):
# .devcarry/retriever/ (`python benchmarks/device_retriever.py pack`), .devcarry/gen/
# (`python benchmarks/device_generator.py pack`) and .whl/ (omegaconf and antlr4 for Python 3.12).
# Each stage has its own time limit and the whole ends by DEADLINE_S (counted from this script's
# start, install included; one call may run 600 s):
#   1. the retriever (benchmarks/device_retriever.py run): MLM, then conventional CFR, each within
#      its `lease.*_seconds`; the encoder's bf16 parts retriever-part-NN.safetensors and
#      retriever.tgz (timing: examples/s and the share of the bf16 rate measured in this call);
#   2. the generator (benchmarks/device_generator.py run, as on_device_generator.sh runs it) with
#      what is left, if at least GENERATOR_MIN_S (240 s): train.tgz, results.tgz, and its model's
#      parts if they fit beside the encoder's (they do not at device.yaml's sizes: its rows come back).
# RCONFIG, RPACK, GCONFIG, GPACK default to the device run's; the rehearsal
# (tests/test_device_retriever.py) sets tiny ones and runs this same script on a CPU.
set -uo pipefail
export START_EPOCH=$(date +%s)
DEADLINE=$1; shift
OUT=${OUT:-/tmp/device-out}
RCONFIG=${RCONFIG:-configs/retriever/lease.yaml}
RPACK=${RPACK:-.devcarry/retriever}
GCONFIG=${GCONFIG:-configs/generator/device.yaml}
GPACK=${GPACK:-.devcarry/gen}
GENERATOR_MIN_S=${GENERATOR_MIN_S:-240}
WHEELS=${WHEELS:-.whl}
left() { echo $(( ${DEADLINE%.*} - ($(date +%s) - START_EPOCH) )); }
source "$(dirname "$0")/device_setup.sh"

# 1. The retriever: its own deadline leaves the generator's minimum when it can (the stages keep
# their seconds either way; `timeout` is the last guard).
RES=$(mktemp -d)
timeout $(( $(left) - 10 )) python3 benchmarks/device_retriever.py run --config "$RCONFIG" --pack "$RPACK" \
  --deadline $(( ${DEADLINE%.*} - 20 )) --out "$RES" --parts "$OUT" "$@" 2>&1 | tee "$RES/run.log"
RSTATUS=${PIPESTATUS[0]}
echo "retriever exit $RSTATUS at $(( $(date +%s) - START_EPOCH )) s"
tar czf "$OUT/retriever.tgz" -C "$RES" .

# 2. The generator, with what is left (its own script's steps, in this process tree).
GSTATUS=0
if [ -f "$GPACK/manifest.json" ] && [ "$(left)" -ge "$GENERATOR_MIN_S" ]; then
  USED=$(du -cm "$OUT"/retriever-part-*.safetensors "$OUT/retriever.tgz" 2>/dev/null | tail -1 | cut -f1)
  ROOM=$(( 60 - ${USED:-0} ))  # MiB left for the generator's parts beside its two archives
  GRES=$(mktemp -d)
  timeout $(( $(left) - 10 )) python3 benchmarks/device_generator.py run --config "$GCONFIG" --pack "$GPACK" \
    --deadline $(( ${DEADLINE%.*} - 20 )) --out "$GRES" --parts "$OUT" "lease.return_mib=$ROOM" 2>&1 | tee "$GRES/run.log"
  GSTATUS=${PIPESTATUS[0]}
  echo "generator exit $GSTATUS at $(( $(date +%s) - START_EPOCH )) s"
  tar czf "$OUT/train.tgz" -C "$GRES" run.log $(cd "$GRES" && ls train*/summary.json train*/train_log.jsonl 2>/dev/null)
  tar czf "$OUT/results.tgz" -C "$GRES" --exclude=train --exclude=train-bare --exclude=run.log .
else
  echo "generator: not run ($(left) s left, at least $GENERATOR_MIN_S needed, pack ${GPACK})"
fi
ls -la "$OUT"
exit $RSTATUS
