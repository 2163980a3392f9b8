"""T.gemm on tensor cores (mma.sync m16n8k16, f16/bf16 -> f32) on the cuda target,
without a GPU: the exact CUDA source runs in the emulator, whose mma.sync twin
(device/emu/mma_emu.h) reads the operands back through the PTX fragment layout,
and the same source compiles with NVRTC for sm_80 and sm_90."""

import pathlib

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.utils.target import available_targets

EMU = "cuda -arch=sm_80 -emulate"
HEADER = pathlib.Path(__file__).parents[2] / "device" / "cuda" / "gemm_mma.cuh"
NP_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
rng = np.random.default_rng(7)
needs_nvrtc = pytest.mark.skipif(
    "cuda" not in available_targets(), reason="NVRTC (libnvrtc.so) is not on this machine"
)


def mma_gemm(
    M,
    N,
    K,
    bM,
    bN,
    bK,
    dtype="float16",
    trans_a=False,
    trans_b=False,
    threads=128,
    policy=T.GemmWarpPolicy.Square,
    accumulate_into_c=False,
):
    """C = [C0 +] op(A) @ op(B), tiled; A is (K, M) when trans_a, B is (N, K) when trans_b."""
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, dtype),
        B: T.Tensor(b_shape, dtype),
        C0: T.Tensor((M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bK, bM) if trans_a else (bM, bK), dtype)
            B_s = T.alloc_shared((bN, bK) if trans_b else (bK, bN), dtype)
            C_f = T.alloc_fragment((bM, bN), "float32")
            if accumulate_into_c:
                T.copy(C0[by * bM, bx * bN], C_f)
            else:
                T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                if trans_a:
                    T.copy(A[k * bK, by * bM], A_s)
                else:
                    T.copy(A[by * bM, k * bK], A_s)
                if trans_b:
                    T.copy(B[bx * bN, k * bK], B_s)
                else:
                    T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b, policy=policy)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def first_tile_clears(M, N, K, bM, bN, bK, dtype="float16"):
    """clear_accum=True on the first K step discards C_f's earlier (random) contents."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C0: T.Tensor((M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bK, bN), dtype)
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.copy(C0[by * bM, bx * bN], C_f)  # overwritten by the clearing gemm below
            T.copy(A[by * bM, 0], A_s)
            T.copy(B[0, bx * bN], B_s)
            T.gemm(A_s, B_s, C_f, clear_accum=True)
            for k in T.serial(1, T.ceildiv(K, bK)):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def operands(M, N, K, dtype, trans_a, trans_b):
    np_t = NP_DTYPES[dtype]
    a = rng.standard_normal((K, M) if trans_a else (M, K)).astype(np_t)
    b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(np_t)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    ref = (af.T if trans_a else af) @ (bf.T if trans_b else bf)
    return a, b, c0, ref


def run(kernel, a, b, c0):
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    return c


# (M, N, K, bM, bN, bK, dtype, trans_a, trans_b, threads, policy): the shapes are not
# multiples of the tiles (copies pad the tails with zeros; the tile gemm is whole).
CASES = {
    "f16_nn_tails": (100, 72, 50, 64, 32, 32, "float16", False, False, 128, 0),
    "f16_tn": (64, 64, 48, 32, 64, 16, "float16", True, False, 128, 0),
    "bf16_nt_tails": (96, 80, 70, 32, 32, 32, "bfloat16", False, True, 64, 0),
    "bf16_tt": (64, 48, 64, 64, 16, 32, "bfloat16", True, True, 128, 0),
    "f16_fullrow_8warps": (128, 40, 32, 128, 8, 32, "float16", False, False, 256, 1),
    "bf16_fullcol": (48, 64, 32, 16, 64, 32, "bfloat16", False, False, 128, 2),
    # FullCol's 8 warps on a 64 x 32 tile: all 8 along N would give each 4 columns,
    # so the policy takes the split nearest it whose warps hold 16 (DeepSeek v3.2's
    # sparse_mla_bwd: its P and dP accumulators went to shared memory)
    "f16_fullcol_8warps": (64, 32, 64, 64, 32, 32, "float16", False, True, 256, 2),
}
# The warp split each case's policy gives (WarpsM, WarpsN), as written in the source.
SPLITS = {
    "f16_nn_tails": (2, 2),
    "f16_tn": (1, 4),
    "bf16_nt_tails": (1, 2),
    "bf16_tt": (4, 1),
    "f16_fullrow_8warps": (8, 1),
    "bf16_fullcol": (1, 4),
    "f16_fullcol_8warps": (4, 2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_mma_gemm_matches_numpy(name):
    M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy = CASES[name]
    kernel = tilelang.compile(
        mma_gemm(M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, accumulate_into_c=True),
        target=EMU,
    )
    wm, wn = SPLITS[name]
    source = kernel.get_kernel_source()
    if bN // wn % 16 == 0:
        # The accumulator lives in registers; A and B in swizzled shared tiles.
        flags = ", ".join("true" if f else "false" for f in (ta, tb))
        assert f"tl::gemm_ss<{bM}, {bN}, {bK}, {wm}, {wn}, {flags}>" in source
    else:
        # A warp's N of 8 does not fit ldmatrix: the shared-memory accumulator path.
        flags = ", ".join("true" if f else "false" for f in (ta, tb, False))
        assert f"tl::gemm_mma<{bM}, {bN}, {bK}, {flags}, {wm}, {wn}>" in source
    a, b, c0, ref = operands(M, N, K, dtype, ta, tb)
    np.testing.assert_allclose(run(kernel, a, b, c0), c0 + ref, rtol=1e-4, atol=1e-3)


def test_clear_accum_discards_the_old_accumulator():
    kernel = tilelang.compile(first_tile_clears(80, 64, 96, 32, 32, 32), target=EMU)
    source = kernel.get_kernel_source()
    assert source.count("tl::gemm_ss<32, 32, 32, 2, 2, false, false>") == 2
    a, b, c0, ref = operands(80, 64, 96, "float16", False, False)
    np.testing.assert_allclose(run(kernel, a, b, c0), ref, rtol=1e-4, atol=1e-3)


@needs_nvrtc
@pytest.mark.parametrize(
    "why, target, args",
    [
        ("K tile not a multiple of 16", "cuda -arch=sm_80", (64, 64, 40, 64, 64, 24)),
        ("N tile too narrow for the warps", "cuda -arch=sm_90", (64, 20, 32, 64, 4, 32)),
    ],
)
def test_gemms_that_do_not_fit_keep_the_loop_nest(why, target, args):
    # The loop nest's numbers are checked by test_emulator.py; here: it is chosen, and compiles.
    kernel = tilelang.compile(mma_gemm(*args), target=target)
    source = kernel.get_kernel_source()
    assert "tl::gemm_mma" not in source and "tl::gemm_ss" not in source, why
    assert "__global__" in source


@pytest.mark.parametrize(
    "in_dtype, acc_dtype", [("float32", "float32"), ("int8", "int32"), ("uint8", "int32")]
)
def test_tf32_and_int8_gemms_run_on_tensor_cores(in_dtype, acc_dtype):
    # float32 operands go through tf32 mma (TileLang's choice on CUDA), 8-bit ones
    # through the int8 mma into int32.
    M = N = 64
    K = 64

    @T.prim_func
    def main(
        A: T.Tensor((M, K), in_dtype), B: T.Tensor((K, N), in_dtype), C: T.Tensor((M, N), acc_dtype)
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), in_dtype)
            B_s = T.alloc_shared((K, N), in_dtype)
            C_f = T.alloc_fragment((M, N), acc_dtype)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_f, clear_accum=True)
            T.copy(C_f, C)

    kernel = tilelang.compile(main, out_idx=[-1], target=EMU)
    assert "tl::gemm_ss<64, 64, 64, 2, 2, false, false>" in kernel.get_kernel_source()
    rng = np.random.default_rng(5)
    if in_dtype == "float32":
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((K, N)).astype(np.float32)
        # tf32 keeps 10 mantissa bits of each operand.
        np.testing.assert_allclose(kernel(a, b), a @ b, rtol=2e-2, atol=5e-2)
    else:
        lo, hi = (-128, 128) if in_dtype == "int8" else (0, 256)
        a = rng.integers(lo, hi, (M, K)).astype(in_dtype)
        b = rng.integers(lo, hi, (K, N)).astype(in_dtype)
        np.testing.assert_array_equal(kernel(a, b), a.astype(np.int32) @ b.astype(np.int32))


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mma_kernel_compiles_with_nvrtc(arch, dtype):
    kernel = tilelang.compile(
        mma_gemm(256, 256, 256, 128, 128, 32, dtype, trans_b=True), target=f"cuda -arch={arch}"
    )
    source = kernel.get_kernel_source()
    assert "tl::gemm_ss<128, 128, 32, 2, 2, false, true>" in source
    ptx_type = "bf16" if dtype == "bfloat16" else "f16"
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{ptx_type}.{ptx_type}.f32" in HEADER.read_text()


@pytest.mark.parametrize("order", ["row", "column"])
def test_use_swizzle_rasterization_covers_every_tile(order):
    # A 7 x 10 grid of tiles in panels of 3: the last panel is short; every tile must
    # still be computed exactly once.
    M, N, K, bM, bN, bK = 7 * 32, 10 * 32, 32, 32, 32, 32

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.use_swizzle(3, order=order)
            T.copy(A[by * bM, 0], A_s)
            T.copy(B[0, bx * bN], B_s)
            T.gemm(A_s, B_s, C_f, clear_accum=True)
            T.copy(C_f, C[by * bM, bx * bN])

    kernel = tilelang.compile(main, out_idx=[-1], target=EMU)
    assert "tl_raster_panel" in kernel.get_kernel_source()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-3)


def test_layout_conflict_names_both_gemms():
    # acc1 is split over warps as 4 x 1 (FullRow), acc2 as 1 x 4 (FullCol); one
    # T.Parallel loop ties them, and no register layout serves both.
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 64), "float16")
            acc1 = T.alloc_fragment((64, 64), "float32")
            acc2 = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.gemm(A_s, A_s, acc1, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.gemm(A_s, A_s, acc2, clear_accum=True, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(64, 64):
                acc1[i, j] = acc1[i, j] + acc2[i, j]
            T.copy(acc1, C)

    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(main, out_idx=[-1], target=EMU)
    message = str(info.value)
    assert "layout conflict" in message and "acc1" in message and "acc2" in message
    lines = [
        n
        for n, text in enumerate(pathlib.Path(__file__).read_text().splitlines(), 1)
        if text.strip().startswith("T.gemm(A_s, A_s, acc")
    ]
    assert all(f"test_cuda_mma.py:{n}" in message for n in lines[-2:]), message


@pytest.mark.parametrize(
    "a_dtype, b_dtype", [("float8_e4m3fn", "float8_e4m3fn"), ("float8_e4m3fn", "float8_e5m2")]
)
def test_fp8_gemm_runs_on_tensor_cores_from_sm89(a_dtype, b_dtype):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    M = N = 64
    K = 64

    @T.prim_func
    def main(
        A: T.Tensor((M, K), a_dtype), B: T.Tensor((N, K), b_dtype), C: T.Tensor((M, N), "float32")
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), a_dtype)
            B_s = T.alloc_shared((N, K), b_dtype)
            C_f = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_f, transpose_B=True, clear_accum=True)
            T.copy(C_f, C)

    kernel = tilelang.compile(main, out_idx=[-1], target="cuda -arch=sm_90 -emulate")
    assert "tl::gemm_ss<64, 64, 64, 2, 2, false, true>" in kernel.get_kernel_source()
    # Before sm_89 there is no fp8 mma: the loop nest, same numbers.
    older = tilelang.compile(main, out_idx=[-1], target="cuda -arch=sm_80 -emulate")
    assert "tl::gemm_ss" not in older.get_kernel_source()
    if "cuda" in available_targets():  # the same source, compiled for the real sm_90
        real = tilelang.compile(main, out_idx=[-1], target="cuda -arch=sm_90")
        assert "tl::gemm_ss<64, 64, 64, 2, 2, false, true>" in real.get_kernel_source()
    rng = np.random.default_rng(9)
    a = rng.standard_normal((M, K)).astype(getattr(ml_dtypes, a_dtype))
    b = rng.standard_normal((N, K)).astype(getattr(ml_dtypes, b_dtype))
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    for k in (kernel, older):
        np.testing.assert_allclose(k(a, b), ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("tile_atomic", [False, True])
def test_split_k_atomics_keep_the_accumulator_in_registers(tile_atomic):
    # Both forms of the split-K update (per element in T.Parallel, and on the region)
    # read the register accumulator directly: the gemm stays on the fast path, and
    # the loop body's `k = ...` name does not hide the pipeline's producers.
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "splitk_gemm", pathlib.Path(__file__).parents[2] / "examples" / "splitk_gemm.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    M, N, K, split_k = 90, 70, 500, 4
    func = module.splitk_matmul.get_tir(M, N, K, split_k, tile_atomic=tile_atomic)
    kernel = tilelang.compile(func, target="cuda -arch=sm_90 -emulate")
    source = kernel.get_kernel_source()
    assert "tl::gemm_ss<" in source and "tl::cp_async_gs" in source
    # The region form adds the accumulator's column pairs with one vector reduction.
    assert ("tl::AtomicAddx2(" if tile_atomic else "tl::AtomicAdd(") in source
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-3)
