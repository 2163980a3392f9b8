"""The sm_80 device building blocks (device/cuda/gemm_sm80.cuh, swizzle.cuh,
copy_async.cuh, warp.cuh) without a GPU: the test kernels of device_sm80_kernels.cu
run on the CPU through the emulation shims (device/emu), whose ldmatrix, mma.sync,
shuffle and cp.async twins move data as the PTX ISA specifies, and are compared with
numpy; the same file compiles with NVRTC for sm_80 and sm_90, with the gemm
accumulators in registers (no stack frame)."""

import concurrent.futures
import ctypes
import os
import pathlib
import re
import subprocess

import ml_dtypes
import numpy as np
import pytest

HERE = pathlib.Path(__file__).parent
KERNELS = HERE / "device_sm80_kernels.cu"
DEVICE = HERE.parents[1] / "device"
# The names src/runtime/cuda/cuda_api.cpp tries.
NVRTC_NAMES = ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so")
rng = np.random.default_rng(80)


def _loadable(name):
    try:
        ctypes.CDLL(name)
        return True
    except OSError:
        return False


needs_nvrtc = pytest.mark.skipif(
    not any(_loadable(n) for n in NVRTC_NAMES), reason="NVRTC (libnvrtc.so) is not on this machine"
)


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    """The test kernels built for the CPU against the emulation shims."""
    lib = tmp_path_factory.mktemp("sm80") / "kernels.so"
    cxx = os.environ.get("TILELANG_CXX") or os.environ.get("CXX") or "c++"
    # -O0: a third of -O1's compile time, and the runs stay well under a second each.
    flags = ["-std=c++17", "-O0", "-fPIC", "-shared", "-w", "-x", "c++"]
    flags += ["-include", str(DEVICE / "emu" / "cuda_emu.h")]
    flags += [f"-I{DEVICE / 'cuda'}", f"-I{DEVICE / 'cpu'}"]
    out = subprocess.run(
        [cxx, *flags, str(KERNELS), "-o", str(lib)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    return ctypes.CDLL(str(lib))


def take_failure(lib):
    """The race or assert message the emulator recorded during the last launch, or None."""
    message = ctypes.create_string_buffer(4096)
    block = (ctypes.c_int64 * 3)()
    if lib.tl_debug_take_assert(message, ctypes.c_int64(len(message)), block) == 0:
        return None
    return message.value.decode()


def launch(lib, entry, *arrays):
    """Runs entry on the CPU; returns the race or assert message it recorded, or None."""
    fn = getattr(lib, entry)
    fn.restype = None
    fn(*[ctypes.c_void_p(a.ctypes.data) for a in arrays])
    return take_failure(lib)


@pytest.fixture(scope="module")
def run(emu):
    """run(entry, threads, shared_bytes, *arrays): one block of entry, arrays updated in place.
    tests/gpu/test_device_sm80_gpu.py runs the same tests with a GPU `run`."""

    def run_emulated(entry, threads, shared_bytes, *arrays):
        failure = launch(emu, entry, *arrays)
        assert failure is None, f"{entry}: {failure}"

    return run_emulated


# ---- swizzle


def swizzle_reference(rows, cols, elem_bytes):
    vec, row_bytes = 16 // elem_bytes, cols * elem_bytes
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    if row_bytes % 128 == 0:
        key = r % 8
    elif row_bytes == 64:
        key = (r // 2) % 4
    elif row_bytes == 32:
        key = (r // 4) % 2
    else:
        key = np.zeros_like(r)
    return r * cols + ((c // vec) ^ key) * vec + c % vec


@pytest.mark.parametrize(
    "rows, cols, elem_bytes",
    [(16, 64, 2), (16, 32, 2), (16, 16, 2), (16, 24, 2), (16, 32, 4), (16, 64, 1)],
)
def test_swizzle_offsets(run, rows, cols, elem_bytes):
    out = np.full(rows * cols, -1, np.int32)
    run(f"swizzle_{rows}x{cols}x{elem_bytes}", 64, 0, out)
    ref = swizzle_reference(rows, cols, elem_bytes)
    np.testing.assert_array_equal(out.reshape(rows, cols), ref)
    # A permutation within each row: every element keeps its row, none collide.
    for r in range(rows):
        np.testing.assert_array_equal(np.sort(ref[r]), r * cols + np.arange(cols))


# ---- ldmatrix


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_fragment_layout(run, num, trans):
    src = rng.integers(0, 1 << 16, (32, 8), dtype=np.uint16)
    perm = rng.permutation(32).astype(np.int32)
    out = np.zeros((32, 4), np.uint32)
    run(f"ldmatrix_x{num}{'_trans' if trans else ''}", 32, 512, src, perm, out)
    for i in range(num):
        mat = src[perm[8 * i : 8 * i + 8]].astype(np.uint32)  # row r from lane 8i + r
        if trans:
            mat = mat.T
        lanes = np.arange(32)
        lo, hi = mat[lanes // 4, 2 * (lanes % 4)], mat[lanes // 4, 2 * (lanes % 4) + 1]
        np.testing.assert_array_equal(out[:, i], lo | (hi << 16), err_msg=f"matrix {i}")


# ---- gemm_ss / gemm_rs


def random_operand(dtype, shape):
    if dtype == "f16":
        return rng.standard_normal(shape).astype(np.float16)
    if dtype == "bf16":
        return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)
    if dtype == "tf32":  # plain floats: the gemm rounds them to tf32
        return rng.standard_normal(shape).astype(np.float32)
    if dtype == "s8":
        return rng.integers(-128, 128, shape, dtype=np.int8)
    return rng.integers(0, 256, shape, dtype=np.uint8)


def accumulator(dtype, shape):
    if dtype in ("s8", "u8"):
        return rng.integers(-1000, 1000, shape, dtype=np.int32)
    return rng.standard_normal(shape).astype(np.float32)


def to_tf32(x):
    """cvt.rna.tf32.f32: keep 10 mantissa bits, round to nearest, ties away from zero."""
    return ((x.view(np.uint32) + 0x1000) & 0xFFFFE000).view(np.float32)


def reference(a, b, c0):
    if a.dtype == np.float32:
        a, b = to_tf32(a), to_tf32(b)
    wide = np.int64 if c0.dtype == np.int32 else np.float64
    return (a.astype(wide) @ b.astype(wide) + c0).astype(c0.dtype)


SS_SHAPES = {
    "f16": [
        (128, 128, 32, 2, 2),
        (64, 64, 64, 2, 2),
        (128, 256, 32, 2, 4),
        (32, 24, 32, 2, 1),
        (32, 48, 16, 1, 2),
    ],
    "tf32": [(64, 64, 32, 2, 2), (32, 24, 16, 2, 1)],
    "s8": [(64, 64, 64, 2, 2)],
    "u8": [(32, 48, 32, 1, 2)],
}
SS_SHAPES["bf16"] = SS_SHAPES["f16"]
SS_CASES = [
    (dtype, shape, ta, tb)
    for dtype, shapes in SS_SHAPES.items()
    for shape in shapes
    for ta in (False, True)
    for tb in (False, True)
]


def ss_entry(dtype, shape, ta, tb):
    M, N, K, wm, wn = shape
    return f"gemm_ss_{dtype}_{M}x{N}x{K}_{wm}x{wn}_{'nt'[ta]}{'nt'[tb]}"


@pytest.mark.parametrize(
    "dtype, shape, ta, tb",
    SS_CASES,
    ids=[f"{d}-{'x'.join(map(str, s))}-{'nt'[ta]}{'nt'[tb]}" for d, s, ta, tb in SS_CASES],
)
def test_gemm_ss_matches_numpy(run, dtype, shape, ta, tb):
    M, N, K, wm, wn = shape
    # Two K tiles: the kernel runs gemm_ss once per tile (cp.async group) into one accumulator.
    a = random_operand(dtype, (2 * K, M) if ta else (M, 2 * K))
    b = random_operand(dtype, (N, 2 * K) if tb else (2 * K, N))
    c0 = accumulator(dtype, (M, N))
    c = np.zeros_like(c0)
    run(ss_entry(dtype, shape, ta, tb), wm * wn * 32, 2 * (M + N) * K * a.itemsize, a, b, c0, c)
    ref = reference(a.T if ta else a, b.T if tb else b, c0)
    if c0.dtype == np.int32:
        np.testing.assert_array_equal(c, ref)
    else:
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


RS_CASES = [("f16", (64, 64, 64, 4)), ("bf16", (128, 24, 32, 8)), ("f16", (64, 128, 16, 2))]


@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize(
    "dtype, shape", RS_CASES, ids=[f"{d}-{'x'.join(map(str, s))}" for d, s in RS_CASES]
)
def test_gemm_rs_matches_numpy(run, dtype, shape, tb):
    M, N, K, wm = shape
    a = random_operand(dtype, (M, K))
    b = random_operand(dtype, (N, K) if tb else (K, N))
    c0 = accumulator(dtype, (M, N))
    c = np.zeros_like(c0)
    run(f"gemm_rs_{dtype}_{M}x{N}x{K}_{wm}_{'nt'[tb]}", wm * 32, N * K * a.itemsize, a, b, c0, c)
    np.testing.assert_allclose(c, reference(a, b.T if tb else b, c0), rtol=1e-4, atol=1e-4)


# ---- warp collectives


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_warp_allreduce(run, dtype):
    threads = 64
    if dtype == np.int32:
        v = rng.integers(-1000, 1000, threads, dtype=np.int32)
    else:
        v = rng.standard_normal(threads).astype(dtype)
    out = np.zeros((3, 6, threads), dtype)
    entry = {np.float32: "allreduce_f32", np.float64: "allreduce_f64", np.int32: "allreduce_i32"}[
        dtype
    ]
    run(entry, threads, 0, v, out)
    for op, reduce in enumerate([np.sum, np.max, np.min]):
        for w_index in range(6):
            w = 1 << w_index
            ref = np.repeat(reduce(v.reshape(-1, w), axis=1), w).astype(dtype)
            if dtype == np.int32 or op > 0:
                np.testing.assert_array_equal(out[op, w_index], ref, err_msg=f"op {op} width {w}")
            else:  # the butterfly adds in another order than numpy
                tol = 1e-5 if dtype == np.float32 else 1e-12
                np.testing.assert_allclose(
                    out[op, w_index], ref, rtol=tol, atol=tol, err_msg=f"width {w}"
                )


def shuffle_reference(v):
    lane = np.arange(v.size) % 32
    warp0 = np.arange(v.size) - lane

    def pick(src):  # src: source lane, or -1 for the own value
        return np.where(src >= 0, v[warp0 + np.maximum(src, 0)], v)

    xor12 = lane ^ 12
    return [
        pick((lane // 8) * 8 + 5),
        pick(np.arange(v.size) % 7),
        pick(np.where(lane % 8 + 3 < 8, lane + 3, -1)),
        pick(np.where(lane % 16 >= 2, lane - 2, -1)),
        pick(lane ^ 5),
        pick(np.where(xor12 >= (lane // 8 + 1) * 8, -1, xor12)),
    ]


@pytest.mark.parametrize("entry, dtype", [("shuffles_f32", np.float32), ("shuffles_i64", np.int64)])
def test_shuffles_follow_cuda_width_rules(run, entry, dtype):
    v = (rng.standard_normal(64) * 1e6).astype(dtype)
    if dtype == np.int64:
        v = v * (1 << 30)  # needs all 64 bits
    out = np.zeros((6, 64), dtype)
    run(entry, 64, 0, v, out)
    for k, ref in enumerate(shuffle_reference(v)):
        np.testing.assert_array_equal(out[k], ref, err_msg=f"shuffle {k}")


# ---- cp.async


@pytest.mark.parametrize("nbytes", [4, 8, 16])
def test_cp_async_groups_and_zero_fill(run, nbytes):
    threads = 64
    n = threads * nbytes
    src = rng.integers(0, 256, 2 * n, dtype=np.uint8)
    pred = rng.integers(0, 2, threads, dtype=np.int32)
    out = np.zeros(2 * n, np.uint8)
    run(f"copy_async_{nbytes}", threads, 2 * n, src, pred, out)
    first = np.where(np.repeat(pred, nbytes) != 0, src[:n], 0)
    np.testing.assert_array_equal(out[:n], first)
    np.testing.assert_array_equal(out[n:], src[n:])


@pytest.mark.parametrize(
    "kind, words",
    [
        (0, ["buffer 'tile'", "writes it at tl::cp_async", "reads it at race kernel"]),
        (1, ["buffer 'tile'", "writes it at race kernel", "reads it at ldmatrix"]),
        (2, ["a shared buffer", "reads it at ldmatrix", "writes it at tl::cp_async"]),
    ],
)
def test_race_detector_sees_the_helpers(emu, kind, words):
    src = rng.standard_normal(16 * 16 + 16 * 8).astype(np.float16)
    out = np.zeros(32, np.float32)
    message = launch(emu, f"race_{kind}", src, out)
    assert message is not None and "shared-memory race on" in message, message
    for w in words:
        assert w in message, message
    assert launch(emu, f"no_race_{kind}", src, out) is None  # the same kernel with its barrier


# ---- NVRTC


def nvrtc_compile(arch):
    """(success, log) of compiling the test kernels for `arch` with ptxas -v."""
    lib = ctypes.CDLL(next(name for name in NVRTC_NAMES if _loadable(name)))
    prog = ctypes.c_void_p()
    source = KERNELS.read_bytes()
    assert (
        lib.nvrtcCreateProgram(ctypes.byref(prog), source, b"device_sm80_kernels.cu", 0, None, None)
        == 0
    )
    opts = [f"--gpu-architecture={arch}", f"-I{DEVICE / 'cuda'}", "--std=c++17", "-default-device"]
    opts.append("--ptxas-options=-v")
    argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), argv)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc == 0, log.value.decode()


@pytest.fixture(scope="module")
def nvrtc_logs():
    # Both architectures at once: NVRTC releases the GIL, CI has two cores.
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(zip(("sm_80", "sm_90"), pool.map(nvrtc_compile, ("sm_80", "sm_90"))))


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_kernels_compile_with_nvrtc_and_keep_accumulators_in_registers(nvrtc_logs, arch):
    ok, log = nvrtc_logs[arch]
    assert ok, log
    frames = {}
    entry = None
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '(\w+)'", line):
            entry = m.group(1)
        elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", line):
            frames[entry] = (int(m.group(1)), int(m.group(2)))
    expected = {ss_entry(*case) for case in SS_CASES}
    assert expected <= frames.keys(), sorted(expected - frames.keys())
    spilled = {name: f for name, f in frames.items() if name.startswith("gemm") and f != (0, 0)}
    assert not spilled, f"gemm kernels with a stack frame or spills: {spilled}"
