#!/usr/bin/env bash
# Builds the compiler core, the unit tests and the Python extension with AddressSanitizer
# and UndefinedBehaviorSanitizer (CMake option TL_SANITIZE) in build/asan, then runs
# ctest and a pytest subset (frontend, cpu runtime, cache, argument checks, emulator
# smoke) under them. Exits non-zero on any sanitizer report; the log is build/asan/sanitize.log.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}
BUILD=${BUILD:-build/asan}
PYTESTS=${PYTESTS:-tests/python/test_errors.py tests/python/test_jit.py tests/python/test_cache.py
  tests/python/test_cpu_kernels.py tests/python/test_args_and_bounds.py tests/python/test_arg_safety.py
  tests/python/test_emulator.py}

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTL_SANITIZE=ON -DTL_BUILD_TESTS=ON \
  -DTL_BUILD_EXAMPLES=ON -DPython_EXECUTABLE="$($PYTHON -c 'import sys; print(sys.executable)')" >/dev/null
cmake --build "$BUILD" -j "$JOBS"

log="$BUILD/sanitize.log"
: >"$log"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TILELANG_CACHE_DIR="$PWD/$BUILD/test-cache"

TILELANG_CACHE_DIR="$TILELANG_CACHE_DIR" ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" 2>&1 | tee -a "$log"

# Python itself is not instrumented: the ASan runtime is preloaded so that the
# extension's instrumented code finds it. Leak detection stays off (the interpreter
# keeps its objects to exit).
tests=()
for t in $PYTESTS; do [ -f "$t" ] && tests+=("$t"); done
LD_PRELOAD="$($PYTHON -c 'import subprocess; print(subprocess.check_output(["g++", "-print-file-name=libasan.so"], text=True).strip())')" \
  TILELANG_DEV_BUILD_DIR="$PWD/$BUILD" PYTHONPATH="$PWD/python" \
  "$PYTHON" -m pytest "${tests[@]}" -q -n "$JOBS" --dist loadfile -p no:cacheprovider 2>&1 | tee -a "$log"

reports=$(grep -cE "ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer" "$log" || true)
echo "sanitizer reports: $reports"
[ "$reports" -eq 0 ]
