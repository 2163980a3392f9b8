#!/usr/bin/env bash
# Stages what bench/upstream_cuda.py needs on a GPU machine without network access:
#   .whl/upsite.tar.xz    upstream TileLang's wheel and the dependencies the GPU image
#                         lacks, installed (pip install --target) for Python 3.12 on
#                         x86-64 Linux and packed with xz (about 41 MB for 0.1.15:
#                         under the 64 MiB that one device call carries);
#   .upstream/examples    upstream's example folders the default kernel list uses.
#   .whl/suite            with --suite, instead: the wheels TileLang's test suite
#                         imports that the GPU image lacks (apache-tvm-ffi, fla-core,
#                         einops; the versions of the conformance environment), which
#                         UPSTREAM_SUITE runs of run_on_gpu.sh install (carry .whl and
#                         .upstream).
# Usage: tests/gpu/tools/stage_upstream.sh [VERSION] [EXAMPLES_DIR]
#        tests/gpu/tools/stage_upstream.sh --suite
#   VERSION       upstream's release on PyPI (default 0.1.15)
#   EXAMPLES_DIR  a checkout's examples/ folder (default: a clone of
#                 https://github.com/tile-ai/tilelang in a temporary folder)
# Both .whl/ and .upstream/ are ignored by git; then, on the GPU machine,
#   UPSTREAM=1 BENCHES="" BENCH_ONLY=1 bash tests/gpu/run_on_gpu.sh
# with .whl and .upstream carried.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VERSION=${1:-0.1.15}
EXAMPLES=${2:-}
PY=${PYTHON:-python3}
if [ "${1:-}" = --suite ]; then
  rm -rf .whl/suite && mkdir -p .whl/suite
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl/suite \
    "apache-tvm-ffi==0.1.12" "fla-core==0.3.2" einops
  ls .whl/suite
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
  --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64
  --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
# Upstream's wheel and its requirements that the GPU image (torch, numpy, ml_dtypes,
# typing_extensions) does not already hold; versions within upstream's pins.
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d "$work/wheels" "tilelang==$VERSION" \
  "z3-solver>=4.13.0,<4.15.5" "apache-tvm-ffi>=0.1.11,<0.1.13" torch-c-dlpack-ext \
  cloudpickle psutil tqdm
"$PY" -m pip install -q --no-deps --no-index --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" --target "$work/site" "$work"/wheels/*.whl
mkdir -p .whl
# z3's command-line binary is not needed by the library (22 MB).
tar -cf - -C "$work/site" --exclude=./bin --exclude=./z3/include . | xz -T0 -9 > .whl/upsite.tar.xz
if [ -z "$EXAMPLES" ]; then
  git clone -q --depth 1 https://github.com/tile-ai/tilelang "$work/tilelang"
  EXAMPLES=$work/tilelang/examples
fi
rm -rf .upstream/examples && mkdir -p .upstream/examples
# The default kernel list's folders, and those tests/upstream/examples_small.py runs.
for d in gemm flash_attention deepseek_mla dequantize_gemm elementwise gemm_fp8 flash_decoding \
         gemm_sp norm convolution gemv attention_sink cast; do
  cp -r "$EXAMPLES/$d" .upstream/examples/
done
find .upstream/examples \( -name '*.png' -o -name '*.jpg' -o -name __pycache__ \) -prune -exec rm -rf {} +
grep -qx '/.upstream/' .git/info/exclude 2>/dev/null || echo '/.upstream/' >> .git/info/exclude
ls -la .whl/upsite.tar.xz
du -sh .upstream/examples
