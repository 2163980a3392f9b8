"""The sm_80 device building blocks (device/cuda/gemm_sm80.cuh, swizzle.cuh,
copy_async.cuh, warp.cuh) without a GPU: the test kernels of device_sm80_kernels.cu
run on the CPU through the emulation shims (device/emu), whose ldmatrix, mma.sync, mma.sp,
shuffle and cp.async twins move data as the PTX ISA specifies, and are compared with
numpy; the same file compiles with NVRTC for sm_80 and sm_90, with the gemm
accumulators in registers (no stack frame). The fp8 gemms (sm_89+) are left out of
the sm_80 build, and instantiating them for sm_80 is a compile error."""

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


def build_emulated(tmp_path_factory, kernels, name):
    """A file of test kernels built for the CPU against the emulation shims (the
    device-block tests of sm_80, wgmma and TMA share this)."""
    lib = tmp_path_factory.mktemp(name) / "kernels.so"
    cxx = os.environ.get("TILELANG_CXX") or os.environ.get("CXX") or "c++"
    # -O0: a third of -O1's compile time, and the runs stay well under a second each.
    flags = ["-std=c++17", "-O0", "-fPIC", "-shared", "-w", "-x", "c++"]
    flags += ["-include", str(DEVICE / "emu" / "cuda_emu.h")]
    flags += [f"-I{DEVICE / 'cuda'}", f"-I{DEVICE / 'cpu'}"]
    out = subprocess.run(
        [cxx, *flags, str(kernels), "-o", str(lib)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    return ctypes.CDLL(str(lib))


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    """The test kernels built for the CPU against the emulation shims."""
    return build_emulated(tmp_path_factory, KERNELS, "sm80")


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


# fp8 gemm_ss: A and B each e4m3fn or e5m2, float accumulators, on sm_89+.
FP8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
FP8_PAIRS = [(a, b) for a in FP8 for b in FP8]
FP8_SS_SHAPES = {
    "e4m3": [(64, 64, 64, 2, 2), (32, 48, 32, 1, 2)],
    "e5m2": [(64, 64, 64, 2, 2)],
    "e4m3_e5m2": [(64, 32, 64, 2, 1)],
    "e5m2_e4m3": [(32, 48, 32, 1, 2)],
}
FP8_SS_CASES = [
    (dtype, shape, ta, tb)
    for dtype, shapes in FP8_SS_SHAPES.items()
    for shape in shapes
    for ta in (False, True)
    for tb in (False, True)
] + [("e4m3", (128, 128, 64, 2, 2), False, True)]  # the compiler's tile, K-major operands


def random_fp8(name, shape):
    """Normal values spread over 2^-4 .. 2^3, so products and sums mix exponents and
    the smallest land in e4m3's subnormals (below 2^-6)."""
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-4, 4, shape)
    return x.astype(np.float32).astype(FP8[name])


def assert_fp8_product(c, ref, bound):
    """c matches the exact ref within the tensor cores' accumulation error `bound`."""
    err = np.abs(c - ref)
    worst = np.unravel_index(np.argmax(err / bound), err.shape)
    where = ", ".join(str(int(i)) for i in worst)
    assert np.all(err <= bound), (
        f"[{where}] = {c[worst]}, expected {ref[worst]} (allowed error {bound[worst]:.3g})"
    )


def fp8_fragments(a, b):
    """The m16n8k32 8-bit register fragments (PTX ISA) of A (16 x 32) and B (32 x 8):
    lane (g, q) = (lane // 4, lane % 4); A register j holds row g + 8 * (j % 2),
    k = 16 * (j // 2) + 4q + byte; B register j holds column g, k = 16j + 4q + byte."""
    lane = np.arange(32)
    g, q = lane // 4, lane % 4
    a8, b8 = a.view(np.uint8).astype(np.uint32), b.view(np.uint8).astype(np.uint32)
    fa, fb = np.zeros((32, 4), np.uint32), np.zeros((32, 2), np.uint32)
    for byte in range(4):
        for j in range(4):
            fa[:, j] |= a8[g + 8 * (j % 2), 16 * (j // 2) + 4 * q + byte] << (8 * byte)
        for j in range(2):
            fb[:, j] |= b8[16 * j + 4 * q + byte, g] << (8 * byte)
    return fa, fb


@pytest.mark.parametrize("a_name, b_name", FP8_PAIRS)
def test_mma_fp8_fragments(run, a_name, b_name):
    """One mma.m16n8k32 fp8 against numpy, in the arch's form and in the f16 form of sm_90."""
    a, b = random_fp8(a_name, (16, 32)), random_fp8(b_name, (32, 8))
    fa, fb = fp8_fragments(a, b)
    lane = np.arange(32)
    rows = lane[:, None] // 4 + 8 * (np.arange(4)[None, :] // 2)  # D element e of each lane
    cols = 2 * (lane[:, None] % 4) + np.arange(4)[None, :] % 2
    c_full = accumulator("f32", (16, 8))
    c = np.ascontiguousarray(c_full[rows, cols])
    out = np.zeros((32, 2, 4), np.float32)
    run(f"mma_f8_{a_name}_{b_name}", 32, 0, fa, fb, c, out)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = (a64 @ b64 + c_full)[rows, cols]
    bound = 2.0**-9 * (np.abs(a64) @ np.abs(b64) + np.abs(c_full))[rows, cols]
    for form in range(2):
        assert_fp8_product(out[:, form], ref, bound)


def bits16(x, dtype):
    return x.astype(NP_SP[dtype]).view(np.uint16).astype(np.uint32)


NP_SP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("sel", [0, 1])
def test_mma_sp_fragments(run, dtype, sel):
    """One mma.sp m16n8k32 against numpy, its registers laid out from the PTX ISA's text
    ("Matrix fragments for sparse mma.m16n8k32 with .f16 and .bf16 types"): A's kept
    values as the A of a dense m16n8k16, B as four 32-bit registers of K pairs, the
    metadata of row g (bits 0-15) and g + 8 (16-31) for K 0-15 (lane 2 * sel) and 16-31
    (lane 2 * sel + 1) of each group of four lanes; the other lanes' words are noise the
    instruction ignores. Positions are in either order (mma.sp, not ordered_metadata)."""
    r = np.random.default_rng(11 + sel)
    pos = np.array([(i, j) for i in range(4) for j in range(4) if i != j])
    pick = pos[r.integers(0, len(pos), size=(16, 8))]  # (row, chunk) -> two positions
    vals = r.integers(-8, 9, size=(16, 8, 2)) / 4
    vals = np.where(vals == 0, 0.5, vals)
    dense = np.zeros((16, 32))
    for row in range(16):
        for c in range(8):
            for s in range(2):
                dense[row, 4 * c + pick[row, c, s]] = vals[row, c, s]
    kept = vals.reshape(16, 16)  # kept column 2c + s
    codes = pick[..., 0] | (pick[..., 1] << 2)  # (16, 8)
    b = r.integers(-8, 9, size=(32, 8)) / 4
    lane = np.arange(32)
    g, q = lane // 4, lane % 4
    ka, kb = bits16(kept, dtype), bits16(b, dtype)
    fa = np.zeros((32, 4), np.uint32)
    fb = np.zeros((32, 4), np.uint32)
    for j in range(4):
        col = 2 * q + 8 * (j // 2)
        fa[:, j] = ka[g + 8 * (j % 2), col] | (ka[g + 8 * (j % 2), col + 1] << 16)
        k = 2 * q + 8 * j
        fb[:, j] = kb[k, g] | (kb[k + 1, g] << 16)
    fe = r.integers(0, 2**32, size=32, dtype=np.uint64).astype(np.uint32)  # unread lanes: noise
    for h in range(2):  # lane 2 * sel + h of group g: chunks 4h .. 4h + 3
        word = np.zeros(8, np.uint32)
        for i in range(4):
            word |= codes[np.arange(8), 4 * h + i].astype(np.uint32) << (4 * i)
            word |= codes[np.arange(8) + 8, 4 * h + i].astype(np.uint32) << (16 + 4 * i)
        fe[np.arange(8) * 4 + 2 * sel + h] = word
    rows = g[:, None] + 8 * (np.arange(4)[None, :] // 2)
    cols = 2 * q[:, None] + np.arange(4)[None, :] % 2
    c_full = r.integers(-8, 9, size=(16, 8)) / 8
    c = np.ascontiguousarray(c_full[rows, cols], np.float32)
    out = np.zeros((32, 4), np.float32)
    run(f"mma_sp_{dtype}_sel{sel}", 32, 0, fa, fb, fe, c, out)
    ref = (dense @ b + c_full)[rows, cols]
    np.testing.assert_array_equal(out, ref.astype(np.float32))


@pytest.mark.parametrize(
    "dtype, shape, ta, tb",
    FP8_SS_CASES,
    ids=[f"{d}-{'x'.join(map(str, s))}-{'nt'[ta]}{'nt'[tb]}" for d, s, ta, tb in FP8_SS_CASES],
)
def test_gemm_ss_fp8_matches_numpy(run, dtype, shape, ta, tb):
    M, N, K, wm, wn = shape
    a_name, b_name = (dtype.split("_") * 2)[:2]
    a = random_fp8(a_name, (2 * K, M) if ta else (M, 2 * K))
    b = random_fp8(b_name, (N, 2 * K) if tb else (2 * K, N))
    c0 = accumulator("f32", (M, N))
    c = np.zeros_like(c0)
    run(ss_entry(dtype, shape, ta, tb), wm * wn * 32, 2 * (M + N) * K, a, b, c0, c)
    # Exact products and sums in float64 (fp8 values decode exactly).
    a64 = (a.T if ta else a).astype(np.float64)
    b64 = (b.T if tb else b).astype(np.float64)
    ref = a64 @ b64 + c0
    # The tensor cores add with fewer bits than float (device/emu/mma_emu.h): allow
    # 2^-9 of the sum of magnitudes, far below one misplaced product.
    assert_fp8_product(c, ref, 2.0**-9 * (np.abs(a64) @ np.abs(b64) + np.abs(c0)))


# ---- atomics


def test_atomic_adds_of_every_type(run):
    # Whole numbers in [-8, 8]: every partial sum is exact in fp16 and bf16, so the
    # result does not depend on the order the 8 threads of a slot add in.
    threads = 128
    v = rng.integers(-8, 9, threads).astype(np.float32)
    slot = np.arange(threads) % 16
    outs = [
        np.zeros(16, np.float32),
        np.zeros(16, np.float64),
        np.zeros(16, np.int32),
        np.zeros(16, np.int64),
        np.zeros(16, np.float16),
        np.zeros(16, ml_dtypes.bfloat16),
        np.zeros(32, np.float32),
        np.zeros(64, np.float32),
        np.zeros(32, np.float16),
        np.zeros(32, ml_dtypes.bfloat16),
    ]
    run("atomic_adds", threads, 0, *outs, v)

    def sums(values, width, index):
        out = np.zeros(16 * width, np.float64)
        np.add.at(out, index, values)
        return out

    r = np.arange(threads)
    scalar = sums(v, 1, slot)
    np.testing.assert_array_equal(outs[0], scalar)
    np.testing.assert_array_equal(outs[1], scalar)
    np.testing.assert_array_equal(outs[2], sums(v * 1000 - r, 1, slot))
    np.testing.assert_array_equal(outs[3], sums(v.astype(np.int64) * 10_000_000_000 + r, 1, slot))
    np.testing.assert_array_equal(outs[4].astype(np.float64), scalar)
    np.testing.assert_array_equal(outs[5].astype(np.float64), scalar)
    pair = np.stack([v, -2 * v], 1).ravel()
    pair_index = (2 * slot[:, None] + np.arange(2)).ravel()
    np.testing.assert_array_equal(outs[6], sums(pair, 2, pair_index))
    quad = np.stack([v, 2 * v, -v, 3 * v], 1).ravel()
    np.testing.assert_array_equal(
        outs[7], sums(quad, 4, (4 * slot[:, None] + np.arange(4)).ravel())
    )
    np.testing.assert_array_equal(outs[8].astype(np.float64), sums(pair, 2, pair_index))
    np.testing.assert_array_equal(outs[9].astype(np.float64), sums(pair, 2, pair_index))


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


def nvrtc_compile(arch, source=None, want_ptx=False):
    """(success, log) of compiling the test kernels (or `source`) for `arch` (ptxas -v
    for a real arch sm_XX); with want_ptx, (success, log, ptx)."""
    lib = ctypes.CDLL(next(name for name in NVRTC_NAMES if _loadable(name)))
    prog = ctypes.c_void_p()
    source = KERNELS.read_bytes() if source is None else source.encode()
    assert (
        lib.nvrtcCreateProgram(ctypes.byref(prog), source, b"device_sm80_kernels.cu", 0, None, None)
        == 0
    )
    opts = [f"--gpu-architecture={arch}", f"-I{DEVICE / 'cuda'}", "--std=c++17", "-default-device"]
    if arch.startswith("sm_"):
        opts.append("--ptxas-options=-v")
    argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), argv)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    ptx = ""
    if want_ptx and rc == 0:
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        text = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, text)
        ptx = text.value.decode()
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    if want_ptx:
        return rc == 0, log.value.decode(), ptx
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
    fp8 = {ss_entry(*case) for case in FP8_SS_CASES}
    if arch == "sm_80":
        assert not fp8 & frames.keys(), "the fp8 gemms must be left out of the sm_80 build"
    else:
        expected |= fp8
    assert expected <= frames.keys(), sorted(expected - frames.keys())
    spilled = {name: f for name, f in frames.items() if name.startswith("gemm") and f != (0, 0)}
    assert not spilled, f"gemm kernels with a stack frame or spills: {spilled}"


# One fp8 gemm of each operand pairing: its PTX has the instructions of each arch,
# and sm_80 stops at gemm_sm80.cuh's static_assert naming the arch needed.
FP8_TYPES = {"e4m3": "tl::float8_e4m3fn_t", "e5m2": "tl::float8_e5m2_t"}


def fp8_gemm_source(a, b):
    return f"""#include "tl_cuda.cuh"
extern "C" __global__ void __launch_bounds__(32) fp8_gemm(const uint4* src, float* out) {{
  __shared__ __align__(16) unsigned char tile[16 * 32 + 8 * 32];
  for (int i = threadIdx.x; i < 48; i += 32) reinterpret_cast<uint4*>(tile)[i] = src[i];
  __syncthreads();
  float acc[4] = {{0, 0, 0, 0}};
  tl::gemm_ss<16, 8, 32, 1, 1, false, true>(reinterpret_cast<const {FP8_TYPES[a]}*>(tile),
                                            reinterpret_cast<const {FP8_TYPES[b]}*>(tile + 16 * 32), acc);
  for (int e = 0; e < 4; ++e) out[threadIdx.x * 4 + e] = acc[e];
}}
"""


@needs_nvrtc
@pytest.mark.parametrize("a, b", FP8_PAIRS, ids=[f"{a}_{b}" for a, b in FP8_PAIRS])
def test_fp8_gemm_instructions(a, b):
    """sm_89 (and sm_100+) run the fp8 mma.sync; sm_90, which has no fp8 mma.sync of
    its own, converts to f16 pairs and runs two f16 mmas per fp8 one."""
    fp8_mma = f"mma.sync.aligned.m16n8k32.row.col.f32.{a}.{b}.f32"
    f16_mma = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    for arch in ("compute_89", "compute_90", "compute_100"):
        ok, log, ptx = nvrtc_compile(arch, fp8_gemm_source(a, b), want_ptx=True)
        assert ok, log
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx, arch  # A is K-major
        if arch == "compute_90":
            assert fp8_mma not in ptx and f16_mma in ptx
            assert f"cvt.rn.f16x2.{a}x2" in ptx and f"cvt.rn.f16x2.{b}x2" in ptx
        else:
            assert fp8_mma in ptx and f16_mma not in ptx, arch


@needs_nvrtc
def test_fp8_gemm_needs_sm89():
    ok, log = nvrtc_compile("sm_80", fp8_gemm_source("e4m3", "e5m2"))
    assert not ok, "an fp8 gemm_ss compiled for sm_80"
    assert "fp8 operands" in log and "sm_89" in log, log
