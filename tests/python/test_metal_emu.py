"""The Metal emulator's shims (device/emu/metal_emu.h) without a Mac: the hand-written
MSL kernels of metal_emu_kernels.metal, in the code generator's style, go through
msl_to_emulated_cpp and the host compiler and run on the CPU; every shim is held
against numpy on random data: half/bfloat conversions and literals, math, vectors and
as_type, threadgroup memory and barriers, simdgroup collectives, atomics from parallel
threadgroups, simdgroup_matrix GEMMs, Metal 4 cooperative tensors, divergent barriers
and printing."""

import concurrent.futures
import ctypes
import os
import pathlib
import shutil
import subprocess
import time

import ml_dtypes
import numpy as np
import pytest
import tilelang

HERE = pathlib.Path(__file__).parent
KERNELS = HERE / "metal_emu_kernels.metal"
SHIMS = HERE.parents[1] / "device" / "emu" / "metal_emu.h"
FLAGS = ["-std=c++20", "-O1", "-fPIC", "-shared", "-fno-strict-aliasing", "-w", "-x", "c++"]
rng = np.random.default_rng(61)


class Arg(ctypes.Union):
    """The emulation entry's argument slot (tl::emu::Arg)."""

    _fields_ = [("ptr", ctypes.c_void_p), ("i", ctypes.c_int64), ("f", ctypes.c_double)]


def build(tmp_path, compiler):
    source = tmp_path / "kernels.cpp"
    source.write_text(tilelang._C.msl_to_emulated_cpp(KERNELS.read_text()))
    lib = tmp_path / f"kernels_{pathlib.Path(compiler).name}.so"
    cmd = [compiler, *FLAGS, "-include", str(SHIMS), str(source), "-o", str(lib)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return ctypes.CDLL(str(lib))


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cxx = os.environ.get("TILELANG_CXX") or os.environ.get("CXX") or "c++"
    return build(tmp_path_factory.mktemp("metal_emu"), cxx)


def take_failure(lib):
    """The failure the emulator recorded during the last launch, or None."""
    message = ctypes.create_string_buffer(4096)
    block = (ctypes.c_int64 * 3)()
    if lib.tl_debug_take_assert(message, ctypes.c_int64(len(message)), block) == 0:
        return None
    return message.value.decode()


def launch(lib, name, grid, *values, workers=1):
    """Runs every threadgroup of `grid` through tl_emu_<name>; arrays are updated in place.
    Returns the recorded failure or None. With workers > 1 threadgroups run on parallel
    OS threads, as the CPU runtime runs them."""
    args = (Arg * len(values))()
    for k, v in enumerate(values):
        if isinstance(v, np.ndarray):
            args[k].ptr = v.ctypes.data
        elif isinstance(v, float):
            args[k].f = v
        else:
            args[k].i = int(v)
    fn = getattr(lib, f"tl_emu_{name}")
    fn.restype = None
    blocks = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]

    def one(b):
        if lib.tl_debug_begin_block(*map(ctypes.c_int64, b)) == 0:
            fn(args, *map(ctypes.c_int64, b))

    if workers == 1:
        for b in blocks:
            one(b)
    else:
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            list(pool.map(one, blocks))
    return take_failure(lib)


def run(lib, name, grid, *values, **kw):
    failure = launch(lib, name, grid, *values, **kw)
    assert failure is None, f"{name}: {failure}"


def bits16(a):
    return a.view(np.uint16)


# ---- msl_to_emulated_cpp


def test_rewrite_keeps_lines_and_turns_threadgroup_arrays_into_per_group_storage():
    lines = [
        "#include <metal_stdlib>",
        "  #include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>",
        "using namespace metal;",
        "  threadgroup half A_shared[4096];",
        "\tthreadgroup float red[4][32];  // reduction scratch",
        "  threadgroup atomic_int count;",
        "  threadgroup half* p = (threadgroup half*)buf;",
        "  threadgroup_barrier(mem_flags::mem_threadgroup);",
        "  x = threadgroup_value[3];",
    ]
    msl = "\n".join(lines)
    out = tilelang._C.msl_to_emulated_cpp(msl + "\n").split("\n")
    assert len(out) == msl.count("\n") + 2
    assert out[0] == "// (provided by metal_emu.h) #include <metal_stdlib>"
    assert out[1].startswith("  // (provided by metal_emu.h) #include <MetalPerformance")
    assert out[2] == "using namespace metal;"
    assert out[3] == "  alignas(16) static thread_local half A_shared[4096];"
    assert out[4] == "\talignas(16) static thread_local float red[4][32];  // reduction scratch"
    assert out[5] == "  alignas(16) static thread_local atomic_int count;"
    assert out[6:9] == lines[6:9]


# ---- scalars


def test_half_and_bfloat_conversions_round_to_nearest_even(lib):
    n = 256
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    # Ties (1 + 2^-11 rounds down to even, 1 + 3 * 2^-11 up), half subnormals, overflow,
    # and a bfloat tie.
    x[:8] = [1 + 2**-11, 1 + 3 * 2**-11, 3e-6, -6e-8, 7e4, -65519.0, 1 + 2**-8, 2.5]
    h = np.zeros(n, np.float16)
    bf = np.zeros(n, ml_dtypes.bfloat16)
    back = np.zeros(2 * n, np.float32)
    lit = np.zeros(8, np.float32)
    ints = np.zeros(3 * n, np.int32)
    run(lib, "convert_kernel", (n // 64, 1, 1), x, h, bf, back, lit, ints)
    with np.errstate(over="ignore"):  # 7e4 overflows half, as intended
        np.testing.assert_array_equal(bits16(h), bits16(x.astype(np.float16)))
    np.testing.assert_array_equal(bits16(bf), bits16(x.astype(ml_dtypes.bfloat16)))
    np.testing.assert_array_equal(back[0::2], h.astype(np.float32))
    np.testing.assert_array_equal(back[1::2], bf.astype(np.float32))
    finite = np.isfinite(h)
    np.testing.assert_array_equal(
        ints[0::3][finite], np.trunc(h[finite].astype(np.float64)).astype(np.int32)
    )
    np.testing.assert_array_equal(ints[1::3], np.arange(n) % 64 + 200)
    np.testing.assert_array_equal(ints[2::3], np.trunc(x).astype(np.int64) * 1000)
    third = np.float16(np.float32(1) / np.float32(3))
    expected = [1.0, -7.5, 65504.0, third, np.inf, np.inf, 3.140625, 1 + 2**-10]
    np.testing.assert_array_equal(lit, np.array(expected, np.float32))


def test_math_on_float_and_half(lib):
    n = 128
    x = rng.uniform(0.1, 4.0, n).astype(np.float32)
    y = rng.uniform(-2.0, 2.0, n).astype(np.float32)
    f = np.zeros((n, 16), np.float32)
    h = np.zeros((n, 8), np.float16)
    run(lib, "math_kernel", (n // 64, 1, 1), x, y, f, h)
    ref = [
        np.exp(y),
        np.exp2(y),
        np.log(x),
        np.sqrt(x),
        1 / np.sqrt(x),
        np.exp(y),
        np.sqrt(x),
        np.abs(y),
        np.maximum(x, y),
        np.minimum(x, y),
        np.clip(y, -1, 1),
        np.power(x, y),
        np.tanh(y),
        np.floor(y) + np.ceil(x) * 10,
        np.log2(x) + np.power(np.float32(10), y),
        np.where(y < 0, x, y),
    ]
    np.testing.assert_allclose(f, np.stack(ref, 1).astype(np.float32), rtol=3e-6, atol=1e-7)
    hx, hy = x.astype(np.float16), y.astype(np.float16)
    f32 = np.float32
    href = [
        np.exp(hy.astype(f32)),
        np.sqrt(hx.astype(f32)),
        np.tanh(hy.astype(f32)),
        np.maximum(hx, hy),
        np.minimum(hx, hy),
        (hx.astype(f32) * hy.astype(f32)).astype(np.float16).astype(f32) + 1,
        np.exp2(hy.astype(f32)).astype(np.float16).astype(f32) / hx.astype(f32),
        np.where(hy > 0.5, -hy, hx),
    ]
    href = np.stack([np.asarray(r).astype(np.float16) for r in href], 1)
    # Each result is the float result rounded once: equal, or one half-ulp step apart
    # where libm and numpy's float differ in the last bit.
    diff = np.abs(bits16(h).astype(np.int32) - bits16(href).astype(np.int32))
    assert diff.max() <= 1, np.argwhere(diff > 1)
    np.testing.assert_array_equal(h[:, [3, 4, 5, 7]], href[:, [3, 4, 5, 7]])


def test_vectors_as_type_and_128_bit_copies(lib):
    groups = 4
    n = 32 * groups
    x = rng.standard_normal(4 * n).astype(np.float32)
    hin = rng.standard_normal(8 * n).astype(np.float16)
    f = np.zeros(4 * n, np.float32)
    hout = np.zeros(4096 + 8 * n, np.float16)
    u = np.zeros(4 * n, np.uint32)
    b = np.zeros(4 * n, ml_dtypes.bfloat16)
    run(lib, "vector_kernel", (groups, 1, 1), x, hin, f, hout, u, b)
    v = x.reshape(n, 4)
    r = v * 2 + v[:, ::-1]
    r[:, 1] -= v[:, 3]
    np.testing.assert_array_equal(f.reshape(n, 4), r)
    hv = v.astype(np.float16)
    got = hout[: 4 * n].reshape(n, 4)
    np.testing.assert_array_equal(got[:, 0], hv[:, 0])
    np.testing.assert_array_equal(got[:, 1], (hv[:, 1].astype(np.float32) * 2).astype(np.float16))
    np.testing.assert_array_equal(
        got[:, 2], (hv[:, 2].astype(np.float32) + hv[:, 3]).astype(np.float16)
    )
    np.testing.assert_array_equal(got[:, 3], hv[:, 3])
    uv = u.reshape(n, 4)
    t = np.arange(n) % 32
    np.testing.assert_array_equal(uv[:, 0], v[:, 0].view(np.uint32))
    np.testing.assert_array_equal(
        uv[:, 1], bits16(hv[:, 0]).astype(np.uint32) | bits16(hv[:, 1]).astype(np.uint32) << 16
    )
    np.testing.assert_array_equal(uv[:, 2], 6 * t)
    np.testing.assert_array_equal(uv[:, 3], 4 * t | 14)
    np.testing.assert_array_equal(bits16(b), bits16(x.astype(ml_dtypes.bfloat16)))
    copied = hout[4096:].reshape(groups, 32, 8)
    np.testing.assert_array_equal(copied, hin.reshape(groups, 32, 8)[:, ::-1])


def test_threadgroup_memory_and_barriers_in_2d_threadgroups(lib):
    x = rng.standard_normal(3 * 64).astype(np.float32)
    y = np.zeros_like(x)
    run(lib, "reverse_kernel", (3, 1, 1), x, y)
    tiles = x.reshape(3, 4, 16)
    ref = tiles[:, ::-1, ::-1] + tiles.sum(-1)[:, ::-1, None]
    np.testing.assert_allclose(y.reshape(3, 4, 16), ref, rtol=1e-6, atol=1e-6)


# ---- simdgroup collectives


def simd_reference(x):
    """Columns of simd_kernel's F and V for 80 threads: simdgroups of 32, 32 and 16 lanes."""
    n = len(x)
    f = np.zeros((n, 16), np.float32)
    v = np.zeros((n, 4), np.uint32)
    for base in range(0, n, 32):
        g = x[base : base + 32]
        size = len(g)

        def src(lane, s, g=g, size=size):
            return g[s] if 0 <= s < size else g[lane]

        for lane in range(size):
            t = base + lane
            f[t, 0] = g.sum(dtype=np.float32)
            f[t, 1], f[t, 2] = g.max(), g.min()
            f[t, 3] = np.prod(1 + g * np.float32(0.1), dtype=np.float32)
            f[t, 4] = src(lane, lane * 7 % 32)
            f[t, 5] = src(lane, lane ^ 5)
            f[t, 6] = src(lane, lane + 3)
            f[t, 7] = src(lane, lane - 3)
            f[t, 8] = g[4]
            f[t, 9] = g[: lane + 1].sum(dtype=np.float32)
            f[t, 10] = g[:lane].sum(dtype=np.float32)
            f[t, 11] = g.astype(np.float16).astype(np.float32).sum().astype(np.float16)
            f[t, 12] = -9 * src(lane, lane ^ 1)
            f[t, 13] = g[:12].sum(dtype=np.float32) if lane < 12 else -1
            f[t, 14] = x[base + (lane + 1) % 16]
            f[t, 15] = np.trunc(g * np.float32(100)).max()
            v[t, 0] = (g > -3).all()
            v[t, 1] = (g > 1.5).any()
            v[t, 2] = sum(1 << k for k in range(size) if g[k] > 0)
            v[t, 3] = 0xFF
    return f, v


def test_simd_collectives_over_full_and_short_simdgroups(lib):
    x = rng.standard_normal(80).astype(np.float32)
    x[3] = 1.75  # some lane above 1.5 in the first simdgroup
    f = np.zeros((80, 16), np.float32)
    v = np.zeros((80, 4), np.uint32)
    run(lib, "simd_kernel", (1, 1, 1), x, f, v)
    rf, rv = simd_reference(x)
    np.testing.assert_allclose(f, rf, rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(v, rv)
    assert 0 < rv[0, 2] < 0xFFFFFFFF and rv[0, 1] == 1  # the ballot saw both outcomes


# ---- atomics


def test_atomics_from_parallel_threadgroups(lib):
    groups = 48
    x = rng.standard_normal(64 * groups).astype(np.float32)
    counts = np.array([0, np.iinfo(np.int32).min, np.iinfo(np.int32).max, -1], np.int32)
    total = np.zeros(1, np.float32)
    bits = np.zeros(1, np.uint32)
    slots = np.zeros(64 * groups, np.int32)
    fmax = np.full(1, -np.inf, np.float32)
    run(lib, "atomic_kernel", (groups, 1, 1), x, counts, total, bits, slots, fmax, workers=4)
    scaled = np.trunc(x * np.float32(1000)).astype(np.int32)
    assert counts[0] == 64 * groups
    assert counts[1] == scaled.max() and counts[2] == scaled.min()
    assert 0 <= counts[3] < groups
    np.testing.assert_allclose(total[0], x.astype(np.float64).sum(), atol=1e-4 * np.abs(x).sum())
    assert bits[0] == 0xFFFFFFFF
    assert fmax[0] == x.max()
    np.testing.assert_array_equal(
        np.sort(slots.reshape(groups, 64), axis=1), np.tile(np.arange(64, 128), (groups, 1))
    )


# ---- simdgroup_matrix


def sgm_gemm(lib, M, N, K, trans_a):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    stored_a = np.ascontiguousarray(a.T) if trans_a else a
    run(
        lib,
        "sgm_gemm_kernel",
        (N // 32, M // 32, 1),
        stored_a,
        b,
        c,
        M,
        N,
        K,
        int(trans_a),
        workers=2,
    )
    return c, a.astype(np.float64) @ b.astype(np.float64)


@pytest.mark.parametrize("trans_a", [False, True])
def test_simdgroup_matrix_gemm(lib, trans_a):
    c, ref = sgm_gemm(lib, 64, 96, 48, trans_a)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4)


def test_simdgroup_matrix_gemm_128_cubed_runs_in_under_5_seconds(lib):
    start = time.perf_counter()
    c, ref = sgm_gemm(lib, 128, 128, 128, False)
    elapsed = time.perf_counter() - start
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4)
    assert elapsed < 5, f"128^3 fp16 gemm took {elapsed:.2f} s emulated"


def test_simdgroup_matrix_origins_transposes_and_thread_elements(lib):
    a = rng.standard_normal((8, 8)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((8, 8)).astype(ml_dtypes.bfloat16)
    c = rng.standard_normal((16, 16)).astype(np.float32)
    d = np.full((16, 8), -7, np.float32)
    e = np.zeros((16, 8), np.float32)
    run(lib, "sgm_small_kernel", (1, 1, 1), a, b, c, d, e)
    f64 = np.float64
    ref = a.astype(f64) @ b.astype(f64).T + c[:8, 8:]  # B loaded transposed, C from column 8
    ref = ref * 2 + np.arange(64).reshape(8, 8)  # the lanes' thread_elements epilogue
    np.testing.assert_allclose(d[8:], ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(d[:8], -7)  # rows the origin skipped
    # d * c after the epilogue, stored transposed; then a diagonal matrix.
    np.testing.assert_allclose(e[:8], (ref @ c[:8, 8:]).T, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(e[8:], np.eye(8) * 3)


# ---- cooperative tensors


@pytest.mark.parametrize(
    "name, trans_a, trans_b, dtype",
    [
        ("coop_nn_kernel", False, False, np.float16),
        ("coop_tn_kernel", True, False, np.float16),
        ("coop_nt_kernel", False, True, np.float16),
        ("coop_tt_bf16_kernel", True, True, ml_dtypes.bfloat16),
    ],
)
def test_cooperative_tensor_matmul(lib, name, trans_a, trans_b, dtype):
    K = 48
    a = rng.standard_normal((16, K)).astype(dtype)
    b = rng.standard_normal((K, 32)).astype(dtype)
    d0 = rng.standard_normal((16, 32)).astype(np.float32)
    d = d0.copy()
    stored_a = np.ascontiguousarray(a.T) if trans_a else a
    stored_b = np.ascontiguousarray(b.T) if trans_b else b
    run(lib, name, (1, 1, 1), stored_a, stored_b, d, K)
    ref = d0 + a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-4)


# ---- failures and printing


def test_divergent_barrier_is_reported_and_the_uniform_one_passes(lib):
    y = np.zeros(64, np.float32)
    failure = launch(lib, "divergent_kernel", (1, 1, 1), y)
    assert failure is not None and failure.startswith(
        "threadgroup divergence: thread 0 waits at threadgroup_barrier"
    )
    lines = [int(w) for w in failure.replace(";", " ").split() if w.isdigit()]
    assert len(set(lines[1::2])) == 2, failure  # two different source lines named
    run(lib, "uniform_kernel", (1, 1, 1), y)
    np.testing.assert_array_equal(y, np.arange(64)[::-1].astype(np.float32))


def test_printf_and_os_log(lib, capfd):
    x = np.array([1.5, -2.25], np.float16)
    run(lib, "print_kernel", (1, 1, 1), x)
    out = capfd.readouterr().out.splitlines()
    assert "block 0 thread 0 x=1.5000" in out
    assert "block 0 thread 1 x=-2.2500" in out
    assert "sum -0.750" in out


@pytest.mark.skipif(shutil.which("clang++") is None, reason="clang++ is not installed")
def test_shims_compile_with_clang_too(tmp_path):
    clang = build(tmp_path, "clang++")
    x = rng.standard_normal(80).astype(np.float32)
    f = np.zeros((80, 16), np.float32)
    v = np.zeros((80, 4), np.uint32)
    run(clang, "simd_kernel", (1, 1, 1), x, f, v)
    rf, rv = simd_reference(x)
    np.testing.assert_allclose(f, rf, rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(v, rv)
