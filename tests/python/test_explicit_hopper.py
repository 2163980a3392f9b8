"""Explicit Hopper control (python/tilelang/language/hopper.py, lowered by
src/transform/lower_explicit_hopper.cpp): T.ws warpgroup regions, T.alloc_barrier and the
mbarrier operations, T.tma_copy, T.wgmma_gemm / T.wait_wgmma, T.set_max_nreg. The
generated CUDA runs in the emulator ("cuda -arch=sm_90a -emulate": mbarrier, TMA and
wgmma twins, named barriers) against numpy, compiles with NVRTC for sm_90a, and every
misuse is an error that names the argument, what was expected and what was given."""

import importlib.util
import pathlib

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_wgmma_gemm import needs_nvrtc

EMU = "cuda -arch=sm_90a -emulate"
rng = np.random.default_rng(2026)
EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "gemm_ws_hopper.py"


def load_example():
    spec = importlib.util.spec_from_file_location("gemm_ws_hopper", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def f16(*shape):
    return rng.standard_normal(shape).astype(np.float16)


# ---- the producer / consumer GEMM of examples/gemm_ws_hopper.py


@pytest.mark.parametrize(
    "M, N, K, bM, bN, bK, stages, wgmma",
    [
        (128, 128, 256, 64, 64, 32, 2, True),  # two blocks along each dim, 8 K tiles
        (96, 80, 200, 64, 64, 32, 3, True),  # tails: TMA fills the parts outside with zeros
        (128, 64, 128, 64, 64, 64, 2, False),  # T.gemm in the consumer region
    ],
)
def test_warp_specialized_gemm_matches_numpy(M, N, K, bM, bN, bK, stages, wgmma):
    ws = load_example()
    kernel = tilelang.compile(
        ws.gemm_ws(M, N, K, bM, bN, bK, stages, use_wgmma=wgmma), out_idx=[2], target=EMU
    )
    src = kernel.get_kernel_source()
    assert "tl::tma_load<2>(" in src and "tl::mbarrier_expect_tx(" in src, src
    assert "tl::mbarrier_arrive_expect_tx(" not in src, src  # the threads arrive themselves
    # The two warpgroups, on lane 0's rank (read once at the start: nvcc then knows
    # each region's branch is warp-uniform).
    assert "const int32_t tl_warp_rank = tl::warp_leader_rank(tx);" in src, src
    assert "if ((tl_warp_rank < 128)) {" in src and "if ((tl_warp_rank >= 128)) {" in src, src
    assert "tl::wgmma_gemm_ss<64, 64, " in src, src
    if wgmma:
        # Left in flight (Pending = 1; TMA writes both tiles: no proxy fence), then waited.
        assert "tl::wgmma_wait<0>()" in src and ", 1, false>(" in src, src
    a, b = f16(M, K), f16(K, N)
    c = kernel(a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-2, atol=5e-2)


@needs_nvrtc
def test_warp_specialized_gemm_compiles_with_nvrtc_for_sm90a():
    from test_device_sm80 import nvrtc_compile

    ws = load_example()
    kernel = tilelang.compile(ws.gemm_ws(256, 256, 512), out_idx=[2], target="cuda -arch=sm_90a")
    src = kernel.get_kernel_source()
    assert "tl::wgmma_gemm_ss<128, 128, 64, 1, 1, false, false, 1, false>" in src, src
    ok, log = nvrtc_compile("sm_90a", src)
    assert ok, log


# ---- primitives


def test_barrier_arrive_and_wait_order_shared_memory_between_warpgroups():
    # Warpgroup 0 writes a tile and arrives; warpgroup 1 waits on the barrier and reads it.
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), O: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=256):
            S = T.alloc_shared((128,), "float32")
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            with T.ws(0):
                S[tx] = A[tx] * 3.0
                T.barrier_arrive(bar)
            with T.ws(1):
                T.mbarrier_wait_parity(bar[0], 0)
                O[tx - 128] = S[255 - tx] + 1.0

    kernel = tilelang.compile(main, out_idx=[1], target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::mbarrier_init((&bar[0]), 128);" in src, src
    assert "tl::mbarrier_arrive((&bar[0]));" in src and "tl::mbarrier_wait((&bar[0]), 0);" in src
    a = rng.standard_normal(128).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a[::-1] * 3.0 + 1.0, rtol=1e-6)


def test_a_barrier_list_makes_one_mbarrier_per_count():
    @T.prim_func
    def main(O: T.Tensor((256,), "int32")):
        with T.Kernel(1, threads=256):
            bars = T.alloc_barrier([128, 128])
            tx = T.get_thread_binding()
            T.barrier_arrive(bars[tx // 128])
            T.barrier_wait(bars[1 - tx // 128], 0)
            O[tx] = tx + 1

    kernel = tilelang.compile(main, out_idx=[0], target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::mbarrier_init((&bars[0]), 128);" in src
    assert "tl::mbarrier_init((&bars[1]), 128);" in src
    np.testing.assert_array_equal(kernel(), np.arange(1, 257, dtype=np.int32))


def tma_tile_kernel(rows, cols, stages, offset):
    @T.prim_func
    def main(A: T.Tensor((256, 128), "float16"), O: T.Tensor((stages, rows, cols), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((stages, rows, cols), "float16")
            full = T.alloc_barrier([128] * stages)
            for s in T.serial(stages):
                T.tma_copy(A[offset + s * rows, s * cols], S[s, :, :], barrier=full[s])
                T.barrier_arrive(full[s])
            for s in T.serial(stages):
                T.barrier_wait(full[s], 0)
            T.copy(S, O)

    return main


@pytest.mark.parametrize("rows, cols, stages, offset", [(64, 32, 2, 0), (32, 64, 3, 240)])
def test_tma_copy_loads_a_stage_of_a_tile(rows, cols, stages, offset):
    kernel = tilelang.compile(tma_tile_kernel(rows, cols, stages, offset), out_idx=[1], target=EMU)
    src = kernel.get_kernel_source()
    assert "const __grid_constant__ tl::TensorMap tl_tma_map0" in src, src
    # One thread asks for each map (the load's and T.copy's store) at entry.
    entry = src.index("tl::prefetch_tensormap(&tl_tma_map1);")
    assert src.count("tl::prefetch_tensormap(") == 2 and entry < src.index("tl::mbarrier_init"), src
    assert f"tl::mbarrier_expect_tx((&full[s]), {rows * cols * 2});" in src, src
    a = f16(256, 128)
    out = kernel(a)
    for s in range(stages):
        r0, c0 = offset + s * rows, s * cols
        want = np.zeros((rows, cols), np.float16)
        part = a[r0 : r0 + rows, c0 : c0 + cols]  # rows past 256 read as zeros
        want[: part.shape[0], : part.shape[1]] = part
        np.testing.assert_array_equal(out[s], want)


def test_expect_tx_bytes_that_never_arrive_are_reported_as_a_deadlock():
    @T.prim_func
    def main(O: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128):
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx == 0:
                T.mbarrier_expect_tx(bar, 256)
            T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            O[tx] = tx

    kernel = tilelang.compile(main, out_idx=[0], target=EMU)
    assert "tl::mbarrier_expect_tx((&bar[0]), 256);" in kernel.get_kernel_source()
    with pytest.raises(Exception, match="mbarrier deadlock.*256 transaction bytes"):
        kernel()


def test_ws_spreads_parallel_loops_over_the_region_and_syncs_it_with_a_named_barrier():
    @T.prim_func
    def main(A: T.Tensor((512,), "float32"), O: T.Tensor((512,), "float32")):
        with T.Kernel(1, threads=256):
            S = T.alloc_shared((512,), "float32")
            with T.ws(1):
                for i in T.Parallel(512):  # 512 elements over the region's 128 threads
                    S[i] = A[i] * 2.0
                for i in T.Parallel(512):
                    O[i] = S[511 - i] + 1.0  # reads other threads' writes

    kernel = tilelang.compile(main, out_idx=[1], target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::__sync_thread_partial(2, 128);" in src, src
    assert "__syncthreads" not in src.split("if ((tl_warp_rank >= 128)) {")[1], src
    a = rng.standard_normal(512).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a[::-1] * 2.0 + 1.0, rtol=1e-6)


def test_ws_region_reads_what_the_whole_block_wrote():
    # All 256 threads copy the operands; warpgroup 0 alone multiplies them, takes the row
    # maximum and writes it to shared memory; all threads read it back. The region's
    # reads need a block barrier before the region (a named barrier of the region would
    # leave warpgroup 1's part of the tiles unordered), the row maximum is written once
    # per row (its copies in the 4 lanes of a row would race), and the block barrier
    # after the region waits for warpgroup 0 still inside its named barrier.
    @T.prim_func
    def main(
        A: T.Tensor((64, 64), "float16"),
        B: T.Tensor((64, 64), "float16"),
        O: T.Tensor((64, 256), "float32"),
    ):
        with T.Kernel(1, threads=256):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            m_s = T.alloc_shared((64,), "float32")
            acc = T.alloc_fragment((64, 64), "float32")
            m = T.alloc_fragment((64,), "float32")
            out = T.alloc_fragment((64, 256), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            with T.ws(0):
                T.clear(acc)
                T.gemm(A_s, B_s, acc, transpose_B=True)
                T.reduce_max(acc, m, dim=1)
                T.copy(m, m_s)
            for i, j in T.Parallel(64, 256):
                out[i, j] = m_s[i]
            T.copy(out, O)

    kernel = tilelang.compile(main, out_idx=[2], target=EMU)
    src = kernel.get_kernel_source()
    assert "__syncthreads();\n  if ((tl_warp_rank < 128)) {" in src, src
    a, b = f16(64, 64), f16(64, 64)
    want = (a.astype(np.float32) @ b.astype(np.float32).T).max(axis=1)
    np.testing.assert_allclose(kernel(a, b), np.broadcast_to(want[:, None], (64, 256)), rtol=1e-5)


@pytest.mark.parametrize("c0, wgmma", [(256, True), (32, False)])
def test_column_blocks_of_a_tile_as_a_gemm_operand(c0, wgmma):
    # B = columns c0:c0 + 256 of a 64 x 512 tile (stage 1 of two). From 256: 4 of its 8
    # column blocks of 64 (128-byte swizzle), a tile in the same layout, so the wgmma
    # starts at the first. From 32: inside a block, so the general gemm takes it.
    @T.prim_func
    def main(
        KV: T.Tensor((64, 512), "float16"),
        P: T.Tensor((64, 64), "float16"),
        O: T.Tensor((64, 256), "float32"),
    ):
        with T.Kernel(1, threads=128):
            KV_s = T.alloc_shared((2, 64, 512), "float16")
            P_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 256), "float32")
            T.copy(KV, KV_s[1, :, :])
            T.copy(P, P_s)
            T.clear(acc)
            T.gemm(P_s, KV_s[1, :, c0 : c0 + 256], acc)
            T.copy(acc, O)

    kernel = tilelang.compile(main, out_idx=[2], target=EMU)
    assert (
        "tl::wgmma_gemm_ss<64, 256, 64, 1, 1, false, false>" in kernel.get_kernel_source()
    ) == wgmma
    kv, p = f16(64, 512), f16(64, 64)
    want = p.astype(np.float32) @ kv[:, c0 : c0 + 256].astype(np.float32)
    np.testing.assert_allclose(kernel(kv, p), want, rtol=2e-3, atol=2e-3)


def test_deadlock_names_the_threads_at_syncthreads():
    @T.prim_func
    def main(O: T.Tensor((256,), "int32")):
        with T.Kernel(1, threads=256):
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            with T.ws(0):
                T.barrier_wait(bar, 0)  # nobody arrives
            T.sync_threads()
            O[tx] = tx

    kernel = tilelang.compile(main, out_idx=[0], target=EMU)
    with pytest.raises(
        Exception, match=r"threads 0-127 wait for parity 0.*threads 128-255 wait at __syncthreads"
    ):
        kernel()


def test_ws_of_two_warpgroups_covers_threads_256_to_511():
    @T.prim_func
    def main(O: T.Tensor((512,), "int32")):
        with T.Kernel(1, threads=512):
            tx = T.get_thread_binding()
            O[tx] = -1
            with T.ws(2, 3):
                O[tx] = tx * 2

    kernel = tilelang.compile(main, out_idx=[0], target=EMU)
    want = np.where(np.arange(512) >= 256, np.arange(512) * 2, -1).astype(np.int32)
    np.testing.assert_array_equal(kernel(), want)


def test_wgmma_gemm_outside_regions_and_wait_wgmma():
    @T.prim_func
    def main(
        A: T.Tensor((64, 32), "bfloat16"),
        B: T.Tensor((32, 64), "bfloat16"),
        C: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 32), "bfloat16")
            B_s = T.alloc_shared((32, 64), "bfloat16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_f)
            T.wgmma_gemm(A_s, B_s, C_f)
            T.wgmma_gemm(A_s, B_s, C_f)  # waits for the first
            T.wait_wgmma(0)
            T.copy(C_f, C)

    import ml_dtypes

    kernel = tilelang.compile(main, out_idx=[2], target=EMU)
    src = kernel.get_kernel_source()
    assert src.count("tl::wgmma_gemm_ss<64, 64, 32, 1, 1, false, false, 1>") == 2, src
    a = rng.standard_normal((64, 32)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((32, 64)).astype(ml_dtypes.bfloat16)
    ref = 2 * (a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-4, atol=1e-3)


# ---- errors: each names the construct, what it needs and what it got


def simple_barrier_kernel():
    @T.prim_func
    def main(O: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128):
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            O[tx] = tx

    return main


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_barriers_off_sm90_need_sm90(target):
    with pytest.raises(
        tilelang.TileLangError, match=r"T.alloc_barrier needs sm_90 or later.*" + target.split()[0]
    ):
        tilelang.compile(simple_barrier_kernel(), out_idx=[0], target=target)


def test_wgmma_gemm_on_sm90_without_a_needs_sm90a():
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.clear(C_f)
            T.wgmma_gemm(A_s, B_s, C_f)
            T.copy(C_f, C)

    with pytest.raises(
        tilelang.TileLangError, match=r"T.wgmma_gemm needs the wgmma instructions of sm_90a.*sm_90"
    ):
        tilelang.compile(main, target="cuda -arch=sm_90 -emulate")


def trace_error(body):
    """The message of the error that tracing `body(A, O)` in a 256-thread kernel raises."""
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((64, 64), "float16"), O: T.Tensor((256,), "float32")):
            with T.Kernel(1, threads=256):
                body(A, O)

        tilelang.compile(main, target=EMU)
    return str(info.value)


def test_misuse_is_reported_with_argument_expected_and_given():
    def bad_parity(A, O):
        bar = T.alloc_barrier(1)
        T.barrier_wait(bar, 2)

    msg = trace_error(bad_parity)
    assert "T.barrier_wait parity must be 0 or 1" in msg and "got 2" in msg, msg

    def float_parity(A, O):
        bar = T.alloc_barrier(1)
        T.barrier_wait(bar, O[0])

    msg = trace_error(float_parity)
    assert (
        "T.barrier_wait parity must be 0, 1 or an integer expression" in msg and "float32" in msg
    ), msg

    def not_a_barrier(A, O):
        T.barrier_arrive(3)

    msg = trace_error(not_a_barrier)
    assert (
        "T.barrier_arrive barrier must be an mbarrier from T.alloc_barrier" in msg
        and "int 3" in msg
    ), msg

    def many_unindexed(A, O):
        bars = T.alloc_barrier([1, 1])
        T.barrier_arrive(bars)

    assert "holds 2 mbarriers; pass one of them" in trace_error(many_unindexed)

    def bad_count(A, O):
        T.alloc_barrier(0)

    assert "T.alloc_barrier arrive_count must be a positive integer" in trace_error(bad_count)

    def shared_to_shared(A, O):
        S = T.alloc_shared((64, 64), "float16")
        S2 = T.alloc_shared((64, 64), "float16")
        bar = T.alloc_barrier(1)
        T.tma_copy(S, S2, barrier=bar)

    msg = trace_error(shared_to_shared)
    assert (
        "T.tma_copy copies global -> shared or shared -> global: the source 'shared' is in "
        "shared.dyn memory and the destination 'shared_1' in shared.dyn memory" in msg
    ), msg

    def bad_store_wait(A, O):
        T.tma_store_wait(read=1)

    assert "T.tma_store_wait read must be True or False, got int 1" in trace_error(bad_store_wait)

    def no_barrier(A, O):
        S = T.alloc_shared((64, 64), "float16")
        T.tma_copy(A, S)

    assert "T.tma_copy needs barrier=" in trace_error(no_barrier)

    def ws_out_of_range(A, O):
        with T.ws(2):
            O[0] = 1.0

    msg = trace_error(ws_out_of_range)
    assert "T.ws(2) needs threads up to 384, but the kernel has 256" in msg, msg

    def ws_nested(A, O):
        with T.ws(0), T.ws(1):
            O[0] = 1.0

    assert "T.ws regions do not nest" in trace_error(ws_nested)

    def barrier_in_region(A, O):
        with T.ws(0):
            T.alloc_barrier(128)

    assert (
        "T.alloc_barrier must be called at the top level of the T.Kernel body, not inside a T.ws region"
        in (trace_error(barrier_in_region))
    )

    def wait_many(A, O):
        T.wait_wgmma(9)

    assert "T.wait_wgmma n must be a Python int from 0 to 7" in trace_error(wait_many)

    def odd_registers(A, O):
        T.set_max_nreg(100, 1)

    msg = trace_error(odd_registers)
    assert "T.set_max_nreg reg_count must be a Python int, a multiple of 8 from 24 to 256" in msg
    assert "got int 100" in msg, msg

    def bad_direction(A, O):
        T.set_max_nreg(24, 2)

    assert "T.set_max_nreg is_inc must be 1 (raise the limit) or 0 (lower it), got int 2" in (
        trace_error(bad_direction)
    )


def test_set_max_nreg_moves_registers_between_regions():
    """T.set_max_nreg(n, 0 / 1) is setmaxnreg.dec / .inc at the region's start (sm_90a;
    the emulator runs the kernel without it)."""
    M, N = 64, 64

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), O: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=256):
            S = T.alloc_shared((M, N), "float32")
            ready = T.alloc_barrier(128)
            with T.ws(1):
                T.set_max_nreg(24, 0)
                T.copy(A, S)
                T.barrier_arrive(ready)
            with T.ws(0):
                T.set_max_nreg(232, 1)
                T.barrier_wait(ready, 0)
                for i, j in T.Parallel(M, N):
                    O[i, j] = S[i, j] * 2

    kernel = tilelang.compile(main, target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::setmaxnreg_dec<24>();" in src and "tl::setmaxnreg_inc<232>();" in src, src
    a = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros_like(a)
    kernel(a, out)
    np.testing.assert_array_equal(out, a * 2)


def test_a_fragment_used_by_two_regions_is_refused():
    @T.prim_func
    def main(C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256):
            C_f = T.alloc_fragment((64, 64), "float32")
            with T.ws(0):
                T.clear(C_f)
            with T.ws(1):
                T.copy(C_f, C)

    with pytest.raises(
        tilelang.TileLangError,
        match=r"fragment 'C_f' is used by threads \[0, 128\) and by threads \[128, 256\)",
    ):
        tilelang.compile(main, target=EMU)


def test_tma_copy_into_part_of_a_tile_is_refused():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), O: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float16")
            bar = T.alloc_barrier(1)
            T.tma_copy(A[0:32, 0:64], S[0:32, :], barrier=bar)
            T.barrier_wait(bar, 0)
            T.copy(S, O)

    with pytest.raises(
        tilelang.TileLangError, match=r"T.tma_copy: writes a whole tile.*'S'.*dim 0"
    ):
        tilelang.compile(main, target=EMU)


def test_tma_copy_at_an_innermost_start_off_16_bytes_is_refused():
    """The H200 stops a TMA copy whose box starts at a column that is not a whole
    16-byte unit (4 float16 columns here) with an illegal instruction: refused, at
    the kernel's line."""

    @T.prim_func
    def main(A: T.Tensor((64, 128), "float16"), O: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float16")
            bar = T.alloc_barrier(1)
            T.tma_copy(A[0:64, 4:68], S, barrier=bar)
            T.barrier_wait(bar, 0)
            T.copy(S, O)

    with pytest.raises(
        tilelang.TileLangError,
        match=r"test_explicit_hopper.py:\d+: T.tma_copy: the innermost start of the source, 4, is not a provable "
        r"multiple of 8 float16 elements \(16 bytes\); the GPU stops",
    ):
        tilelang.compile(main, target=EMU)


def test_wgmma_gemm_that_cannot_use_wgmma_is_refused():
    @T.prim_func
    def main(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((32, 32), "float16")
            C_f = T.alloc_fragment((32, 32), "float32")
            T.copy(A, A_s)
            T.clear(C_f)
            T.wgmma_gemm(A_s, A_s, C_f)  # M = 32: no m64 block
            T.copy(C_f, C)

    with pytest.raises(
        tilelang.TileLangError,
        match=r"T.wgmma_gemm: this gemm cannot run on wgmma \(accumulator 'C_f'\)",
    ):
        tilelang.compile(main, target=EMU)


def test_a_block_barrier_only_some_threads_reach_is_named_in_the_deadlock():
    @T.prim_func
    def stuck(A: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256) as _:
            tx = T.get_thread_binding()
            bar = T.alloc_barrier(128)
            if tx < 128:
                T.barrier_wait(bar, 0)
            else:
                T.sync_threads()  # the consumers never get here
                T.barrier_arrive(bar)
            A[tx] = 1.0

    kernel = tilelang.compile(stuck, target="cuda -arch=sm_90a -emulate")
    with pytest.raises(tilelang.TileLangError) as err:
        kernel(np.zeros(256, np.float32))
    text = str(err.value)
    assert "mbarrier deadlock" in text and "threads 128-255 wait at __syncthreads" in text, text
    assert "a block barrier that only some threads reach" in text, text


def tma_copy_store_gemm(M, N, K, stages):
    """TileLang's language/test_tilelang_language_tma_copy.py store kernel: the loads
    through T.tma_copy, the result fragment -> shared -> global through T.tma_copy's store
    form, then T.tma_store_wait(read=False)."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_s = T.alloc_shared((64, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            mbar_A = T.alloc_barrier(128)
            mbar_B = T.alloc_barrier(128)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=stages):
                T.tma_copy(A[by * 64, k * 32], A_s, barrier=mbar_A)
                T.barrier_arrive(mbar_A)
                T.tma_copy(B[k * 32, bx * 64], B_s, barrier=mbar_B)
                T.barrier_arrive(mbar_B)
                T.mbarrier_wait_parity(mbar_A, k % 2)
                T.mbarrier_wait_parity(mbar_B, k % 2)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C_s)
            T.tma_copy(C_s, C[by * 64, bx * 64])
            T.tma_store_arrive()
            T.tma_store_wait(read=False)

    return main


@pytest.mark.parametrize("stages", [2, 3])
def test_tma_copy_store_form_and_many_phases_match_numpy(stages):
    # 40 k steps: the barriers' phases wrap many times (an extra arrival per copy, as
    # T.tma_copy made before 2026-12-06, let phases complete before their tiles landed).
    M, N, K = 64, 128, 1280
    kernel = tilelang.compile(tma_copy_store_gemm(M, N, K, stages), out_idx=[2], target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::mbarrier_expect_tx(" in src and "tl::mbarrier_arrive_expect_tx(" not in src, src
    assert "tl::tma_store<2>(" in src, src
    a, b = f16(M, K), f16(K, N)
    c = kernel(a, b)
    np.testing.assert_allclose(
        c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=5e-2
    )
