"""Producer/consumer warp specialization of TMA pipelines on sm_90a
(src/transform/warp_specialize.cpp): a T.Pipelined loop at the top of a kernel of T
threads whose copies are all TMA copies gets an extra warpgroup. One of its threads
issues the copies as far ahead as the tiles' versions allow, waiting on "empty"
mbarriers the consumers arrive on once they are done with a version; the kernel's
own T threads wait on the "full" mbarriers and never on the producer otherwise. The
generated CUDA runs in the emulator against numpy; the pass config
tl.disable_warp_specialized turns it off. tests/gpu runs the same kernels on the
H200 (test_tma_pipeline_gpu.py, test_examples_hopper_gpu.py)."""

import pathlib
import sys

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_wgmma_gemm import needs_nvrtc, operands, wgmma_gemm

sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "examples"))
import flash_attention as fa_example

SM90A = "cuda -arch=sm_90a -emulate"
OFF = {"tl.disable_warp_specialized": True}


def launch_threads(kernel):
    """The block the runtime launches: `threads <dims> <sizes...>` of the signature."""
    for line in kernel.kernel.signature_text.splitlines():
        if line.startswith("threads "):
            return [int(v) for v in line.split()[2:]]
    raise AssertionError("the signature has no threads line")


# (M, N, K, bM, bN, bK, dtype, trans_a, trans_b, threads, policy, stages); M, N, K do
# not divide the tiles.
CASES = {
    "f16_128_threads_2_stages": (100, 72, 80, 64, 64, 32, "float16", False, False, 128, 0, 2),
    "bf16_256_threads_3_stages": (130, 88, 72, 128, 64, 32, "bfloat16", False, True, 256, 0, 3),
    "f16_transposed_a_4_stages": (64, 128, 200, 64, 128, 32, "float16", True, False, 256, 0, 4),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gemm_is_warp_specialized_and_matches_numpy(name):
    M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, stages = CASES[name]
    kernel = tilelang.compile(
        wgmma_gemm(M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, stages), target=SM90A
    )
    src = kernel.get_kernel_source()
    # The producer warpgroup: launched with the block, registers given back, one
    # thread issuing the copies after waiting for a free version.
    assert f"__launch_bounds__({threads + 128}, 1)" in src
    assert launch_threads(kernel) == [threads + 128]
    assert "tl::setmaxnreg_dec<24>();" in src
    assert f"if ((tx == {threads}))" in src
    # wgmma-only consumers release each version once per warpgroup (the empty
    # mbarriers count warpgroups: tl::release_arrivals), as CUTLASS's pipelines do.
    assert "_empty[" in src and "tl::mbarrier_arrive_warpgroup<1>(" in src
    assert f"tl::release_arrivals<{threads}, 1>()" in src and "tl::mbarrier_arrive_warp(" not in src
    # Only the start publishes the mbarriers to every thread; the consumers' own
    # barriers are named ones over their threads.
    assert src.count("__syncthreads();") == 1
    # The warpgroups branch on a rank nvcc knows is warp-uniform (lane 0's, shuffled).
    consumers = f"if ((tl::warp_leader_rank(tx) < {threads}))"
    assert consumers in src and f"if ((tl::warp_leader_rank(tx) >= {threads}))" in src
    assert "__syncthreads();" not in src.split(consumers)[1]
    # wgmma reads the tiles through the async proxy and is waited for: no fence.
    assert releases(src) and all(not fenced for fenced in releases(src))
    a, b, c0, ref = operands(M, N, K, dtype, ta, tb)
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def releases(src):
    """For each consumer release (an arrive on an empty mbarrier): whether the line
    before it is the async-proxy fence."""
    lines = [line.strip() for line in src.splitlines()]
    return [
        lines[i - 1] == "tl::fence_proxy_async();"
        for i, line in enumerate(lines)
        if line.startswith(("tl::mbarrier_arrive_warp(", "tl::mbarrier_arrive_warpgroup<"))
    ]


def column_sums(M, N, bm):
    """A pipeline whose consumers read the TMA tile with element loads."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), S: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((bm, N), "float32")
            acc = T.alloc_fragment((N,), "float32")
            T.clear(acc)
            for k in T.Pipelined(M // bm, num_stages=2):
                T.copy(A[k * bm, 0], A_s)
                for j in T.Parallel(N):
                    for i in T.serial(bm):
                        acc[j] += A_s[i, j]
            T.copy(acc, S)

    return main


def test_consumers_reading_tiles_with_loads_fence_before_their_release():
    """Ordinary loads of a TMA tile are generic-proxy reads; the producer's next copy
    into the version is an async-proxy write. Each consumer warp fences before it
    arrives on the empty mbarrier: on the H200 an arrive overtook the warp's
    still-queued ldmatrix reads and the next tile landed under them
    (docs/design/hopper.md, "The consumers' release")."""
    M, N = 256, 64
    kernel = tilelang.compile(column_sums(M, N, 32), out_idx=[-1], target=SM90A)
    src = kernel.get_kernel_source()
    assert "tl::setmaxnreg_dec<24>();" in src and "tl::tma_load<2>(" in src
    assert releases(src) == [True, True]  # the steady loop's and the last iteration's
    a = np.random.default_rng(4).standard_normal((M, N)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a.astype(np.float64).sum(0), rtol=1e-5, atol=1e-4)


def test_pass_config_turns_it_off():
    M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, stages = CASES["bf16_256_threads_3_stages"]
    kernel = tilelang.compile(
        wgmma_gemm(M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, stages),
        target=SM90A,
        pass_configs=OFF,
    )
    src = kernel.get_kernel_source()
    assert "setmaxnreg" not in src and "_empty[" not in src and "tl::tma_load<" in src
    assert f"__launch_bounds__({threads}, 1)" in src and launch_threads(kernel) == [threads]
    a, b, c0, ref = operands(M, N, K, dtype, ta, tb)
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def nested_pipeline(M, N, K, reps):
    """The pipelined loop inside another loop: no warp specialization (the producer
    would have to follow the outer loop), the usual TMA pipeline instead."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, 32), "float16")
            B_s = T.alloc_shared((32, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.clear(acc)
            for _ in T.serial(reps):
                for k in T.Pipelined(K // 32, num_stages=2):
                    T.copy(A[0, k * 32], A_s)
                    T.copy(B[k * 32, 0], B_s)
                    T.gemm(A_s, B_s, acc)
            T.copy(acc, C)

    return main


def test_a_pipeline_inside_another_loop_is_not_specialized():
    M, N, K = 64, 64, 96
    kernel = tilelang.compile(nested_pipeline(M, N, K, 2), out_idx=[-1], target=SM90A)
    src = kernel.get_kernel_source()
    assert "setmaxnreg" not in src and "tl::tma_load<" in src and launch_threads(kernel) == [128]
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = 2 * (a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_prefetches_v_and_is_specialized(causal, monkeypatch):
    """FlashAttention's V tile, copied after the softmax, is prefetched like K, on a
    barrier of its own (Q K^T does not wait for V); both come from the producer."""
    batch, heads, seq_len, dim = 1, 2, 200, 64
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", SM90A)  # the example's factory names none
    kernel = fa_example.flash_attention(
        batch, heads, seq_len, dim, causal, block_M=64, block_N=64, threads=128, num_stages=2
    )
    src = kernel.get_kernel_source()
    assert "K_shared_full[" in src and "V_shared_full[" in src and "V_shared_empty[" in src
    assert src.count("tl::tma_load<") >= 2 and "tl::setmaxnreg_dec<24>();" in src
    rng = np.random.default_rng(7)
    q, k, v = (
        rng.standard_normal((batch, seq_len, heads, dim)).astype(np.float16) for _ in range(3)
    )
    out = kernel(q, k, v)
    np.testing.assert_allclose(
        out.astype(np.float64), fa_example.reference(q, k, v, causal), atol=2e-2
    )


@needs_nvrtc
def test_two_consumer_warpgroups_take_the_producers_registers():
    """256 consumers + 128 producers: 168 registers each at launch; the producer goes
    down to 24, which lets the consumers go up to 240 (NVRTC compiles it for sm_90a)."""
    kernel = tilelang.compile(
        wgmma_gemm(256, 256, 256, 128, 128, 64, "float16", False, True, 256, 0, stages=3),
        target="cuda -arch=sm_90a",
    )
    src = kernel.get_kernel_source()
    assert "tl::setmaxnreg_inc<240>();" in src and "tl::setmaxnreg_dec<24>();" in src
    assert launch_threads(kernel) == [384]
    assert 240 * 256 + 24 * 128 <= 168 * 384  # the block's pool at launch


def grouped_rows_gemm(sizes, K, N, block=32):
    """TileLang's grouped GEMM (examples/grouped_gemm): each block of rows finds its group
    in a T.alloc_var before the pipeline, and the B tile's copy is indexed by it."""
    groups, total = len(sizes), sum(sizes)
    padded = [sum(-(-s // block) * block for s in sizes[:g]) for g in range(groups)]
    offsets = [sum(sizes[:g]) for g in range(groups)]
    blocks = sum(-(-s // block) for s in sizes)

    @T.prim_func
    def main(
        A: T.Tensor((total, K), T.float16),
        B: T.Tensor((groups, K, N), T.float16),
        C: T.Tensor((total, N), T.float32),
        starts: T.Tensor((groups,), T.int32),
        padded_starts: T.Tensor((groups,), T.int32),
        group_sizes: T.Tensor((groups,), T.int32),
    ):
        with T.Kernel(blocks, threads=128) as bx:
            A_s = T.alloc_shared((block, 32), T.float16)
            B_s = T.alloc_shared((32, N), T.float16)
            acc = T.alloc_fragment((block, N), T.float32)
            g = T.alloc_var(T.int32)
            g = 0
            for i in range(groups):
                g = T.if_then_else(bx * block >= padded_starts[i], i, g)
            row0 = bx * block - padded_starts[g] + starts[g]
            rows = T.min(block, group_sizes[g] + padded_starts[g] - bx * block)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=2):
                T.copy(A[row0, k * 32], A_s)
                T.copy(B[g, k * 32, 0], B_s)
                T.gemm(A_s, B_s, acc)
            for i, j in T.Parallel(block, N):
                if i < rows:
                    C[row0 + i, j] = acc[i, j]

    return main, np.array(offsets, np.int32), np.array(padded, np.int32)


def test_copies_indexed_by_a_variable_set_before_the_pipeline_stay_with_the_consumers():
    """The producer warpgroup runs none of the code before the pipeline, so a copy whose
    index reads a T.alloc_var set there keeps the TMA pipeline without one (it was an
    internal compiler error: the variable read outside its allocation)."""
    sizes, K, N = [5, 9, 13], 64, 32
    func, offsets, padded = grouped_rows_gemm(sizes, K, N)
    kernel = tilelang.compile(func, target=SM90A)
    src = kernel.get_kernel_source()
    assert "tl::tma_load<" in src and "setmaxnreg" not in src and launch_threads(kernel) == [128]
    rng = np.random.default_rng(11)
    a = rng.standard_normal((sum(sizes), K)).astype(np.float16)
    b = rng.standard_normal((len(sizes), K, N)).astype(np.float16)
    c = np.zeros((sum(sizes), N), np.float32)
    kernel(a, b, c, offsets, padded, np.array(sizes, np.int32))
    for g, (start, size) in enumerate(zip(offsets, sizes)):
        ref = a[start : start + size].astype(np.float64) @ b[g].astype(np.float64)
        np.testing.assert_allclose(c[start : start + size], ref, rtol=1e-4, atol=1e-2)


def staged_epilogue_gemm(M, N, K, bM, bN, bK, stages):
    """C = A @ B through a float32 shared tile for the epilogue (shared memory that
    is not staged), pipelined with `stages`."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_s = T.alloc_shared((bM, bN), "float32")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C_s)
            T.copy(C_s, C[by * bM, bx * bN])

    return main


def gemm_operands(M, N, K):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def test_one_stage_asked_runs_two_stages_with_a_producer_when_one_block_fits_per_sm():
    """num_stages=1 (TileLang's examples' default for FlashAttention on Hopper): 64 KB
    of staged tiles and a 64 KB epilogue tile leave room for one block per SM, so
    the producer warpgroup and the tiles' second versions (192 KB) cost no occupancy:
    the loop runs as a two-stage warp-specialized pipeline, the same kernel as
    num_stages=2 gives (docs/design/hopper.md, "One stage asked")."""
    M, N, K = 128, 128, 384
    one = tilelang.compile(staged_epilogue_gemm(M, N, K, 128, 128, 128, 1), target=SM90A)
    two = tilelang.compile(staged_epilogue_gemm(M, N, K, 128, 128, 128, 2), target=SM90A)
    src = one.get_kernel_source()
    assert launch_threads(one) == [256] and "tl::setmaxnreg_dec<24>();" in src
    assert "A_s_full[" in src and "A_s_empty[" in src
    assert src == two.get_kernel_source()
    a, b, ref = gemm_operands(M, N, K)
    c = np.zeros((M, N), np.float32)
    one(a, b, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(
    "bK, stages, configs",
    [(32, 1, None), (128, 0, None), (128, 1, OFF)],
    ids=["two_blocks_fit_per_sm", "num_stages_0", "warp_specialization_off"],
)
def test_one_stage_stays_as_written(bK, stages, configs):
    """The loop stays as written when two blocks fit an SM's shared memory (16 KB of
    staged tiles, 80 KB in all: the producer would halve the blocks per SM), with
    num_stages=0, and with tl.disable_warp_specialized."""
    M, N, K = 128, 128, 256
    kernel = tilelang.compile(
        staged_epilogue_gemm(M, N, K, 128, 128, bK, stages), target=SM90A, pass_configs=configs
    )
    src = kernel.get_kernel_source()
    assert launch_threads(kernel) == [128] and "setmaxnreg" not in src and "_full[" not in src
    a, b, ref = gemm_operands(M, N, K)
    c = np.zeros((M, N), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)
