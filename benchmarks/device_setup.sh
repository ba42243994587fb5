# Sourced by the device scripts (on_device_generator.sh, on_device_lease.sh): what every lease
# does before its runs. Needs WHEELS (a folder of wheels that travelled with the checkout) and OUT.
# The device image lacks a few pure-Python packages (omegaconf, antlr4 for Python 3.12): install
# them from the carried wheels into a private folder, never into the image's site-packages.
mkdir -p "$OUT"
if [ -d "$WHEELS" ] && ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl || exit 1
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
if command -v nvidia-smi >/dev/null; then
  GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  echo "GPU: $GPU"
  # The device tool's kind, for every row (H200 and H100 timings are not comparable).
  case "$GPU" in *H200*) KIND=nvidia-h200 ;; *H100*) KIND=nvidia-h100-x1 ;; *) KIND="$GPU" ;; esac
  export DEVICE_KIND=${DEVICE_KIND:-$KIND}
fi
