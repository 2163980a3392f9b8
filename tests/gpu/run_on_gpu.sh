#!/usr/bin/env bash
# Builds tilelang-cpp on the GPU machine (no network there: nanobind,
# scikit-build-core, torch and numpy come from its image), then runs the tests
# and the benchmarks. Logs go to $OUT (at most 8 files come back).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/tl-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# The image's default CXX (/opt/gcc) links libstdc++ statically into the
# extension, which then crashes in iostreams next to the process's shared
# libstdc++; build with the system compiler instead.
[ -x /usr/bin/g++ ] && export CXX=/usr/bin/g++ CC=/usr/bin/gcc
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  rm -rf /tmp/site build/cp3*; python3 -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/site . 2>&1 | tail -20
} > "$OUT/build.log" 2>&1
export PYTHONPATH=/tmp/site
export TILELANG_CACHE_DIR=/tmp/tl-cache
# tests/python are the CPU-target tests (numpy arrays): keep them on the CPU here;
# tests/gpu name target="cuda" themselves.
TILELANG_DEFAULT_TARGET=cpu python3 -m pytest tests/python -q -rs -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "cpu-target pytest exit $?" >> "$OUT/pytest.log"
python3 -m pytest tests/gpu -q -rs -p no:cacheprovider >> "$OUT/pytest.log" 2>&1
echo "pytest exit $?" >> "$OUT/pytest.log"
# Shapes that do not divide their tiles, under compute-sanitizer memcheck.
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$SAN" --tool memcheck --error-exitcode 3 python3 tests/gpu/sanitize_tails.py > "$OUT/sanitizer.log" 2>&1
echo "compute-sanitizer exit $?" >> "$OUT/sanitizer.log"
python3 bench/compile_speed.py > "$OUT/bench_compile_speed.log" 2>&1
python3 bench/jit_overhead_cuda.py > "$OUT/bench_jit_overhead_cuda.log" 2>&1
python3 bench/gemm_cuda.py > "$OUT/bench_gemm_cuda.log" 2>&1
python3 bench/memory_bound_cuda.py > "$OUT/bench_memory_bound_cuda.log" 2>&1
cp bench/RESULTS.md "$OUT/RESULTS.md" 2>/dev/null || true
tail -3 "$OUT/pytest.log"
