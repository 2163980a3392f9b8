"""plan_shared_memory: a block-scope buffer whose uses all come after another's
last use takes the other's bytes, with a block barrier before its first use. The
GEMM epilogue tile then reuses the pipeline's stages (a 4-stage 128x256x64 wgmma
GEMM with a shared epilogue fits in Hopper's 227 KB); buffers live at the same time
never share; hand-written T.ws kernels are carved without reuse. The kernels run in
the emulator against numpy (its race detector sees the shared addresses)."""

import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_tma_store import epilogue_gemm

SM90A = "cuda -arch=sm_90a -emulate"
SM80 = "cuda -arch=sm_80 -emulate"
rng = np.random.default_rng(7)


def offsets(src):
    return {
        m[0]: int(m[1])
        for m in re.findall(r"\* (\w+) = reinterpret_cast<[^>]*>\(tl_smem \+ (\d+)\)", src)
    }


def shared_bytes(src):
    return int(re.search(r"run_block\(bx, by, bz, \d+, \d+, \d+, (\d+),", src)[1])


def check_gemm(kernel, M, N, K):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(kernel(a, b).astype(np.float64), ref, rtol=2e-3, atol=2e-2)


# As many stages as fit a block (227 KB on sm_90, 163 KB on sm_80) without C_s's 64 KB.
@pytest.mark.parametrize("target, stages", [(SM90A, 4), (SM80, 3)])
def test_epilogue_tile_reuses_the_pipeline_stages(target, stages):
    M, N, K = 256, 256, 320
    kernel = tilelang.compile(
        epilogue_gemm(M, N, K, 128, 256, 64, "float16", "float16", threads=256, stages=stages),
        out_idx=[-1],
        target=target,
    )
    src = kernel.get_kernel_source()
    at = offsets(src)
    assert at["C_s"] in {at["A_s"], at["B_s"]}, at
    # The stages of A (16 KB each) and B (32 KB) plus barriers: the 64 KB C_s adds nothing.
    assert shared_bytes(src) < stages * (128 * 64 + 64 * 256) * 2 + 4096, shared_bytes(src)
    # A barrier between the pipeline's last use of the stages and the first write of C_s.
    lines = src.splitlines()
    first_write = next(i for i, x in enumerate(lines) if "(&C_s[" in x or re.search(r"\bC_s\[", x))
    last_gemm = max(i for i, x in enumerate(lines[:first_write]) if "gemm" in x)
    between = lines[last_gemm:first_write]
    assert any("__sync_thread_partial" in x or "__syncthreads" in x for x in between), "\n".join(
        between
    )
    check_gemm(kernel, M, N, K)


def test_buffers_live_at_the_same_time_never_share():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            X = T.alloc_shared((64, 64), "float32")
            Y = T.alloc_shared((64, 64), "float32")
            T.copy(A, X)
            for i, j in T.Parallel(64, 64):
                Y[i, j] = X[j, i] * 2.0
            for i, j in T.Parallel(64, 64):
                B[i, j] = Y[i, j] + X[i, j]

    kernel = tilelang.compile(main, target=SM80)
    at = offsets(kernel.get_kernel_source())
    assert abs(at["X"] - at["Y"]) >= 64 * 64 * 4, at
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_allclose(b, a.T * 2 + a, rtol=1e-6)


def test_phases_in_sequence_share_and_are_separated_by_a_barrier():
    # X is done with before Y is first written: Y takes X's bytes, and the barrier
    # keeps a fast thread's Y writes off a slow thread's X reads.
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            X = T.alloc_shared((64, 64), "float32")
            Y = T.alloc_shared((64, 64), "float32")
            acc = T.alloc_fragment((64,), "float32")
            T.copy(A, X)
            T.reduce_sum(X, acc, dim=1)
            for i, j in T.Parallel(64, 64):
                Y[i, j] = acc[i] + A[j, i]
            T.copy(Y, B)

    kernel = tilelang.compile(main, target=SM80)
    src = kernel.get_kernel_source()
    at = offsets(src)
    assert at["X"] == at["Y"], at
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1)[:, None] + a.T, rtol=1e-5, atol=1e-5)


def test_hand_written_warp_groups_keep_their_own_bytes():
    import importlib.util
    import pathlib

    spec = importlib.util.spec_from_file_location(
        "gemm_ws_hopper_plan", pathlib.Path(__file__).parents[2] / "examples" / "gemm_ws_hopper.py"
    )
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    func = ex.gemm_ws(256, 256, 256)
    src = tilelang.compile(func, out_idx=[-1], target=SM90A).get_kernel_source()
    at = offsets(src)
    assert len(set(at.values())) == len(at), at


def test_the_barrier_goes_before_a_single_thread_block_op_not_inside_it():
    # lse_max is done with before the reduction into total starts; that reduction is
    # a block op one thread runs: the barrier for total's reuse of lse_max's bytes
    # must come before it (inside, the other threads would never reach it).
    @T.prim_func
    def main(
        L: T.Tensor((8, 3), "float32"),
        P: T.Tensor((8, 64), "float32"),
        O: T.Tensor((8, 64), "float32"),
    ):
        with T.Kernel(1, threads=128):
            w = T.alloc_shared((8, 3), "float32")
            lse_max = T.alloc_fragment((8,), "float32")
            total = T.alloc_fragment((8,), "float32")
            acc = T.alloc_fragment((8, 64), "float32")
            T.copy(L, w)
            T.reduce_max(w, lse_max, dim=1)
            for i, s in T.Parallel(8, 3):
                w[i, s] = T.exp2(w[i, s] - lse_max[i])
            T.reduce_sum(w, total, dim=1)
            for i, j in T.Parallel(8, 64):
                acc[i, j] = P[i, j] * (w[i, 0] / total[i])
            T.copy(acc, O)

    kernel = tilelang.compile(main, target=SM80)
    src = kernel.get_kernel_source()
    lines = src.splitlines()
    for i, x in enumerate(lines):
        if "tl_thread_rank == 0" in x:  # the block ops run by one thread hold no barrier
            depth, j = 0, i
            while True:
                depth += lines[j].count("{") - lines[j].count("}")
                assert j == i or "__syncthreads" not in lines[j], src
                if depth == 0:
                    break
                j += 1
    l = rng.standard_normal((8, 3)).astype(np.float32)
    p = rng.standard_normal((8, 64)).astype(np.float32)
    o = np.zeros_like(p)
    kernel(l, p, o)
    w = np.exp2(l - l.max(axis=1, keepdims=True))
    np.testing.assert_allclose(
        o, p * (w[:, :1] / w.sum(axis=1, keepdims=True)), rtol=1e-5, atol=1e-6
    )


def test_disable_shared_memory_reuse_keeps_every_buffer_apart():
    M, N, K = 256, 256, 320
    func = epilogue_gemm(M, N, K, 128, 256, 64, "float16", "float16", threads=256, stages=2)
    kernel = tilelang.compile(
        func, out_idx=[-1], target=SM80, pass_configs={"tl.disable_shared_memory_reuse": True}
    )
    at = offsets(kernel.get_kernel_source())
    assert len(set(at.values())) == len(at), at
    check_gemm(kernel, M, N, K)


def fragment_epilogue_gemm(M, N, K, bM, bN, bK, stages, threads):
    """The quickstart's GEMM + ReLU: the accumulator goes straight to C."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            for i, j in T.Parallel(bM, bN):
                C_f[i, j] = T.max(C_f[i, j], 0)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


UNSTAGED = {"tl.stage_fragment_stores": False}


def test_fragment_epilogue_staged_through_a_reused_stage_and_stored_by_tma():
    M, N, K = 256, 248, 320  # N not a multiple of the tile: TMA clips the last box
    func = fragment_epilogue_gemm(M, N, K, 128, 256, 64, 4, 256)
    plain = tilelang.compile(func, out_idx=[-1], target=SM90A, pass_configs=UNSTAGED)
    assert "_stage" not in plain.get_kernel_source()
    staged = tilelang.compile(func, out_idx=[-1], target=SM90A)  # staging is the default
    src = staged.get_kernel_source()
    at = offsets(src)
    assert "C_f_stage" in at and at["C_f_stage"] in {at["A_s"], at["B_s"]}, at
    assert "tl::tma_store<2>(" in src, src
    assert shared_bytes(src) == shared_bytes(plain.get_kernel_source())
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0)
    np.testing.assert_allclose(staged(a, b).astype(np.float64), ref, rtol=2e-3, atol=2e-2)


def test_no_staging_without_a_dead_buffer_to_reuse():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((64, 64), "float32")
            for i, j in T.Parallel(64, 64):
                f[i, j] = A[i, j] * 2.0
            T.copy(f, B)

    kernel = tilelang.compile(main, target=SM90A)
    src = kernel.get_kernel_source()
    assert "_stage" not in src and "tma_store" not in src, src
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_allclose(b, a * 2)


@pytest.mark.parametrize(
    "target, limit", [("cuda -arch=sm_90a", 227 * 1024), ("cuda -arch=sm_80", 163 * 1024)]
)
def test_more_shared_memory_than_a_block_may_have_is_a_clear_error(target, limit):
    # 4 stages of 128x128 + 128x256 float16 tiles: 384 KB, more than any GPU allows.
    func = fragment_epilogue_gemm(1024, 1024, 1024, 128, 256, 128, 4, 256)
    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(func, out_idx=[-1], target=target)
    msg = str(info.value)
    assert f"at most {limit} ({limit // 1024} KB)" in msg, msg
    assert "'B_s'" in msg and "'A_s'" in msg and "num_stages" in msg, msg
    assert "test_shared_memory_plan.py" in msg, msg  # points at the kernel's T.Kernel line


def scaled_copy(with_bias):
    """C = 2 A (+ Bias): Bias_s is allocated either way, as TileLang's dequantize GEMM
    examples allocate their bias tile, but only used with the bias."""

    @T.prim_func
    def main(
        A: T.Tensor((128, 512), "float16"),
        Bias: T.Tensor((128, 512), "float16"),
        C: T.Tensor((128, 512), "float16"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((128, 512), "float16")  # 128 KB
            Bias_s = T.alloc_shared((128, 512), "float16")  # 128 KB more
            T.copy(A, A_s)
            if with_bias:
                T.copy(Bias, Bias_s)
                for i, j in T.Parallel(128, 512):
                    A_s[i, j] += Bias_s[i, j]
            for i, j in T.Parallel(128, 512):
                C[i, j] = A_s[i, j] * 2

    return main


def test_a_buffer_no_statement_uses_takes_no_bytes():
    kernel = tilelang.compile(scaled_copy(False), out_idx=[-1], target=SM80)
    assert shared_bytes(kernel.get_kernel_source()) == 128 * 512 * 2
    a = rng.standard_normal((128, 512)).astype(np.float16)
    bias = rng.standard_normal((128, 512)).astype(np.float16)
    np.testing.assert_allclose(kernel(a, bias).astype(np.float64), 2 * a.astype(np.float64))
    # Used, the two tiles need 256 KB: more than a block may have on sm_80.
    with pytest.raises(tilelang.TileLangError, match=r"needs 262144 bytes .* 'Bias_s' 131072"):
        tilelang.compile(scaled_copy(True), out_idx=[-1], target=SM80)
