"""Epilogue stores through TMA on sm_90: a T.copy from a whole plain shared tile to a
region of a tensor parameter becomes a fence.proxy.async, a block barrier and
tl::tma_store per box issued by one thread, which commits and waits for them before
anyone touches the tile again; the parts of the box outside the tensor are clipped,
as TileLang's predicated stores drop them. Copies TMA cannot do, and every copy under
the pass config tl.disable_tma_lower, stay element-wise. A tensor the kernel reads back
after storing it waits for the writes themselves (tl::tma_store_wait<0, false>) and loses
__restrict__. The CUDA source runs in the emulator (device/emu/tma_emu.h) against numpy,
which lands a store's writes as late as the GPU may."""

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_wgmma_gemm import needs_nvrtc

# TMA stores are on by default (tl.enable_tma_store: False turns them off); the
# tests say so explicitly.
STORES = {"tl.enable_tma_store": True}


# Only A_out's store is looked at where the C fragment's own staged store would count too.
UNSTAGED = {"tl.stage_fragment_stores": False}


def compile_with_stores(func, **kw):
    kw["pass_configs"] = {**STORES, **(kw.get("pass_configs") or {})}
    return tilelang.compile(func, **kw)


SM90A = "cuda -arch=sm_90a -emulate"  # wgmma + TMA
SM90 = "cuda -arch=sm_90 -emulate"  # mma.sync + TMA
NP_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}
rng = np.random.default_rng(1208)


def tma_stored(src):
    """The source stores through TMA, fenced for the async proxy and waited for."""
    return (
        "tl::tma_store<2>(" in src
        and "tl::fence_proxy_async()" in src
        and "tl::tma_store_arrive()" in src
        and "tl::tma_store_wait<0, true>()" in src
    )


def epilogue_gemm(M, N, K, bM, bN, bK, dtype, out_dtype, threads=128, stages=2):
    """C = A @ B, the accumulator going out through a shared tile (TileLang's usual
    epilogue: fragment -> shared -> global)."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bK, bN), dtype)
            C_f = T.alloc_fragment((bM, bN), "float32")
            C_s = T.alloc_shared((bM, bN), out_dtype)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C_s)
            T.copy(C_s, C[by * bM, bx * bN])

    return main


def run_gemm(kernel, M, N, K, dtype, out_dtype):
    a = rng.standard_normal((M, K)).astype(NP_DTYPES[dtype])
    b = rng.standard_normal((K, N)).astype(NP_DTYPES[dtype])
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # Sentinel output: what the kernel must not write (outside the tensor it cannot).
    c = kernel(a, b).astype(np.float64)
    tol = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1e-2}[out_dtype]
    np.testing.assert_allclose(c, ref, rtol=tol, atol=tol * 4)


# (M, N, K, bM, bN, bK, dtype, out dtype): M and N are not multiples of the tile, so
# the last boxes run past the tensor and TMA clips them; N keeps rows a 16-byte multiple.
GEMM_CASES = {
    "f16_out_f16_tails": (100, 88, 64, 64, 64, 32, "float16", "float16"),
    "bf16_out_bf16_tails": (130, 72, 48, 64, 64, 16, "bfloat16", "bfloat16"),
    "f16_out_f32_tails": (72, 100, 32, 64, 64, 32, "float16", "float32"),
}


@pytest.mark.parametrize("target", [SM90A, SM90])
@pytest.mark.parametrize("name", sorted(GEMM_CASES))
def test_gemm_epilogue_stores_through_tma(name, target):
    M, N, K, bM, bN, bK, dtype, out_dtype = GEMM_CASES[name]
    kernel = compile_with_stores(
        epilogue_gemm(M, N, K, bM, bN, bK, dtype, out_dtype), out_idx=[-1], target=target
    )
    src = kernel.get_kernel_source()
    assert tma_stored(src), src
    # C_s is laid out in the 128-byte swizzle (its fragment writes then spread over the
    # banks), one box per 128-byte column block.
    block_cols = 128 // (4 if out_dtype == "float32" else 2)
    maps = [x for x in kernel.kernel.signature_text.splitlines() if x.startswith("tma 2 ")]
    assert maps == [f"tma 2 {out_dtype} 2 {block_cols},{bM} 128 0"], kernel.kernel.signature_text
    assert src.count("tl::tma_store<2>(") == bN // block_cols, src
    run_gemm(kernel, M, N, K, dtype, out_dtype)


def copy_through_shared(M, N, bM, bN, dtype, threads=128, scale=2.0):
    """B = A * scale, each block's tile staged in a shared tile written by the threads."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            S = T.alloc_shared((bM, bN), dtype)
            for i, j in T.Parallel(bM, bN):
                S[i, j] = A[by * bM + i, bx * bN + j] * T.cast(scale, dtype)
            T.copy(S, B[by * bM, bx * bN])

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_tile_written_by_threads_is_stored_with_clipped_tails(dtype):
    M, N, bM, bN = 50, 40, 16, 32  # tails in both dims
    kernel = compile_with_stores(
        copy_through_shared(M, N, bM, bN, dtype), out_idx=[-1], target=SM90A
    )
    src = kernel.get_kernel_source()
    assert tma_stored(src), src
    a = rng.standard_normal((M, N)).astype(NP_DTYPES[dtype])
    out = kernel(a)
    np.testing.assert_array_equal(out, (a * NP_DTYPES[dtype](2.0)).astype(NP_DTYPES[dtype]))


def store_into_the_middle(M, N, bM, bN, threads):
    """B[3 : 3 + M, 8 : 8 + N] = A + 1 where B is (M + 7, N + 8): the elements no block
    owns must keep their values."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M + 7, N + 8), "float32")):
        with T.Kernel(N // bN, M // bM, threads=threads) as (bx, by):
            S = T.alloc_shared((bM, bN), "float32")
            for i, j in T.Parallel(bM, bN):
                S[i, j] = A[by * bM + i, bx * bN + j] + 1.0
            T.copy(S, B[by * bM + 3, bx * bN + 8])

    return main


def tile_stored_in_a_loop(M, N, bM, bN):
    """One shared tile stores the row blocks of B = A - 1 in turn: each store must have
    read it before the threads overwrite it."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((bM, bN), "float16")
            for r in T.serial(T.ceildiv(M, bM)):
                for i, j in T.Parallel(bM, bN):
                    S[i, j] = A[r * bM + i, j] - T.float16(1)
                T.copy(S, B[r * bM, bx * bN])

    return main


def shifted_tiles(M, N, bM, bN, shift):
    """B = A + 1 in row tiles that start `shift` rows before row 0 (FlashAttention's
    causal row tiles aligned to the sequence's end): the first block's tiles start at
    row -shift. The column tiles are pipelined (TMA loads on sm_90) and each goes
    out from a shared tile."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(M + shift, bM), threads=128) as bx:
            S = T.alloc_shared((bM, bN), "float16")
            R = T.alloc_shared((bM, bN), "float16")
            row = bx * bM - shift
            for k in T.Pipelined(T.ceildiv(N, bN), num_stages=2):
                T.copy(A[row, k * bN], S)
                for i, j in T.Parallel(bM, bN):
                    R[i, j] = S[i, j] + T.float16(1)
                T.copy(R, B[row, k * bN])

    return main


@pytest.mark.parametrize("shift", [0, 24])
def test_a_store_that_may_start_before_the_tensor_stays_element_wise(shift):
    """TMA stores only boxes that start at coordinates >= 0 (a negative start stops the
    kernel with an illegal instruction on the H200); the loads of the same tiles keep
    TMA, which fills the rows before 0 with zeros."""
    M, N = 100, 128
    kernel = compile_with_stores(shifted_tiles(M, N, 64, 64, shift), out_idx=[-1], target=SM90)
    src = kernel.get_kernel_source()
    assert "tl::tma_load<2>(" in src, src
    assert ("tl::tma_store<" in src) == (shift == 0), src
    a = rng.standard_normal((M, N)).astype(np.float16)
    np.testing.assert_array_equal(kernel(a), a + np.float16(1))


def column_shifted_tiles(M, N, shift):
    """B = A + 1 over columns [shift, N), in column tiles that start `shift` columns in."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(M, 64), threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            R = T.alloc_shared((64, 64), "float16")
            for k in T.Pipelined(T.ceildiv(N - shift, 64), num_stages=2):
                T.copy(A[bx * 64, k * 64 + shift], S)
                for i, j in T.Parallel(64, 64):
                    R[i, j] = S[i, j] + T.float16(1)
                T.copy(R, B[bx * 64, k * 64 + shift])

    return main


@pytest.mark.parametrize("shift, tma", [(0, True), (8, True), (4, False), (1, False)])
def test_tiles_at_an_innermost_start_off_16_bytes_skip_tma(shift, tma):
    """TMA copies only boxes whose innermost start is a provable multiple of 16 bytes
    (8 float16 columns): the H200 stops any other with an illegal instruction. The
    load falls back to cp.async (or plain loads) and the store to element-wise writes."""
    M, N = 64, 200
    kernel = compile_with_stores(column_shifted_tiles(M, N, shift), target=SM90)
    src = kernel.get_kernel_source()
    assert ("tl::tma_load<2>(" in src) == tma and ("tl::tma_store<2>(" in src) == tma, src
    assert ("tl::cp_async_gs" in src) == (shift == 4), (
        src
    )  # 8-byte cp.async; 1 is too narrow for any
    a = rng.standard_normal((M, N)).astype(np.float16)
    b = np.zeros_like(a)
    kernel(a, b)
    expected = np.zeros_like(a)
    expected[:, shift:] = a[:, shift:] + np.float16(1)
    np.testing.assert_array_equal(b, expected)


def test_the_store_writes_nothing_outside_its_region():
    M, N = 32, 64
    kernel = compile_with_stores(store_into_the_middle(M, N, 16, 32, threads=64), target=SM90A)
    assert tma_stored(kernel.get_kernel_source())
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal((M + 7, N + 8)).astype(np.float32)
    ref = b.copy()
    ref[3 : 3 + M, 8 : 8 + N] = a + 1.0
    kernel(a, b)
    np.testing.assert_array_equal(b, ref)


def test_tile_reused_in_a_loop_waits_for_the_store():
    # (the emulator checks at tma_store_wait that the store has read the tile)
    M, N = 72, 64
    kernel = compile_with_stores(tile_stored_in_a_loop(M, N, 16, 64), out_idx=[-1], target=SM90)
    src = kernel.get_kernel_source()
    assert tma_stored(src)
    # The issuing thread waits right before the next refill (and once after the loop),
    # not right after its store.
    assert src.count("tl::tma_store_wait<0, true>()") == 2, src
    assert src.index("tl::tma_store_wait<0, true>()") < src.index("tl::tma_store<2>("), src
    a = rng.standard_normal((M, N)).astype(np.float16)
    np.testing.assert_array_equal(kernel(a), a - np.float16(1))


def test_disable_tma_lower_keeps_the_element_wise_store():
    M, N, K, bM, bN, bK, dtype, out_dtype = GEMM_CASES["f16_out_f16_tails"]
    kernel = compile_with_stores(
        epilogue_gemm(M, N, K, bM, bN, bK, dtype, out_dtype),
        out_idx=[-1],
        target=SM90A,
        pass_configs={"tl.disable_tma_lower": True},
    )
    src = kernel.get_kernel_source()
    assert "tl::tma_store<" not in src and "tl::tma_load<" not in src, src
    run_gemm(kernel, M, N, K, dtype, out_dtype)


def test_no_tma_store_before_sm90():
    kernel = compile_with_stores(
        copy_through_shared(32, 64, 16, 32, "float16"),
        out_idx=[-1],
        target="cuda -arch=sm_80 -emulate",
    )
    assert "tl::tma_store<" not in kernel.get_kernel_source()
    a = rng.standard_normal((32, 64)).astype(np.float16)
    np.testing.assert_array_equal(kernel(a), a * np.float16(2))


def test_stores_tma_cannot_do_stay_element_wise():
    M, N = 48, 60  # float16 rows of 120 bytes: not a 16-byte multiple, no tensor map

    @T.prim_func
    def odd_rows(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 16), threads=64) as (bx, by):
            S = T.alloc_shared((16, 32), "float16")
            for i, j in T.Parallel(16, 32):
                S[i, j] = A[by * 16 + i, bx * 32 + j]
            T.copy(S, B[by * 16, bx * 32])

    @T.prim_func
    def casting(A: T.Tensor((32, 64), "float32"), B: T.Tensor((32, 64), "float16")):
        with T.Kernel(2, 2, threads=64) as (bx, by):
            S = T.alloc_shared((16, 32), "float32")
            for i, j in T.Parallel(16, 32):
                S[i, j] = A[by * 16 + i, bx * 32 + j]
            T.copy(S, B[by * 16, bx * 32])  # float32 tile into a float16 tensor

    @T.prim_func
    def part_of_tile(A: T.Tensor((32, 64), "float32"), B: T.Tensor((32, 64), "float32")):
        with T.Kernel(2, 2, threads=64) as (bx, by):
            S = T.alloc_shared((16, 64), "float32")
            for i, j in T.Parallel(16, 64):
                S[i, j] = A[by * 16 + i, j]
            T.copy(S[0:16, bx * 32 : bx * 32 + 32], B[by * 16, bx * 32])  # not the whole tile

    @T.prim_func
    def opted_out(A: T.Tensor((32, 64), "float32"), B: T.Tensor((32, 64), "float32")):
        with T.Kernel(2, 2, threads=64) as (bx, by):
            S = T.alloc_shared((16, 32), "float32")
            for i, j in T.Parallel(16, 32):
                S[i, j] = A[by * 16 + i, bx * 32 + j]
            T.copy(S, B[by * 16, bx * 32], disable_tma=True)

    @T.prim_func
    def under_thread_condition(A: T.Tensor((32, 64), "float32"), B: T.Tensor((32, 64), "float32")):
        with T.Kernel(2, 2, threads=64) as (bx, by):
            S = T.alloc_shared((16, 32), "float32")
            for i, j in T.Parallel(16, 32):
                S[i, j] = A[by * 16 + i, bx * 32 + j]
            tx = T.get_thread_binding()
            if tx < 64:  # every thread, but the barrier could not know
                T.copy(S, B[by * 16, bx * 32])

    a = rng.standard_normal((M, N)).astype(np.float16)
    k = compile_with_stores(odd_rows, out_idx=[-1], target=SM90A)
    assert "tl::tma_store<" not in k.get_kernel_source()
    np.testing.assert_array_equal(k(a), a)
    a32 = rng.standard_normal((32, 64)).astype(np.float32)
    for fn, ref in (
        (casting, a32.astype(np.float16)),
        (part_of_tile, a32),
        (opted_out, a32),
        (under_thread_condition, a32),
    ):
        k = compile_with_stores(fn, out_idx=[-1], target=SM90A)
        assert "tl::tma_store<" not in k.get_kernel_source(), fn
        np.testing.assert_array_equal(k(a32), ref)


def operand_round_trip(M, K, N, bM, dtype):
    """C = A @ B and A_out = A, the A tile going back out from the gemm's (swizzled)
    operand tile."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), "float32"),
        A_out: T.Tensor((M, K), dtype),
    ):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            A_s = T.alloc_shared((bM, K), dtype)
            B_s = T.alloc_shared((K, N), dtype)
            C_f = T.alloc_fragment((bM, N), "float32")
            T.clear(C_f)
            T.copy(A[bx * bM, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[bx * bM, 0])
            T.copy(A_s, A_out[bx * bM, 0])

    return main


# (target, K, the A_out map's box and swizzle): the wgmma layout of 64-byte rows is
# TMA's 64-byte swizzle; its 256-byte rows are two 128-byte column blocks, one box
# each; the mma.sync swizzle of 64-byte rows is the 64-byte mode.
SWIZZLED = {
    "wgmma_64B": (SM90A, 32, "32,64 64"),
    "wgmma_two_column_blocks": (SM90A, 128, "64,64 128"),
    "mma_sync_64B": (SM90, 32, "32,64 64"),
}


@pytest.mark.parametrize("name", sorted(SWIZZLED))
def test_a_swizzled_operand_tile_is_stored_in_its_swizzle(name):
    target, K, box = SWIZZLED[name]
    M, N, bM = 100, 64, 64
    kernel = compile_with_stores(
        operand_round_trip(M, K, N, bM, "float16"),
        out_idx=[2, 3],
        target=target,
        pass_configs=UNSTAGED,
    )
    src = kernel.get_kernel_source()
    assert tma_stored(src), src
    maps = [x for x in kernel.kernel.signature_text.splitlines() if x.startswith("tma 3 ")]
    assert maps == [f"tma 3 float16 2 {box} 0"], kernel.kernel.signature_text
    if name == "wgmma_two_column_blocks":
        assert src.count("tl::tma_store<2>(") == 2, src
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c, a_out = kernel(a, b)
    np.testing.assert_array_equal(a_out, a)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)


def test_a_tile_whose_swizzle_tma_lacks_keeps_the_element_wise_store():
    # mma.sync swizzles 256-byte rows by row alone: not a TMA mode.
    M, K, N, bM = 64, 128, 64, 64
    kernel = compile_with_stores(
        operand_round_trip(M, K, N, bM, "float16"),
        out_idx=[2, 3],
        target=SM90,
        pass_configs=UNSTAGED,
    )
    assert "tl::tma_store<" not in kernel.get_kernel_source()
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c, a_out = kernel(a, b)
    np.testing.assert_array_equal(a_out, a)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)


@needs_nvrtc
@pytest.mark.parametrize("out_dtype", ["float16", "float32"])
def test_tma_store_epilogue_compiles_with_nvrtc_for_sm90a(out_dtype):
    kernel = compile_with_stores(
        epilogue_gemm(256, 256, 256, 128, 128, 64, "float16", out_dtype, threads=256, stages=3),
        target="cuda -arch=sm_90a",
    )
    assert tma_stored(kernel.get_kernel_source())


def test_stores_are_the_default_and_the_config_turns_them_off():
    func = copy_through_shared(32, 64, 16, 32, "float16")
    assert tma_stored(tilelang.compile(func, out_idx=[-1], target=SM90A).get_kernel_source())
    off = tilelang.compile(
        func, out_idx=[-1], target=SM90A, pass_configs={"tl.enable_tma_store": False}
    )
    src = off.get_kernel_source()
    assert "tl::tma_store<" not in src, src
    a = rng.standard_normal((32, 64)).astype(np.float16)
    np.testing.assert_array_equal(off(a), a * np.float16(2))


def tiles_added_by_every_block(M, N, bM, bN, blocks, dtype, memory_order=None):
    """Out += 2 * X.sum(0) where X is (blocks, M, N): every block adds its slice of X
    into the whole of Out, one shared tile at a time (T.atomic_add from a shared tile),
    the same tile refilled for each of Out's tiles."""

    @T.prim_func
    def main(X: T.Tensor((blocks, M, N), dtype), Out: T.Tensor((M, N), dtype)):
        with T.Kernel(blocks, threads=128) as bz:
            S = T.alloc_shared((bM, bN), dtype)
            for r in T.serial(T.ceildiv(M, bM)):
                for c in T.serial(T.ceildiv(N, bN)):
                    T.copy(X[bz, r * bM : (r + 1) * bM, c * bN : (c + 1) * bN], S)
                    for i, j in T.Parallel(bM, bN):
                        S[i, j] = S[i, j] * T.cast(2, dtype)
                    dst = Out[r * bM : (r + 1) * bM, c * bN : (c + 1) * bN]
                    if memory_order is None:
                        T.atomic_add(dst, S)
                    else:
                        T.atomic_add(dst, S, memory_order=memory_order)

    return main


def run_added_tiles(kernel, M, N, blocks, dtype):
    np_dtype = {
        "float32": np.float32,
        "int32": np.int32,
        "uint64": np.uint64,
        "float16": np.float16,
        "bfloat16": ml_dtypes.bfloat16,
        "int16": np.int16,
    }[dtype]
    if dtype == "uint64":  # sums past 2^64 wrap around, as the hardware's do
        x = rng.integers(0, 1 << 62, (blocks, M, N), dtype=np.uint64) * np.uint64(3)
        out = rng.integers(0, 1 << 63, (M, N), dtype=np.uint64)
        want = out.copy()
        with np.errstate(over="ignore"):
            for b in range(blocks):
                want += x[b] * np.uint64(2)
        kernel(x, out)
        np.testing.assert_array_equal(out, want)
        return
    x = (rng.standard_normal((blocks, M, N)) * 8).astype(np_dtype)
    out = (rng.standard_normal((M, N)) * 8).astype(np_dtype)
    ref = out.astype(np.float64) + 2 * x.astype(np.float64).sum(axis=0)
    kernel(x, out)
    tol = {"float16": 2e-2, "bfloat16": 1e-1}.get(dtype, 1e-5)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=tol, atol=tol * 8)


# The dtypes the tensor form of cp.reduce.async.bulk adds (its tensor map names them).
@pytest.mark.parametrize("dtype", ["float32", "int32", "float16", "bfloat16", "uint64"])
def test_atomic_add_of_a_shared_tile_is_a_tma_reduce(dtype):
    M, N, bM, bN, blocks = 100, 72, 64, 32, 3  # tails in both dims, clipped by TMA
    kernel = compile_with_stores(
        tiles_added_by_every_block(M, N, bM, bN, blocks, dtype), target=SM90A
    )
    src = kernel.get_kernel_source()
    assert "tl::tma_store_add<2>(" in src and "tl::AtomicAdd(" not in src, src
    assert "tl::tma_store_wait<0, true>()" in src and "tl::fence_proxy_async()" in src, src
    run_added_tiles(kernel, M, N, blocks, dtype)


@pytest.mark.parametrize(
    "dtype, configs, memory_order",
    [
        ("int16", {}, None),  # a dtype TMA cannot add
        ("float32", {}, "release"),  # an ordered atomic stays one per element
        ("float32", {"tl.disable_tma_lower": True}, None),
        ("float32", {"tl.enable_tma_store": False}, None),
    ],
)
def test_atomic_adds_tma_does_not_reduce_stay_element_wise(dtype, configs, memory_order):
    M, N, bM, bN, blocks = 40, 64, 32, 32, 2
    kernel = compile_with_stores(
        tiles_added_by_every_block(M, N, bM, bN, blocks, dtype, memory_order),
        target=SM90A,
        pass_configs=configs,
    )
    src = kernel.get_kernel_source()
    assert "tma_store_add" not in src and "tl::AtomicAdd(" in src, src
    run_added_tiles(kernel, M, N, blocks, dtype)


def stored_then_read_back(M, N, bM):
    """Each block stores its rows of A into W through TMA, then its threads read those
    rows of W back, reversed, into Out: the store's writes must have landed first."""

    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        W: T.Tensor((M, N), "float32"),
        Out: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(M // bM, threads=128) as bx:
            S = T.alloc_shared((bM, N), "float32")
            T.copy(A[bx * bM, 0], S)
            T.copy(S, W[bx * bM, 0])
            T.sync_threads()
            for i, j in T.Parallel(bM, N):
                Out[bx * bM + i, j] = W[bx * bM + bM - 1 - i, N - 1 - j] * 2.0

    return main


def test_a_tensor_read_back_after_its_store_waits_for_the_writes():
    # cp.async.bulk.wait_group.read only says that the tile was read. The emulator lands
    # a store's writes no earlier than the GPU has to (at a tma_store_wait<N, false>, or when the
    # issuing thread returns): with the plain wait, W would read back as zeros here.
    M, N, bM = 64, 64, 16
    kernel = compile_with_stores(stored_then_read_back(M, N, bM), out_idx=[-1], target=SM90)
    src = kernel.get_kernel_source()
    assert "tl::tma_store<2>(" in src and "tl::tma_store_wait<0, false>()" in src, src
    assert "tl::tma_store_wait<0, true>" not in src, src
    # nvcc does not see the writes made through the tensor map: W must not be
    # __restrict__, or its loads take the non-coherent path (ld.global.nc), which on the
    # H200 returned stale values after the store. A, only read, keeps it.
    assert "float* W," in src and "float* __restrict__ A," in src, src
    a = rng.standard_normal((M, N)).astype(np.float32)
    w = np.zeros((M, N), np.float32)
    out = kernel(a, w)
    np.testing.assert_array_equal(w, a)
    np.testing.assert_array_equal(out, (a.reshape(M // bM, bM, N)[:, ::-1, ::-1] * 2).reshape(M, N))


def test_a_store_only_output_keeps_restrict():
    # Only a tensor the threads also load loses __restrict__: an epilogue's output,
    # written by TMA and never loaded, keeps it (and its kernel's source is unchanged).
    M, N, K, bM, bN, bK, dtype, out_dtype = GEMM_CASES["f16_out_f16_tails"]
    kernel = compile_with_stores(
        epilogue_gemm(M, N, K, bM, bN, bK, dtype, out_dtype), out_idx=[-1], target=SM90A
    )
    src = kernel.get_kernel_source()
    assert tma_stored(src) and "__restrict__ C," in src, src


def split_k_in_a_cluster(M, N, K, bN, bK, stages, threads, dtype="bfloat16"):
    """C = A @ B^T with K split in two between the blocks of a cluster of 2 along z: each
    stores its float32 partial tile to the workspace W (a TMA store of the staged
    accumulator), meets its partner at T.cluster_sync, adds the partner's partial and
    writes its half of the tile's rows."""
    half, hm = K // 2, M // 2

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((N, K), dtype),
        W: T.Tensor((N // bN, 2, M, bN), "float32"),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(N // bN, 1, 2, threads=threads, cluster_dims=(1, 1, 2)) as (bx, _by, bz):
            A_s = T.alloc_shared((M, bK), dtype)
            B_s = T.alloc_shared((bN, bK), dtype)
            acc = T.alloc_fragment((M, bN), "float32")
            part = T.alloc_fragment((M, bN), "float32")
            T.clear(acc)
            for ko in T.Pipelined(half // bK, num_stages=stages):
                T.copy(A[0, bz * half + ko * bK], A_s)
                T.copy(B[bx * bN, bz * half + ko * bK], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, W[bx, bz, 0, 0])
            T.cluster_sync()
            T.copy(W[bx, 1 - bz, 0, 0], part)
            for i, j in T.Parallel(M, bN):
                if i // hm == bz:
                    C[i, bx * bN + j] = acc[i, j] + part[i, j]

    return main


def test_split_k_partners_read_each_others_stored_partials():
    M, N, K, bN, bK = 64, 128, 256, 64, 64
    kernel = tilelang.compile(
        split_k_in_a_cluster(M, N, K, bN, bK, 2, 128), out_idx=[-1], target=SM90A
    )
    src = kernel.get_kernel_source()
    assert "tl::tma_store<" in src and "tl::tma_store_wait<0, false>()" in src, src
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    w = np.zeros((N // bN, 2, M, bN), np.float32)
    c = kernel(a, b, w).astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=5e-2)


def store_with_preference(prefer, annotations=False):
    kwargs = (
        {"annotations": {"prefer_instruction": prefer}}
        if annotations
        else {"prefer_instruction": prefer}
    )

    @T.prim_func
    def main(A: T.Tensor((32, 64), "float32"), B: T.Tensor((32, 64), "float32")):
        with T.Kernel(2, 2, threads=64) as (bx, by):
            S = T.alloc_shared((16, 32), "float32")
            for i, j in T.Parallel(16, 32):
                S[i, j] = A[by * 16 + i, bx * 32 + j]
            T.copy(S, B[by * 16, bx * 32], **kwargs)

    return main


@pytest.mark.parametrize(
    "prefer, annotations, tma",
    [
        ("sync", False, False),
        ("sync", True, False),
        ("tma", False, True),
        ("cp_async", False, True),
    ],
)
def test_prefer_instruction_is_a_hint(prefer, annotations, tma):
    # TileLang's T.copy(prefer_instruction=): "sync" keeps the store off TMA; "tma" and
    # "cp_async" leave the choice to the compiler, which takes TMA for this tile.
    k = compile_with_stores(store_with_preference(prefer, annotations), out_idx=[-1], target=SM90A)
    assert ("tl::tma_store<" in k.get_kernel_source()) == tma
    a = rng.standard_normal((32, 64)).astype(np.float32)
    np.testing.assert_array_equal(k(a), a)


def test_prefer_instruction_must_be_known():
    with pytest.raises(
        tilelang.TileLangError,
        match=r"T.copy prefer_instruction must be one of 'tma', 'cp_async', 'sync' or None, got 'ldg'",
    ):
        store_with_preference("ldg")


def test_tilelang_store_group_calls_are_emitted_on_sm90_and_nothing_elsewhere():
    """T.tma_store_arrive / T.tma_store_wait(count, read): TileLang's group calls, as
    written on sm_90 (the compiler's own stores are committed and waited for where it
    issues them, so these find nothing in flight); before sm_90, on the cpu target and
    on Metal nothing. The copy's result is the same everywhere."""

    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((64,), "float32")
            T.copy(A, S)
            T.copy(S, B)
            T.tma_store_arrive()
            T.tma_store_wait(read=False)
            T.tma_store_wait(1)

    calls = {}
    for target in (
        "cuda -arch=sm_90a -emulate",
        "cuda -arch=sm_80 -emulate",
        "cpu",
        "metal -emulate",
    ):
        kernel = tilelang.compile(main, target=target)
        a, b = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
        kernel(a, b)
        np.testing.assert_array_equal(b, a)
        src = kernel.get_kernel_source()
        calls[target] = [ln.strip() for ln in src.splitlines() if "tl::tma_store" in ln]
    sm90 = calls["cuda -arch=sm_90a -emulate"]
    # the compiler's store, committed and waited for, then the three calls as written
    assert sm90[0].startswith("tl::tma_store<1>(") and sm90[1:] == [
        "tl::tma_store_arrive();",
        "tl::tma_store_wait<0, true>();",
        "tl::tma_store_arrive();",
        "tl::tma_store_wait<0, false>();",
        "tl::tma_store_wait<1, true>();",
    ], sm90
    assert calls["cuda -arch=sm_80 -emulate"] == [], calls
    assert calls["metal -emulate"] == [], calls  # (void)0 there
