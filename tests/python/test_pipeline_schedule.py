"""T.Pipelined(order=, stage=, group=) on the cuda target: the statements of the
body run in the steps and positions the user gives, copies into shared memory
become cp.async with as many versions of their tile as the schedule needs, and
schedules that would break a dependence are errors. The CUDA source runs in the
emulator (its race detector checks the barriers) and is compared with numpy."""

import math
import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T

EMU = "cuda -arch=sm_80 -emulate"
rng = np.random.default_rng(11)


def gemm(M, N, K, stages, order=None, stage=None):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=stages, order=order, stage=stage):
                T.copy(A[by * 64, k * 32], A_s)
                T.copy(B[k * 32, bx * 64], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 64, bx * 64])

    return main


def test_explicit_default_schedule_gives_the_default_source():
    default = tilelang.compile(gemm(128, 128, 256, 3), target=EMU).get_kernel_source()
    by_hand = tilelang.compile(
        gemm(128, 128, 256, 3, order=[0, 1, 2], stage=[0, 0, 2]), target=EMU
    ).get_kernel_source()
    assert default == by_hand
    assert "tl::cp_async_wait<1>" in default


@pytest.mark.parametrize(
    "order, stage",
    [
        ([0, 1, 2], [0, 0, 1]),
        ([0, 1, 2], [0, 0, 3]),
        ([0, 1, 2], [1, 0, 2]),
        ([-1, -1, 0], [-1, -1, 0]),
    ],
)
def test_gemm_schedules_by_hand_match_numpy(order, stage):
    M, N, K = 96, 128, 200  # K is not a multiple of the 32-wide tiles
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    kernel = tilelang.compile(gemm(M, N, K, 3, order, stage), out_idx=[-1], target=EMU)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=2e-3, atol=2e-3)
    assert re.search(r"tl::cp_async_gs(?:_conditional)?<16>", kernel.get_kernel_source())


def staged_sum(n, block, order, stage, stages=2):
    @T.prim_func
    def main(A: T.Tensor((n, block), "float32"), B: T.Tensor((block,), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((block,), "float32")
            t = T.alloc_fragment((block,), "float32")
            acc = T.alloc_fragment((block,), "float32")
            T.clear(acc)
            for k in T.Pipelined(n, num_stages=stages, order=order, stage=stage):
                T.copy(A[k, 0], S)  # MARK-copy
                for j in T.Parallel(block):  # MARK-scale
                    t[j] = S[j] * (k + 1)
                for j in T.Parallel(block):  # MARK-add
                    acc[j] += t[j] * t[j]
            T.copy(acc, B)

    return main


@pytest.mark.parametrize("target", [EMU, "cpu"])
@pytest.mark.parametrize("n", [1, 2, 7])
def test_a_later_stage_ordered_first_reads_the_previous_iteration(target, n):
    # scale (stage 0) writes t, add (stage 1) reads it one step later: add must
    # come first in the step, before scale overwrites t with the next iteration.
    a = rng.standard_normal((n, 32)).astype(np.float32)
    kernel = tilelang.compile(staged_sum(n, 32, [0, 2, 1], [0, 0, 1]), out_idx=[-1], target=target)
    ref = ((a * np.arange(1, n + 1, dtype=np.float32)[:, None]) ** 2).sum(0)
    np.testing.assert_allclose(kernel(a), ref, rtol=1e-5)


def test_a_schedule_that_overwrites_a_value_before_it_is_read_is_an_error():
    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(staged_sum(4, 32, [0, 1, 2], [0, 0, 1]), target=EMU)
    msg = str(info.value)
    assert "of the next iteration before" in msg
    assert "later stage ordered first" in msg


def test_a_reader_scheduled_before_its_writer_is_an_error():
    with pytest.raises(tilelang.TileLangError, match="depends on it"):
        tilelang.compile(staged_sum(4, 32, [0, 2, 1], [0, 0, 0]), target=EMU)


def test_stage_minus_one_is_only_for_copies_into_shared_memory():
    with pytest.raises(tilelang.TileLangError, match="stage -1, which only a T.copy"):
        tilelang.compile(staged_sum(4, 32, [0, -1, 1], [0, -1, 1]), target=EMU)


def flash_attention(seq_len, dim, block_M, block_N, schedule):
    scale = (1.0 / dim) ** 0.5 * math.log2(math.e)
    shape = (seq_len, dim)

    @T.prim_func
    def main(
        Q: T.Tensor(shape, "float16"),
        K: T.Tensor(shape, "float16"),
        V: T.Tensor(shape, "float16"),
        O: T.Tensor(shape, "float16"),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), threads=128) as bx:
            Q_s = T.alloc_shared((block_M, dim), "float16")
            K_s = T.alloc_shared((block_N, dim), "float16")
            V_s = T.alloc_shared((block_N, dim), "float16")
            acc_s = T.alloc_fragment((block_M, block_N), "float32")
            acc_s_cast = T.alloc_fragment((block_M, block_N), "float16")
            acc_o = T.alloc_fragment((block_M, dim), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            m_prev = T.alloc_fragment((block_M,), "float32")
            r = T.alloc_fragment((block_M,), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            lsum = T.alloc_fragment((block_M,), "float32")
            T.copy(Q[bx * block_M, 0], Q_s)
            T.fill(acc_o, 0)
            T.fill(lsum, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(T.ceildiv(seq_len, block_N), **schedule):
                T.copy(K[k * block_N, 0], K_s)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.if_then_else(
                        k * block_N + j < seq_len, 0, -T.infinity("float32")
                    )
                T.gemm(Q_s, K_s, acc_s, transpose_B=True)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, s, dim=1)
                for i in T.Parallel(block_M):
                    lsum[i] = lsum[i] * r[i] + s[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= r[i]
                T.copy(V[k * block_N, 0], V_s)
                T.gemm(acc_s_cast, V_s, acc_o)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= lsum[i]
            T.copy(acc_o, O[bx * block_M, 0])

    return main


# TileLang's FlashAttention schedule: the QK^T gemm of the next tile overlaps the
# rescale and PV gemm of this one; the K and V copies are left to the compiler.
FA_SCHEDULE = {
    "num_stages": 2,
    "order": [-1, 0, 3, 1, -1, 2],
    "stage": [-1, 0, 0, 1, -1, 1],
    "group": [[0], [1, 2], [3, 4, 5, 6, 7, 8, 9], [10], [11], [12]],
}


@pytest.mark.parametrize("target", [EMU, "cpu"])
def test_flash_attention_schedule_by_hand_matches_numpy(target):
    seq_len, dim = 100, 32
    q, k, v = (rng.standard_normal((seq_len, dim)).astype(np.float16) for _ in range(3))
    kernel = tilelang.compile(
        flash_attention(seq_len, dim, 32, 32, FA_SCHEDULE), out_idx=[-1], target=target
    )
    logits = q.astype(np.float32) @ k.astype(np.float32).T / math.sqrt(dim)
    p = np.exp(logits - logits.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v.astype(np.float32)
    np.testing.assert_allclose(kernel(q, k, v).astype(np.float32), ref, rtol=2e-2, atol=2e-2)
    if target == EMU:
        src = kernel.get_kernel_source()
        # K and V in two versions each, the copies in flight across one step.
        assert "tl::cp_async_wait<0>" in src and re.search(
            r"tl::cp_async_gs(?:_conditional)?<16>", src
        )


def indexed_by_shared(pipelined, n=4, tile=32):
    """Each step stores its tile's offset into shared memory and copies the tile the
    stored offset names (a producer whose indices read what the body wrote)."""

    @T.prim_func
    def main(A: T.Tensor((n * tile,), "float16"), B: T.Tensor((n * tile,), "float16")):
        with T.Kernel(1, threads=128):
            offset_s = T.alloc_shared((1,), "int32")
            A_s = T.alloc_shared((tile,), "float16")
            loop = T.Pipelined(n, num_stages=2) if pipelined else T.serial(n)
            for k in loop:
                offset_s[0] = (n - 1 - k) * tile  # the tiles in reverse
                offset = offset_s[0]
                T.copy(A[offset], A_s)
                for i in T.Parallel(tile):
                    B[k * tile + i] = A_s[i] * 2.0

    return main


@pytest.mark.parametrize("target", ["cpu", EMU, "cuda -arch=sm_90a -emulate"])
@pytest.mark.parametrize("pipelined", [True, False])
def test_a_copy_indexed_by_a_value_the_body_stores_matches_numpy(target, pipelined):
    # The copy cannot run a step ahead (it would read the previous step's offset), so it
    # runs in place; every thread reads the stored offset after a barrier.
    kernel = tilelang.compile(indexed_by_shared(pipelined), target=target)
    a = rng.standard_normal(128).astype(np.float16)
    b = np.zeros(128, np.float16)
    kernel(a, b)
    want = (a.reshape(4, 32)[::-1].astype(np.float32) * 2.0).reshape(-1)
    np.testing.assert_allclose(b.astype(np.float32), want, rtol=1e-3)
