#!/usr/bin/env bash
# Where a kernel's instructions go, per SASS instruction: ncu's source counters for the
# kernels that a Python script launches, summarized by sass_counts.py.
#   NCUPY=script.py [KERNELS='regex:tl_kernel|nvjet'] [SKIP=3] [COUNT=3] \
#     bash tests/gpu/tools/ncu_sass_counts.sh
# SKIP launches of the matching kernels are passed over (warm-up), then COUNT are
# profiled. $OUT gets ncu.log, the source page as src.csv.gz and the summary.
# Needs ncu with hardware counters (the H200 machine has them, with --clock-control none).
set -u
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/tl-out}
mkdir -p "$OUT"
[ -x /usr/bin/g++ ] && export CXX=/usr/bin/g++ CC=/usr/bin/gcc
if [ "${REBUILD:-1}" = 1 ] || [ ! -d /tmp/site/tilelang ]; then
  rm -rf /tmp/site build/cp3*
  python3 -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/site . > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
fi
export PYTHONPATH=/tmp/site:$PWD/bench:$PWD/examples TILELANG_CACHE_DIR=/tmp/tl-cache
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
"$NCU" --clock-control none -k "${KERNELS:-regex:tl_kernel|nvjet}" --launch-skip "${SKIP:-3}" \
  --launch-count "${COUNT:-3}" --section SourceCounters --section InstructionStats -f -o /tmp/sass_counts \
  python3 "$NCUPY" > "$OUT/ncu.log" 2>&1 || { tail -20 "$OUT/ncu.log"; exit 1; }
"$NCU" -i /tmp/sass_counts.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2> "$OUT/src.err"
gzip -c /tmp/src.csv > "$OUT/src.csv.gz"
python3 tests/gpu/tools/sass_counts.py /tmp/src.csv | tee "$OUT/sass_counts.txt"
