#!/usr/bin/env bash
# A short GPU check while working on the CUDA path: build, the GPU tests of the
# GEMM/mma path and the GEMM bench (the full run is tests/gpu/run_on_gpu.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/tl-out}
mkdir -p "$OUT"
[ -x /usr/bin/g++ ] && export CXX=/usr/bin/g++ CC=/usr/bin/gcc
rm -rf /tmp/site build/cp3*
python3 -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/site . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export PYTHONPATH=/tmp/site TILELANG_CACHE_DIR=/tmp/tl-cache PYTHONUNBUFFERED=1
python3 -m pytest ${TESTS:-tests/gpu/test_mma_gpu.py tests/gpu/test_cuda_kernels.py} -q -x -p no:cacheprovider 2>&1 | tail -15 | tee "$OUT/pytest.log"
for b in ${BENCH:-bench/gemm_cuda.py}; do
  python3 "$b" 2>&1 | tee "$OUT/$(basename "$b" .py).log" | tail -25
done
cp bench/RESULTS.md "$OUT/RESULTS.md"
