"""T.gemm on sm_90a: the compiler picks the warpgroup wgmma templates
(device/cuda/gemm_sm90.cuh) where the tile splits into whole warpgroups, lays the
shared operands out as the wgmma descriptors describe them, and keeps mma.sync
elsewhere. Without a GPU: the generated source runs in the emulator ("cuda
-arch=sm_90a -emulate"), whose wgmma twin reads the tiles back through the
descriptors and the hardware's address swizzle, against numpy; and it compiles
with NVRTC for sm_90a. tests/gpu/test_wgmma_gpu.py runs these kernels on the H200."""

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.utils.target import available_targets

EMU = "cuda -arch=sm_90a -emulate"
NP_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
rng = np.random.default_rng(90)
needs_nvrtc = pytest.mark.skipif(
    "cuda" not in available_targets(), reason="NVRTC (libnvrtc.so) is not on this machine"
)


def wgmma_gemm(M, N, K, bM, bN, bK, dtype, trans_a, trans_b, threads, policy, stages=2):
    """C = C0 + op(A) @ op(B), tiled and pipelined; A is (K, M) when trans_a, B is (N, K)
    when trans_b."""
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
            T.copy(C0[by * bM, bx * bN], C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
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


def operands(M, N, K, dtype, trans_a, trans_b):
    np_t = NP_DTYPES[dtype]
    a = rng.standard_normal((K, M) if trans_a else (M, K)).astype(np_t)
    b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(np_t)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    af, bf = a.astype(np.float64), b.astype(np.float64)
    ref = c0 + (af.T if trans_a else af) @ (bf.T if trans_b else bf)
    return a, b, c0, ref


# (M, N, K, bM, bN, bK, dtype, trans_a, trans_b, threads, policy) and the warpgroup
# split it gets. M, N, K are not multiples of the tiles (the copies pad with zeros).
CASES = {
    "f16_nn_tails": ((100, 72, 50, 64, 64, 32, "float16", False, False, 128, 0), (1, 1)),
    "bf16_nt_tails": ((130, 90, 70, 128, 64, 32, "bfloat16", False, True, 256, 0), (2, 1)),
    "f16_tn_two_along_n": ((64, 128, 64, 64, 128, 64, "float16", True, False, 256, 0), (1, 2)),
    "bf16_tt": ((128, 64, 48, 128, 32, 16, "bfloat16", True, True, 128, 0), (1, 1)),
    "f16_fullrow_256_rows": ((256, 128, 64, 256, 128, 64, "float16", False, False, 512, 1), (4, 1)),
    "bf16_fullcol_wide_n": ((64, 256, 32, 64, 256, 32, "bfloat16", False, False, 256, 2), (1, 2)),
}


def flags(*values):
    return ", ".join("true" if v else "false" for v in values)


def tma_fed(source):
    """Every tile comes through TMA (no cp.async left): the wgmma gemms then go without
    their proxy fence (Fence = false, test_wgmma_proxy_fence.py)."""
    return "tl::tma_load<" in source and "tl::cp_async_gs" not in source


@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_wgmma_gemm_matches_numpy(name):
    (M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy), (wgm, wgn) = CASES[name]
    kernel = tilelang.compile(
        wgmma_gemm(M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy), target=EMU
    )
    source = kernel.get_kernel_source()
    # Pipelined and alone with its accumulator in the loop: kept in flight (Pending =
    # 1); with both tiles through TMA (16-byte row strides) without the proxy fence.
    tail = ", 1, false>" if tma_fed(source) else ", 1>"
    assert f"tl::wgmma_gemm_ss<{bM}, {bN}, {bK}, {wgm}, {wgn}, {flags(ta, tb)}{tail}" in source
    a, b, c0, ref = operands(M, N, K, dtype, ta, tb)
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def test_disable_wgmma_keeps_mma_sync():
    func = wgmma_gemm(128, 128, 64, 128, 128, 32, "float16", False, False, 256, 0)
    kernel = tilelang.compile(func, target=EMU, pass_configs={"tl.disable_wgmma": True})
    source = kernel.get_kernel_source()
    assert "tl::wgmma_gemm" not in source and "tl::gemm_ss<128, 128, 32, " in source
    a, b, c0, ref = operands(128, 128, 64, "float16", False, False)
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(
    "why, args",
    [
        (
            "64 threads are not a warpgroup",
            (64, 64, 32, 32, 32, 32, "float16", False, False, 64, 0),
        ),
        (
            "a 32-row tile has no m64 block",
            (32, 64, 32, 32, 64, 32, "bfloat16", False, True, 128, 0),
        ),
        (
            "float32 operands (tf32) with an N-major B stay on mma.sync",
            (64, 64, 32, 64, 64, 32, "float32", False, False, 128, 0),
        ),
    ],
)
def test_gemms_without_a_wgmma_form_use_mma_sync(why, args):
    M, N, K, _, _, _, dtype, _, tb, _, _ = args
    kernel = tilelang.compile(wgmma_gemm(*args), target=EMU)
    source = kernel.get_kernel_source()
    assert "tl::wgmma_gemm" not in source and "tl::gemm_ss<" in source, why
    np_t = NP_DTYPES.get(dtype, np.float32)
    a = rng.standard_normal((M, K)).astype(np_t)
    b = rng.standard_normal((N, K) if tb else (K, N)).astype(np_t)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    bf = b.astype(np.float64)
    ref = c0 + a.astype(np.float64) @ (bf.T if tb else bf)
    tol = 2e-2 if dtype == "float32" else 1e-3  # tf32 keeps 10 mantissa bits
    np.testing.assert_allclose(c, ref, rtol=tol, atol=tol * 10)


def attention_like(M, N, D, dtype, threads):
    """S = Q @ K^T (wgmma, A and B from shared), its row max over the N columns spread
    over the warpgroup's threads, P = exp(S - max) in registers, O = P @ V (wgmma with A
    in registers): the softmax-free core of an attention block."""

    @T.prim_func
    def main(
        Q: T.Tensor((M, D), dtype),
        K: T.Tensor((N, D), dtype),
        V: T.Tensor((N, D), dtype),
        O: T.Tensor((M, D), "float32"),
        Mx: T.Tensor((M,), "float32"),
    ):
        with T.Kernel(1, threads=threads):
            Q_s = T.alloc_shared((M, D), dtype)
            K_s = T.alloc_shared((N, D), dtype)
            V_s = T.alloc_shared((N, D), dtype)
            S = T.alloc_fragment((M, N), "float32")
            P = T.alloc_fragment((M, N), dtype)
            O_f = T.alloc_fragment((M, D), "float32")
            m = T.alloc_fragment((M,), "float32")
            T.copy(Q, Q_s)
            T.copy(K, K_s)
            T.copy(V, V_s)
            T.gemm(Q_s, K_s, S, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.reduce_max(S, m, dim=1)
            for i, j in T.Parallel(M, N):
                P[i, j] = T.exp(S[i, j] - m[i])
            T.gemm(P, V_s, O_f, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(O_f, O)
            T.copy(m, Mx)

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_register_a_gemm_and_row_reduction_on_wgmma_accumulators(dtype):
    M, N, D = 128, 64, 64
    kernel = tilelang.compile(attention_like(M, N, D, dtype, 256), target=EMU)
    source = kernel.get_kernel_source()
    assert f"tl::wgmma_gemm_ss<{M}, {N}, {D}, 2, 1, false, true>" in source
    assert f"tl::wgmma_gemm_rs<{M}, {D}, {N}, 2, 1, false>" in source
    np_t = NP_DTYPES[dtype]
    q, k, v = (rng.standard_normal(s).astype(np_t) for s in [(M, D), (N, D), (N, D)])
    o, mx = np.zeros((M, D), np.float32), np.zeros(M, np.float32)
    kernel(q, k, v, o, mx)
    s = q.astype(np.float64) @ k.astype(np.float64).T
    np.testing.assert_allclose(mx, s.max(axis=1), rtol=1e-4, atol=1e-3)
    p = np.exp(s - mx[:, None].astype(np.float64)).astype(np_t).astype(np.float64)
    np.testing.assert_allclose(o, p @ v.astype(np.float64), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize(
    "policy, split",
    [
        (T.GemmWarpPolicy.FullCol, (1, 2)),
        (T.GemmWarpPolicy.FullRow, (2, 1)),
        # Both splits of a square tile are as square: the one along M wins.
        (T.GemmWarpPolicy.Square, (2, 1)),
    ],
)
def test_row_reduction_across_warpgroups(policy, split):
    """A row max over an accumulator split over two warpgroups along N combines both."""
    M, N, K = 128, 128, 32

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), R: T.Tensor((M,), "float32")
    ):
        with T.Kernel(1, threads=256):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            C = T.alloc_fragment((M, N), "float32")
            r = T.alloc_fragment((M,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C, clear_accum=True, policy=policy)
            T.reduce_max(C, r, dim=1)
            T.copy(r, R)

    kernel = tilelang.compile(main, out_idx=[-1], target="cuda -arch=sm_90a -emulate")
    wgm, wgn = split
    assert (
        f"tl::wgmma_gemm_ss<{M}, {N}, {K}, {wgm}, {wgn}, false, false>"
        in kernel.get_kernel_source()
    )
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = (a.astype(np.float64) @ b.astype(np.float64)).max(axis=1)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-4, atol=1e-3)


@needs_nvrtc
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_wgmma_kernels_compile_with_nvrtc_for_sm90a(dtype):
    kernel = tilelang.compile(
        wgmma_gemm(256, 256, 256, 128, 128, 64, dtype, False, True, 256, 0, stages=3),
        target="cuda -arch=sm_90a",
    )
    assert (
        "tl::wgmma_gemm_ss<128, 128, 64, 2, 1, false, true, 1, false>" in kernel.get_kernel_source()
    )
    rs = tilelang.compile(attention_like(128, 64, 64, dtype, 256), target="cuda -arch=sm_90a")
    assert "tl::wgmma_gemm_rs<128, 64, 64, 2, 1, false>" in rs.get_kernel_source()


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_pipelined_wgmma_stays_in_flight_across_steps(stages):
    # The gemm of step k returns with its wgmma running (Pending = 1) and completes
    # it in step k + 1; its tiles keep their stage one step longer and the loop ends
    # with tl::wgmma_wait<0>(). The emulator runs queued wgmmas only at the waits,
    # so a stage overwritten too early or a missing drain gives wrong numbers.
    args = (150, 128, 300, 64, 128, 32, "float16", False, False, 128, 0)
    kernel = tilelang.compile(wgmma_gemm(*args, stages=stages), out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::wgmma_gemm_ss<64, 128, 32, 1, 1, false, false, 1>" in src, src
    assert "tl::wgmma_wait<0>()" in src
    a, b, c0, ref = operands(*args[:3], "float16", False, False)
    np.testing.assert_allclose(kernel(a, b, c0), ref, rtol=1e-3, atol=1e-3)


def test_an_accumulator_read_in_the_loop_waits_for_the_gemm_first():
    @T.prim_func
    def main(
        A: T.Tensor((64, 128), "float16"),
        B: T.Tensor((128, 64), "float16"),
        C: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.clear(C_f)
            for k in T.Pipelined(4, num_stages=3):
                T.copy(A[0, k * 32], A_s)
                T.copy(B[k * 32, 0], B_s)
                T.gemm(A_s, B_s, C_f)
                for i, j in T.Parallel(64, 64):
                    C_f[i, j] = C_f[i, j] * 0.5
            T.copy(C_f, C)

    kernel = tilelang.compile(main, out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    # Issued without a wait, then waited for right before the loop reads C_f.
    lines = src.splitlines()
    issue = next(
        i
        for i, x in enumerate(lines)
        if "wgmma_gemm_ss<64, 64, 32, 1, 1, false, false, 1, false>" in x
    )
    read = next(i for i in range(issue + 1, len(lines)) if "C_f[" in lines[i] and "=" in lines[i])
    assert any("tl::wgmma_wait<0>();" in x for x in lines[issue:read]), src
    a = rng.standard_normal((64, 128)).astype(np.float16)
    b = rng.standard_normal((128, 64)).astype(np.float16)
    ref = np.zeros((64, 64))
    for k in range(4):
        ref = (ref + a[:, 32 * k : 32 * k + 32].astype(np.float64) @ b[32 * k : 32 * k + 32]) * 0.5
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-3)
