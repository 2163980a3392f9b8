"""T.reshape(buf, shape) and T.view(buf, shape=None, dtype=None): another shape (T.view:
also another dtype of the same width; test_view_width.py covers other widths) for the
elements of a global, shared, fragment or local buffer, row-major on both sides. Both names reach the same storage. The kernel of
upstream's deepseek_v32 fp8_lighting_indexer (a gemm's scores reshaped to
[block_N, block_Q, heads], weighted in a 3-d T.Parallel loop and summed over the heads)
is checked against numpy on the CPU and the emulated GPUs, and compiled by NVRTC."""

import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc

SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"
rng = np.random.default_rng(17)


def indexer_kernel(seq_len, seq_kv, heads, dim, block_N, block_Q, threads, dtype="float16"):
    @T.prim_func
    def main(
        IndexQ: T.Tensor((seq_len * heads, dim), dtype),
        IndexK: T.Tensor((seq_kv, dim), dtype),
        Weights: T.Tensor((seq_len, heads), "float32"),
        Logits: T.Tensor((seq_len, seq_kv), "float32"),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_Q), threads=threads) as bx:
            q_s = T.alloc_shared((block_Q * heads, dim), dtype)
            k_s = T.alloc_shared((block_N, dim), dtype)
            s = T.alloc_fragment((block_N, block_Q * heads), "float32")
            s_reshaped = T.reshape(s, (block_N, block_Q, heads))
            logits = T.alloc_fragment((block_N, block_Q), "float32")
            weights = T.alloc_fragment((block_Q, heads), "float32")
            T.copy(IndexQ[bx * block_Q * heads, 0], q_s)
            T.copy(Weights[bx * block_Q, 0], weights)
            for nb in T.Pipelined(T.ceildiv(seq_kv, block_N), num_stages=1):
                T.copy(IndexK[nb * block_N, 0], k_s)
                T.gemm(
                    k_s,
                    q_s,
                    s,
                    transpose_B=True,
                    clear_accum=True,
                    policy=T.GemmWarpPolicy.FullCol,
                )
                for bn, bq, h in T.Parallel(block_N, block_Q, heads):
                    s_reshaped[bn, bq, h] = T.max(s_reshaped[bn, bq, h], 0) * weights[bq, h]
                T.reduce_sum(s_reshaped, logits, dim=-1, clear=True)
                for bq, bn in T.Parallel(block_Q, block_N):
                    Logits[bx * block_Q + bq, nb * block_N + bn] = logits[bn, bq]

    return main


INDEXER = {"seq_len": 16, "seq_kv": 128, "heads": 8, "dim": 32, "block_N": 64, "block_Q": 8}
INDEXER["threads"] = 128


def indexer_inputs():
    n, kv, h, d = INDEXER["seq_len"], INDEXER["seq_kv"], INDEXER["heads"], INDEXER["dim"]
    q = rng.standard_normal((n * h, d)).astype(np.float16)
    k = rng.standard_normal((kv, d)).astype(np.float16)
    w = rng.standard_normal((n, h)).astype(np.float32)
    scores = np.einsum("qhd,kd->qhk", q.astype(np.float64).reshape(n, h, d), k.astype(np.float64))
    return q, k, w, (np.maximum(scores, 0) * w[:, :, None]).sum(1)


@pytest.mark.parametrize("target", ["cpu", SM80, SM90A])
def test_the_lighting_indexer_pattern_matches_numpy(target):
    kernel = tilelang.compile(indexer_kernel(**INDEXER), out_idx=[3], target=target)
    q, k, w, ref = indexer_inputs()
    np.testing.assert_allclose(kernel(q, k, w), ref, rtol=1e-3, atol=1e-3)
    if target != "cpu":
        # The scores keep their registers: the gemm runs on the tensor cores and the 3-d
        # loop over the reshape runs over each thread's accumulator registers.
        source = kernel.get_kernel_source()
        assert re.search(r"\bfloat s\[\d+\];", source), source
        assert "gemm_ss<64, 64, 32, 1, " in source, source


@needs_nvrtc
def test_the_lighting_indexer_pattern_compiles_for_sm90a():
    kernel = tilelang.compile(indexer_kernel(**INDEXER), out_idx=[3], target="cuda -arch=sm_90a")
    assert "tl::wgmma_gemm_ss<64, 64, 32, 1, 1," in kernel.get_kernel_source()


# ---- shared and global memory


def global_and_shared_kernel(N, M):
    @T.prim_func
    def main(
        A: T.Tensor((N,), "float32"),
        B: T.Tensor((N // M, M), "float32"),
        C: T.Tensor((N // M, M), "float32"),
        D: T.Tensor((N // M, M), "float32"),
    ):
        with T.Kernel(1, threads=32):
            A2 = T.reshape(A, [N // M, M])  # a global tensor
            T.copy(A2, B)
            S = T.alloc_shared((N,), "float32")
            for i in T.Parallel(N):
                S[i] = A[i] * 2.0
            S2 = T.reshape(S, (N // M, M))  # shared memory, read as a matrix
            T.copy(S2, C)
            D1 = T.reshape(D, (N,))  # a global output written through a flat view
            for i in T.Parallel(N):
                D1[i] = S[i] + 1.0

    return main


@pytest.mark.parametrize("target", ["cpu", SM80])
def test_global_and_shared_reshapes(target):
    N, M = 256, 32
    kernel = tilelang.compile(global_and_shared_kernel(N, M), out_idx=[1, 2, 3], target=target)
    a = rng.standard_normal(N).astype(np.float32)
    b, c, d = kernel(a)
    np.testing.assert_array_equal(b, a.reshape(N // M, M))
    np.testing.assert_array_equal(c, (a * 2).reshape(N // M, M))
    np.testing.assert_array_equal(d, (a * 2 + 1).reshape(N // M, M))


# ---- aliasing: writes through either name are seen through the other


def alias_kernel(R, C, G):
    @T.prim_func
    def main(
        A: T.Tensor((R, C), "float32"),
        Out3: T.Tensor((R, C // G, G), "float32"),
        Out2: T.Tensor((R, C), "float32"),
        Rows: T.Tensor((R, C // G), "float32"),
        Bits: T.Tensor((R, C), "int32"),
    ):
        with T.Kernel(1, threads=64):
            f = T.alloc_fragment((R, C), "float32")
            f3 = T.reshape(f, (R, C // G, G))
            T.copy(A, f)
            for i, j, k in T.Parallel(R, C // G, G):  # write through the view
                f3[i, j, k] = f3[i, j, k] + j * 100.0 + k
            for i, j in T.Parallel(R, C):  # read through the base, write it
                Out2[i, j] = f[i, j]
                f[i, j] = f[i, j] * 2.0
            T.copy(f3, Out3)  # read the base's writes through the view
            red = T.alloc_shared((R, C // G), "float32")
            T.reduce_max(f3, red, dim=2)
            T.copy(red, Rows)
            as_int = T.view(f, dtype="int32")  # the same bits, read as int32
            loc = T.alloc_local((R * C,), "int32")
            loc2 = T.reshape(loc, (R, C))
            for i, j in T.Parallel(R, C):
                Bits[i, j] = as_int[i, j]
            for i in T.serial(R * C):
                loc[i] = i
            for i, j in T.grid(R, C):
                if loc2[i, j] != i * C + j:
                    Bits[i, j] = 0

    return main


@pytest.mark.parametrize("target", ["cpu", SM80])
def test_writes_through_either_name_are_seen_through_the_other(target):
    R, C, G = 8, 32, 8
    kernel = tilelang.compile(alias_kernel(R, C, G), out_idx=[1, 2, 3, 4], target=target)
    a = rng.standard_normal((R, C)).astype(np.float32)
    out3, out2, rows, bits = kernel(a)
    bumped = a.reshape(R, C // G, G) + np.arange(C // G)[:, None] * 100.0 + np.arange(G)
    bumped = bumped.astype(np.float32)
    np.testing.assert_allclose(out2, bumped.reshape(R, C), rtol=1e-6)
    np.testing.assert_allclose(out3, bumped * 2, rtol=1e-6)
    np.testing.assert_allclose(rows, (bumped * 2).max(axis=2), rtol=1e-6)
    np.testing.assert_array_equal(bits, (bumped * 2).reshape(R, C).view(np.int32))


def view_store_kernel(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "int16"), B: T.Tensor((N,), "float16")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((N,), "float16")
            bits = T.view(s, (N // 4, 4), "int16")  # stores put int16 bits into halves
            for i, j in T.Parallel(N // 4, 4):
                bits[i, j] = A[i * 4 + j]
            T.copy(s, B)

    return main


def test_a_view_of_another_dtype_stores_the_bits():
    N = 64
    a = rng.integers(0, 0x3C00, N).astype(np.int16)  # finite halves
    b = tilelang.compile(view_store_kernel(N), out_idx=[1], target="cpu")(a)
    np.testing.assert_array_equal(b.view(np.int16), a)


def reduce_after_reshape_kernel(N, M):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N // M,), "float32")):
        with T.Kernel(1, threads=32):
            a_local = T.alloc_fragment((N,), "float32")
            b_local = T.alloc_fragment((N // M,), "float32")
            T.copy(A, a_local)
            T.reduce_sum(T.reshape(a_local, [N // M, M]), b_local, dim=1)
            T.copy(b_local, B)

    return main


def test_reduce_of_a_reshaped_fragment():
    N, M = 256, 16
    a = rng.standard_normal(N).astype(np.float32)
    b = tilelang.compile(reduce_after_reshape_kernel(N, M), out_idx=[1], target="cpu")(a)
    np.testing.assert_allclose(b, a.reshape(N // M, M).sum(1), rtol=1e-5, atol=1e-5)


# ---- errors name the argument, what was expected and what was given, at the user's line


def build(body):
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), C: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32):
            body(A, C)

    return main


ERRORS = {
    "count": (
        lambda A, C: T.reshape(A, (4, 9)),
        (
            r"T.reshape shape: expected 32 elements, as 'A' of shape \(4, 8\) holds, got shape "
            r"\(4, 9\) with 36"
        ),
    ),
    "view_count": (
        lambda A, C: T.view(T.alloc_shared((16,), "float16"), (2, 4)),
        r"T.view shape: expected 16 elements.*got shape \(2, 4\) with 8",
    ),
    "view_bytes": (
        lambda A, C: T.view(A, (32,), "float16"),
        (
            r"T.view shape: expected 128 bytes, as 'A' of shape \(4, 8\) and dtype float32 holds, "
            r"got shape \(32,\) of float16 with 64 bytes"
        ),
    ),
    "scalar": (
        lambda A, C: T.reshape(T.alloc_var("int32"), (1,)),
        r"T.reshape needs a buffer, but .* is a T.alloc_var scalar",
    ),
    "slice": (lambda A, C: T.reshape(A[0:2, :], (16,)), r"T.reshape needs a whole buffer"),
    "shape_type": (lambda A, C: T.reshape(A, "32"), r"T.reshape shape must be a list or tuple"),
    "reduce_global": (
        lambda A, C: T.reduce_sum(T.reshape(A, (4, 2, 4)), T.alloc_fragment((4, 2), "float32")),
        r"T.reduce_sum operands must be in shared or fragment memory, but .* global tensor 'A'",
    ),
    "reduce_shape": (
        lambda A, C: T.reduce_sum(
            T.reshape(T.alloc_fragment((4, 8), "float32"), (4, 2, 4)),
            T.alloc_fragment((4, 4), "float32"),
        ),
        r"T.reduce_sum destination .* has shape \[4, 4\], but reducing .* gives \[4, 2\]",
    ),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_misuse_is_reported_at_the_users_line(case):
    body, match = ERRORS[case]
    with pytest.raises(tilelang.TileLangError, match=match) as info:
        build(body)
    assert "test_reshape_view.py:" in str(info.value)


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate", "metal -emulate"])
@pytest.mark.parametrize(("kind", "reverse"), [("sum", False), ("sum", True), ("max", False)])
def test_scan_of_a_view_of_shared_memory(target, kind, reverse):
    """T.cumsum / T.cummax over a T.view of a shared tile (TileLang issue 1001), in place
    and into another tile, along the view's rows."""

    @T.prim_func
    def scan(
        X: T.Tensor((2, 128), "float32"),
        Y: T.Tensor((2, 128), "float32"),
        Z: T.Tensor((2, 128), "float32"),
    ):
        with T.Kernel(2, threads=128) as bx:
            smem = T.alloc_shared((128,), "float32")
            other = T.alloc_shared((4, 32), "float32")
            T.copy(X[bx, :], smem)
            scan_fn = T.cumsum if kind == "sum" else T.cummax
            scan_fn(T.view(smem, (4, 32)), other, dim=1, reverse=reverse)
            scan_fn(T.view(smem, (1, 128)), dim=1, reverse=reverse)
            T.copy(smem, Y[bx, :])
            for i, j in T.Parallel(4, 32):
                Z[bx, i * 32 + j] = other[i, j]

    x = np.random.default_rng(7).standard_normal((2, 128)).astype(np.float32)
    y, z = np.zeros_like(x), np.zeros_like(x)
    tilelang.compile(scan, target=target)(x, y, z)
    op = np.cumsum if kind == "sum" else np.maximum.accumulate

    def ref(a, axis):
        a = np.flip(a, axis) if reverse else a
        out = op(a.astype(np.float64), axis=axis)
        return np.flip(out, axis) if reverse else out

    np.testing.assert_allclose(y, ref(x, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        z.reshape(2, 4, 32), ref(x.reshape(2, 4, 32), 2), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate", "metal -emulate"])
def test_reduce_of_a_one_row_view_runs_once(target):
    """A view reduced to a single element folds on one thread (the emulator's race
    detector once saw every thread fold and write it)."""

    @T.prim_func
    def total(X: T.Tensor((128,), "float32"), Y: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128) as _:
            smem = T.alloc_shared((128,), "float32")
            out = T.alloc_shared((1,), "float32")
            T.copy(X, smem)
            T.reduce_sum(T.view(smem, (1, 128)), out, dim=1)
            T.copy(out, Y)

    x = np.random.default_rng(3).standard_normal(128).astype(np.float32)
    y = np.zeros(1, np.float32)
    tilelang.compile(total, target=target)(x, y)
    np.testing.assert_allclose(y, [x.astype(np.float64).sum()], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["count", "view_count", "view_bytes"])
def test_count_mismatch_is_also_an_assertion_error(case):
    # TileLang refuses a reshape or view whose element or byte count differs with an
    # AssertionError; the same program here raises an error that is both classes.
    body, match = ERRORS[case]
    with pytest.raises(AssertionError, match=match) as info:
        build(body)
    assert isinstance(info.value, tilelang.TileLangError)
    assert "test_reshape_view.py:" in str(info.value)
