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
# SKIP_BUILD=1 keeps the package a previous call on the same (warm) machine installed.
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  if [ "${SKIP_BUILD:-0}" = 1 ] && [ -d /tmp/site/tilelang ]; then
    echo "SKIP_BUILD=1: keeping /tmp/site"
  else
    rm -rf /tmp/site build/cp3*; python3 -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/site . 2>&1 | tail -20
  fi
} > "$OUT/build.log" 2>&1
export PYTHONPATH=/tmp/site
export TILELANG_CACHE_DIR=/tmp/tl-cache
# tests/python are the CPU-target tests (numpy arrays), which CI runs; CPU_TESTS=1 runs
# them here too (about 5 minutes), on the CPU: tests/gpu name target="cuda" themselves.
: > "$OUT/pytest.log"
if [ "${CPU_TESTS:-0}" = 1 ]; then
  TILELANG_DEFAULT_TARGET=cpu python3 -m pytest tests/python -q -rs -p no:cacheprovider >> "$OUT/pytest.log" 2>&1
  echo "cpu-target pytest exit $?" >> "$OUT/pytest.log"
fi
# BENCH_ONLY=1 skips tests/gpu and the sanitizer (a second call for more benches, on a
# commit whose tests already ran).
if [ "${BENCH_ONLY:-0}" != 1 ]; then
  python3 -m pytest tests/gpu -q -rs -p no:cacheprovider >> "$OUT/pytest.log" 2>&1
  echo "pytest exit $?" >> "$OUT/pytest.log"
  # Shapes that do not divide their tiles, under compute-sanitizer: memcheck (out of
  # bounds, misaligned), racecheck (shared-memory hazards), synccheck (barriers);
  # SAN_TOOLS picks.
  SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  : > "$OUT/sanitizer.log"
  for tool in ${SAN_TOOLS-memcheck racecheck synccheck}; do
    echo "== compute-sanitizer --tool $tool" >> "$OUT/sanitizer.log"
    "$SAN" --tool "$tool" --error-exitcode 3 python3 tests/gpu/sanitize_tails.py >> "$OUT/sanitizer.log" 2>&1
    echo "compute-sanitizer $tool exit $?" >> "$OUT/sanitizer.log"
  done
fi
# UPSTREAM=1: the side-by-side with upstream TileLang (bench/upstream_cuda.py) in
# upstream.log. Upstream's wheel and its dependencies come installed in
# .whl/upsite.tar.xz, or as .whl/*.whl, and its examples in .upstream/examples (both
# made by tests/gpu/tools/stage_upstream.sh, carried with `carry: [".whl", ".upstream"]`);
# UPSTREAM_ARGS passes options (e.g. "--kernels gemm,mla_decode", "--all", or "--tuned" for
# the rows at the config each side's autotuner picks).
if [ "${UPSTREAM:-0}" = 1 ]; then
  {
    rm -rf /tmp/upsite && mkdir -p /tmp/upsite
    if [ -f .whl/upsite.tar.xz ]; then
      tar -xJf .whl/upsite.tar.xz -C /tmp/upsite
    else
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/upsite .whl/*.whl
    fi
    python3 bench/upstream_cuda.py --examples .upstream/examples --upstream-site /tmp/upsite \
      --ours-site /tmp/site ${UPSTREAM_ARGS:-}
    echo "upstream exit $?"
  } > "$OUT/upstream.log" 2>&1
fi
# UPSTREAM_EXAMPLES=1: upstream TileLang's examples (.upstream/examples, as for UPSTREAM)
# run unchanged with this package on the GPU at the small sizes of
# tests/upstream/examples_small.py, each checking itself against its torch reference;
# table in examples_small.md, logs in examples_small.log. EXAMPLES_ARGS passes options
# (e.g. "--only flash_attention").
if [ "${UPSTREAM_EXAMPLES:-0}" = 1 ]; then
  python3 tests/upstream/examples_small.py --source .upstream --gpu --arch sm_90a --timeout 120 \
    --out "$OUT" ${EXAMPLES_ARGS:-} > "$OUT/examples_small.log" 2>&1
  echo "examples exit $?" >> "$OUT/examples_small.log"
  for f in "$OUT"/examples_small_logs/*.log; do  # the failures' tracebacks, then the folder goes
    grep -q Traceback "$f" && { echo "== $(basename "$f")"; tail -25 "$f"; }
  done >> "$OUT/examples_small.log"
  rm -rf "$OUT/examples_small_logs"
fi
# UPSTREAM_SUITE="testing/python/language ...": TileLang's own test files in those
# directories of .upstream (a checkout's testing/ and examples/, carried) run unchanged
# on this GPU by tests/upstream/run.py (mode gpu, SUITE_JOBS files at a time, 300 s
# each or SUITE_FILE_SECONDS, the whole run stopped after SUITE_SECONDS); SUITE_MODE=sm80 or sm90a runs them
# in the CUDA emulator instead, on this machine's cores; its table.md and results.json in
# $OUT/suite (results.json names every test, its outcome and the first line of why).
# The packages TileLang's test environment has and the image lacks (apache-tvm-ffi,
# fla-core, einops: the wheels tests/gpu/tools/stage_upstream.sh --suite puts in
# .whl/suite, carried with .upstream) go to /tmp/suite-site, for the suite only.
if [ -n "${UPSTREAM_SUITE:-}" ]; then
  mkdir -p "$OUT/suite"
  read -ra suite_dirs <<< "$UPSTREAM_SUITE"
  suite_path=$PYTHONPATH
  if compgen -G ".whl/suite/*.whl" > /dev/null; then
    rm -rf /tmp/suite-site
    python3 -m pip install -q --no-index --no-deps --target /tmp/suite-site .whl/suite/*.whl >> "$OUT/suite/run.log" 2>&1
    suite_path=$PYTHONPATH:/tmp/suite-site
  fi
  PYTHONPATH=$suite_path timeout "${SUITE_SECONDS:-500}" python3 tests/upstream/run.py --source .upstream --mode "${SUITE_MODE:-gpu}" \
    --jobs "${SUITE_JOBS:-12}" --timeout "${SUITE_FILE_SECONDS:-300}" --out "$OUT/suite" --dirs "${suite_dirs[@]}" \
    >> "$OUT/suite/run.log" 2>&1
  echo "suite exit $?" >> "$OUT/suite/run.log"
  tail -1 "$OUT/suite/run.log"
fi
# BENCHES="gemm_cuda.py --paths wgmma;flash_attention_cuda.py" picks benches (and their
# arguments); unset runs them all (more than one 10-minute device call: pick), and
# BENCHES="" runs none.
# They all write to bench.log (at most 8 files come back from the device).
BENCHES=${BENCHES-compile_speed.py;jit_overhead_cuda.py;gemm_cuda.py;memory_bound_cuda.py;flash_attention_cuda.py;flash_attention_bwd_cuda.py;fp8_gemm_cuda.py;skinny_gemm_cuda.py;mla_decode_cuda.py;autotune_cuda.py}
IFS=';' read -ra benches <<< "$BENCHES"
: > "$OUT/bench.log"
for b in "${benches[@]}"; do
  echo "== bench/$b" >> "$OUT/bench.log"
  python3 bench/$b >> "$OUT/bench.log" 2>&1
  echo "== exit $?" >> "$OUT/bench.log"
done
cp bench/RESULTS.md "$OUT/RESULTS.md" 2>/dev/null || true
tail -3 "$OUT/pytest.log"
