#!/usr/bin/env bash
# Builds the compiler core, the unit tests and the Python extension with AddressSanitizer
# and UndefinedBehaviorSanitizer (CMake option TL_SANITIZE) in build/asan, then runs
# ctest and a pytest subset (frontend, cpu runtime, cache, argument checks, emulator
# smoke) under them. Exits non-zero on any sanitizer report or failed test, or when the
# canaries' reports do not reach the log; the log is build/asan/sanitize.log.
# SKIP_BUILD=1 reuses the build as it is; PYTESTS picks other test files.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}
BUILD=${BUILD:-build/asan}
PYTESTS=${PYTESTS:-tests/python/test_errors.py tests/python/test_jit.py tests/python/test_cache.py
  tests/python/test_cpu_kernels.py tests/python/test_args_and_bounds.py tests/python/test_arg_safety.py
  tests/python/test_emulator.py}
# Upper bound on the pytest part (which takes 4 to 8 minutes with JOBS=1 on two cores).
PYTEST_TIMEOUT=${PYTEST_TIMEOUT:-1800}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTL_SANITIZE=ON -DTL_BUILD_TESTS=ON \
    -DTL_BUILD_EXAMPLES=ON -DPython_EXECUTABLE="$($PYTHON -c 'import sys; print(sys.executable)')" >/dev/null
  cmake --build "$BUILD" -j "$JOBS"
fi
BUILD=$(cd "$BUILD" && pwd)

log="$BUILD/sanitize.log"
reports="$BUILD/sanitizer-reports"
: >"$log"
# clear_shadow_mmap_threshold: the cpu runtime's fibers switch 1 MiB stacks with
# swapcontext, and ASan clears the shadow of the stack it switches to. Above the
# default 64 KiB of shadow it does that with mmap, one system call per fiber switch,
# which made the emulator tests three times slower; memset does the same clearing.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=0:clear_shadow_mmap_threshold=4194304
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TILELANG_CACHE_DIR="$BUILD/test-cache"

status=0
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" 2>&1 | tee -a "$log" || status=1

# Python itself is not instrumented, so the ASan runtime is preloaded for the
# extension's instrumented code to find it first. libstdc++ is preloaded with it:
# ASan looks up the real __cxa_throw once, when it starts, and the interpreter does
# not link libstdc++; loaded later (with the extension) it is not found, and the
# first C++ exception thrown by the extension aborts in ASan's __cxa_throw
# interceptor ("CHECK failed: ... real___cxa_throw != 0"). Leak detection stays off
# (the interpreter keeps its objects to exit).
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
cxx=${cxx:-g++}
preload="$("$cxx" -print-file-name=libasan.so) $("$cxx" -print-file-name=libstdc++.so.6)"
# The host compiler that builds the kernels is not under test: it runs without the
# preloaded runtime, which would only slow it down.
host_cxx="$BUILD/host-cxx"
printf '#!/bin/sh\nunset LD_PRELOAD\nexec %s "$@"\n' "${TILELANG_CXX:-${CXX:-c++}}" >"$host_cxx"
chmod +x "$host_cxx"

# Runs pytest on the given files under the sanitizers; $1 is the folder for ASan's
# report files, which are appended to the output.
# pytest captures each test's stderr at the file descriptor and loses it when the
# process aborts, so a report printed there never reached this log. ASan writes its
# reports to files (one per process, the examples and cache workers that tests
# start included); UBSan cannot (its runtime's log_path setting ends up in the
# preloaded ASan runtime, which exports the same symbol), so pytest leaves the file
# descriptors alone (--capture=sys) and UBSan's reports reach stderr. A worker that
# a report ends is not replaced: xdist would rerun the same test in the next one.
run_pytest() {
  local dir=$1
  shift
  rm -rf "$dir"
  mkdir -p "$dir"
  LD_PRELOAD="$preload" ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$dir/asan" TILELANG_CXX="$host_cxx" \
    TILELANG_DEV_BUILD_DIR="$BUILD" PYTHONPATH="$PWD/python" \
    timeout "$PYTEST_TIMEOUT" "$PYTHON" -m pytest "$@" -q -n "$JOBS" --dist loadfile --capture=sys \
    --max-worker-restart=0 -p no:cacheprovider 2>&1
  local rc=$?
  local f body
  for f in "$dir"/*; do
    [ -e "$f" ] || continue
    # Each process that runs a cpu kernel warns once that ASan does not fully support
    # swapcontext (the runtime's fibers); that warning is not a report.
    body=$(grep -v "WARNING: ASan doesn't fully support makecontext/swapcontext" "$f" || true)
    [ -n "$body" ] || continue
    echo "== $f"
    echo "$body"
  done
  return $rc
}
pattern="ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|CHECK failed"

# First the canaries (tests/sanitize_canary.py): an ASan and a UBSan report, each
# ending its run, must reach the log, or a clean log below would prove nothing.
canary_log="$BUILD/sanitize-canary.log"
: >"$canary_log"
for canary in asan ubsan; do
  run_pytest "$BUILD/sanitizer-canary-$canary" "tests/sanitize_canary.py::test_${canary}_report_reaches_the_log" \
    >>"$canary_log" && status=1
done
asan_canary=$(grep -c "ERROR: AddressSanitizer: heap-buffer-overflow" "$canary_log" || true)
ubsan_canary=$(grep -c "runtime error: execution reached an unreachable program point" "$canary_log" || true)
echo "canary reports: ASan $asan_canary, UBSan $ubsan_canary (log: $canary_log)"
if [ "$asan_canary" -eq 0 ] || [ "$ubsan_canary" -eq 0 ]; then
  echo "sanitizer reports do not reach the log; not trusting the run"
  status=1
fi

tests=()
for t in $PYTESTS; do [ -f "$t" ] && tests+=("$t"); done
start=$(date +%s)
run_pytest "$reports" "${tests[@]}" | tee -a "$log" || status=1
echo "pytest part: $(($(date +%s) - start)) s"

count=$(grep -cE "$pattern" "$log" || true)
echo "sanitizer reports: $count (log: $log)"
grep -E -A12 "$pattern" "$log" | head -n 60 || true
[ "$count" -eq 0 ] && [ "$status" -eq 0 ]
