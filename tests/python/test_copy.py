"""T.copy in every form TileLang accepts, on the CPU, against numpy on random data: whole
buffers, slices, start points on either side (also at the edge of a tensor), 3-D/4-D
slices, right-aligned extents with unit dimensions broadcast, symbolic extents, element
copies with a cast, negative indices, T.annotate_safe_value, and the errors for extents
that cannot be reconciled."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def compile_cpu(func, out_idx):
    return tilelang.compile(func, out_idx=out_idx, target="cpu")


# ---- tiles through shared and fragment memory, with tails on both axes


def tiled_copy(M, N, BM, BN):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=64) as (bx, by):
            A_s = T.alloc_shared((BM, BN), "float32")
            A_f = T.alloc_fragment((BM, BN), "float32")
            # start point on the source, the hints TileLang accepts
            T.copy(A[by * BM, bx * BN], A_s, coalesced_width=4, disable_tma=True)
            T.copy(A_s, A_f, eviction_policy="evict_first")  # two whole buffers
            for i, j in T.Parallel(BM, BN):
                A_f[i, j] = A_f[i, j] * 2.0
            T.copy(A_f, B[by * BM, bx * BN])  # start point on the destination

    return main


def test_tiles_with_tails_through_shared_and_fragment():
    M, N = 70, 45
    a = rand(M, N)
    b = compile_cpu(tiled_copy(M, N, 32, 16), [1])(a)
    np.testing.assert_array_equal(b, a * 2)


# ---- 4-D slices as in FlashAttention, and start points into 3-D tensors


def attention_slices(B, S, H, D, BM):
    @T.prim_func
    def main(
        Q: T.Tensor((B, S, H, D), "float32"),
        X: T.Tensor((B, S, D), "float32"),
        O: T.Tensor((B, S, H, D), "float32"),
        Y: T.Tensor((B, S, D), "float32"),
    ):
        with T.Kernel(T.ceildiv(S, BM), H, B, threads=32) as (bx, by, bz):
            Q_s = T.alloc_shared((BM, D), "float32")
            X_s = T.alloc_shared((BM, D), "float32")
            T.copy(Q[bz, bx * BM : (bx + 1) * BM, by, :], Q_s)
            for i, j in T.Parallel(BM, D):
                Q_s[i, j] = Q_s[i, j] + 1.0
            T.copy(Q_s, O[bz, bx * BM : (bx + 1) * BM, by, :])
            if by == 0:
                # a start point on a 3-D tensor covers its trailing dimensions
                T.copy(X[bz, bx * BM, 0], X_s)
                T.copy(X_s, Y[bz, bx * BM : (bx + 1) * BM, 0:D])

    return main


def test_four_dimensional_slices_and_three_dimensional_start_points():
    B, S, H, D = 2, 50, 3, 8
    q, x = rand(B, S, H, D), rand(B, S, D)
    o, y = compile_cpu(attention_slices(B, S, H, D, 16), [2, 3])(q, x)
    np.testing.assert_array_equal(o, q + 1)
    np.testing.assert_array_equal(y, x)


# ---- unit dimensions: dropped when pairing, broadcast when the counts differ


def broadcast_forms(M, N, BM):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        R: T.Tensor((BM, N), "float32"),
        C: T.Tensor((N,), "float32"),
        W: T.Tensor((2, BM, 1, N), "float32"),
    ):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((BM, N), "float32")
            row = T.alloc_shared((N,), "float32")
            # [1, N] against [BM, N]: the unit extent takes BM (TileLang's broadcast rule)
            T.copy(A[3, 0:N], S)
            T.copy(S, R)
            # [1, N] against [N]: the unit dimension is dropped
            T.copy(A[5, 0:N], row)
            T.copy(row, C)
            # a tile into a 4-D slice with unit dimensions on the destination side
            T.copy(S, W[1, 0:BM, 0, 0:N])
            T.copy(A[0:BM, 0:N], W[0, 0:BM, 0:1, 0:N])

    return main


def test_unit_dimensions_broadcast_and_drop():
    M, N, BM = 20, 12, 8
    a = rand(M, N)
    r, c, w = compile_cpu(broadcast_forms(M, N, BM), [1, 2, 3])(a)
    np.testing.assert_array_equal(r, a[3 : 3 + BM])
    np.testing.assert_array_equal(c, a[5])
    np.testing.assert_array_equal(w[1, :, 0], a[3 : 3 + BM])
    np.testing.assert_array_equal(w[0, :, 0], a[:BM])


# ---- the edge of a tensor, negative indices, element copies, safe values


def edge_forms(M, N, BM):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        E: T.Tensor((BM, N), "float32"),
        L: T.Tensor((4, N), "float32"),
        P: T.Tensor((3,), "float16"),
        F: T.Tensor((BM, N), "float32"),
    ):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((BM, N), "float32")
            S4 = T.alloc_shared((4, N), "float32")
            # a tile starting on the last row: rows past the tensor read 0
            T.copy(A[M - 1, 0], S)
            T.copy(S, E)
            # negative indices count from the end
            T.copy(A[-4:, :], S4)
            T.copy(S4, L)
            # element copies convert to the destination's dtype
            T.copy(A[-1, -1], P[0])
            T.copy(A[0, 2], P[1])
            T.copy(A[M - 2, N - 3], P[2])
            # from here on, reads outside A give 2.5
            T.annotate_safe_value(A, 2.5)
            T.copy(A[M - 2, 0], S)
            T.copy(S, F)

    return main


def test_tensor_edge_negative_indices_element_copies_and_safe_value():
    M, N, BM = 9, 6, 5
    a = rand(M, N)
    e, last, p, f = compile_cpu(edge_forms(M, N, BM), [1, 2, 3, 4])(a)
    want_e = np.zeros((BM, N), np.float32)
    want_e[0] = a[M - 1]
    np.testing.assert_array_equal(e, want_e)
    np.testing.assert_array_equal(last, a[-4:])
    np.testing.assert_array_equal(p, np.array([a[-1, -1], a[0, 2], a[M - 2, N - 3]], np.float16))
    want_f = np.full((BM, N), 2.5, np.float32)
    want_f[:2] = a[M - 2 :]
    np.testing.assert_array_equal(f, want_f)


def safe_infinity(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16):
            S = T.alloc_fragment((16,), "float32")
            T.annotate_safe_value({A: -T.infinity("float32")})
            T.copy(A[0], S)
            T.copy(S, B)

    return main


def test_safe_value_dict_form_with_an_expression():
    a = rand(11)
    b = compile_cpu(safe_infinity(11), [1])(a)
    np.testing.assert_array_equal(b[:11], a)
    assert np.all(np.isneginf(b[11:]))


# ---- symbolic extents: one kernel for every size


def dynamic_prefix():
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((64,), "float32")
            T.fill(S, -1.0)
            T.copy(A[0:n], S)  # n against 64: the copy runs over max(n, 64), predicated
            T.copy(S, B)

    return main


def test_symbolic_extent_against_a_constant_tile():
    kernel = compile_cpu(dynamic_prefix(), [1])
    for n in (37, 64, 90):
        a = rand(n)
        want = np.zeros(64, np.float32)
        want[: min(n, 64)] = a[:64]
        np.testing.assert_array_equal(kernel(a), want)


# ---- misuse


def trace_error(body, match):
    with pytest.raises(tilelang.TileLangError, match=match) as info:
        body()
    assert "test_copy.py:" in str(info.value)  # points at the user's line
    return str(info.value)


def test_two_whole_buffers_need_equal_shapes():
    def body():
        @T.prim_func
        def main(A: T.Tensor((8, 4), "float32"), B: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=1):
                T.copy(A, B)

    msg = trace_error(body, "T.copy of two whole buffers needs equal shapes")
    assert "'A' has shape (8, 4)" in msg and "'B' has (4, 8)" in msg


def test_extents_that_cannot_be_reconciled_name_both_sides_and_the_fix():
    def body():
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=1):
                S = T.alloc_shared((16, 32), "float32")
                T.copy(A[0:32, 0:16], S)

    msg = trace_error(body, "T.copy extents cannot be reconciled")
    assert "source 'A' covers [32, 16]" in msg
    assert "destination 'S' covers [16, 32]" in msg
    assert "make the destination cover [32, 16]" in msg


def test_start_point_of_too_few_dimensions():
    def body():
        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=1):
                S = T.alloc_shared((4, 8), "float32")
                T.copy(A[0], S)

    trace_error(body, "'A' is a start point with 1 dimension\\(s\\), but the other side covers")


def test_on_chip_tile_outside_its_buffer():
    def body():
        @T.prim_func
        def main(A: T.Tensor((64, 8), "float32")):
            with T.Kernel(1, threads=1):
                S = T.alloc_shared((16, 8), "float32")
                T.copy(A[0:8, 0:8], S[12, 0])

    trace_error(body, "region of 'S' covers \\[12, 20\\) in dimension 0, outside the buffer")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"eviction_policy": "evict_sometimes"}, "eviction_policy must be one of evict_normal"),
        ({"coalesced_width": 0}, "coalesced_width must be a positive integer, got 0"),
    ],
)
def test_bad_copy_hints(kwargs, match):
    def body():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                T.copy(A, B, **kwargs)

    trace_error(body, match)


def test_safe_value_misuse():
    def body():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                T.annotate_safe_value(A)

    trace_error(body, "T.annotate_safe_value needs a value")


@pytest.mark.parametrize(
    "target", ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
)
def test_a_global_region_smaller_than_the_tile_pads_as_in_tilelang(target):
    """32 heads copied into a 64-row tile and back (upstream mla_decode with heads <
    block_H): the copy covers the tile from the region's start; rows outside the tensor
    read as zeros and are not written."""

    @T.prim_func
    def main(
        Q: T.Tensor((32, 16), "float32"),
        O: T.Tensor((32, 16), "float32"),
        P: T.Tensor((64, 16), "float32"),
    ):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 16), "float32")
            T.copy(Q[0:32, :], S)
            T.copy(S, P)
            T.copy(S, O[0:32, :])

    q = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    o = np.zeros_like(q)
    p = np.full((64, 16), -1, np.float32)
    tilelang.compile(main, target=target)(q, o, p)
    np.testing.assert_array_equal(o, q)
    np.testing.assert_array_equal(p, np.concatenate([q, np.zeros_like(q)]))
