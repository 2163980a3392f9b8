"""Views (`T.Tensor(shape, dtype, buf.data)`), strided parameters (`T.StridedTensor`, fed
non-contiguous numpy arrays), and layout annotations (`T.annotate_layout`, `T.Layout`,
`T.Fragment`, `tilelang.layout.make_swizzled_layout`, `T.use_swizzle`), which must leave
CPU results unchanged. Compared with numpy on random data; misuse checked by message."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.layout import Fragment, Layout, make_swizzled_layout

rng = np.random.default_rng(5)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def compile_cpu(func, out_idx):
    return tilelang.compile(func, out_idx=out_idx, target="cpu")


# ---- views


def view_kernel(M, N, BM):
    @T.prim_func
    def main(
        A: T.Tensor((M * N,), "float32"),
        X: T.Tensor((2, 3, 8), "float32"),
        B: T.Tensor((M, N), "float32"),
        Y: T.Tensor((6, 8), "float32"),
        Z: T.Tensor((4, 8), "float32"),
    ):
        with T.Kernel(T.ceildiv(M, BM), threads=32) as bx:
            A2 = T.Tensor((M, N), "float32", A.data)  # a flat tensor seen as a matrix
            S = T.alloc_shared((BM, N), "float32")
            S2 = T.alloc_fragment((BM, N), "float32")
            T.copy(A2[bx * BM : (bx + 1) * BM, 0:N], S)  # a slice of a view
            T.copy(A2[bx * BM, 0], S2)  # a start point on a view, hanging over the end
            for i, j in T.Parallel(BM, N):
                S[i, j] = (S[i, j] + S2[i, j]) * 1.5
            T.copy(S, B[bx * BM : (bx + 1) * BM, :])
            if bx == 0:
                X2 = T.Tensor((6, 8), "float32", X.data)  # merges the leading dimensions
                Y2 = T.Tensor((2, 3, 8), "float32", Y.data)  # splits the leading dimension
                T.copy(X, Y2)  # whole buffers of equal shapes, one a view
                R = T.alloc_shared((4, 8), "float32")
                flat = T.Tensor((32,), "float32", R.data)  # a view of on-chip memory
                for i in T.Parallel(32):
                    flat[i] = X2[i // 8, i % 8] + 1.0
                T.fill(flat[24:32], 7.0)
                T.copy(R, Z)

    return main


def test_views_of_global_and_shared_buffers():
    M, N = 10, 6
    a, x = rand(M * N), rand(2, 3, 8)
    b, y, z = compile_cpu(view_kernel(M, N, 4), [2, 3, 4])(a, x)
    np.testing.assert_array_equal(b, a.reshape(M, N) * 3)
    np.testing.assert_array_equal(y, x.reshape(6, 8))
    want_z = x.reshape(6, 8)[:4] + 1
    want_z[3] = 7.0
    np.testing.assert_array_equal(z, want_z)


def view_error(make_view, match):
    with pytest.raises(tilelang.TileLangError, match=match) as info:

        @T.prim_func
        def main(A: T.Tensor((4, 8), "float32"), C: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=1):
                V = make_view(A)
                T.gemm(V, V, C)

    assert "test_views_layouts.py:" in str(info.value)


def test_view_misuse():
    view_error(lambda A: T.Tensor((4, 8), "float16", A.data), "views keep the element type")
    view_error(
        lambda A: T.Tensor((8, 8), "float32", A.data), "needs 64 elements but 'A'.*has only 32"
    )
    view_error(lambda A: T.Tensor((32,), "float32", 3), "needs the storage of a buffer")
    view_error(lambda A: T.Tensor((8, 4), "float32", A.data), "got 'V', a view of 'A'")


# ---- strided parameters


def strided_kernel(M, N):
    s = T.dynamic("s")

    @T.prim_func
    def main(
        A: T.StridedTensor((M, N), (1, M), "float32"),
        B: T.StridedTensor((M, N), (s, 1), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(M, 4), threads=32) as bx:
            S = T.alloc_shared((4, N), "float32")
            T.copy(A[bx * 4, 0], S)
            for i, j in T.Parallel(4, N):
                if bx * 4 + i < M:
                    C[bx * 4 + i, j] = S[i, j] - B[bx * 4 + i, j]

    return main


def test_strided_parameters_take_non_contiguous_arrays():
    M, N = 7, 5
    kernel = compile_cpu(strided_kernel(M, N), [2])
    at = rand(N, M)  # at.T is an (M, N) view with strides (1, M)
    wide = rand(M, N + 9)
    for cut in (wide[:, :N], wide[:, 4 : 4 + N]):  # row stride N + 9, not N
        np.testing.assert_array_equal(kernel(at.T, cut), at.T - cut)
    with pytest.raises(tilelang.TileLangError, match="has stride .* expected"):
        kernel(np.ascontiguousarray(at.T), wide[:, :N])


# ---- layouts leave results unchanged


def annotated_gemm(M, N, K, annotate):
    BM, BN, BK = 16, 16, 8

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float32"),
        B: T.Tensor((K, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=64) as (bx, by):
            A_s = T.alloc_shared((BM, BK), "float32")
            B_s = T.alloc_shared((BK, BN), "float32")
            C_f = T.alloc_fragment((BM, BN), "float32")
            if annotate:
                T.use_swizzle(panel_size=4, order="column")
                T.annotate_layout(
                    {
                        A_s: make_swizzled_layout(A_s),
                        B_s: lambda k, n: (k, (n + k) % BN),
                        C_f: T.Fragment(
                            (BM, BN),
                            forward_thread_fn=lambda i, j: (i * BN + j) // 4 % 64,
                            forward_index_fn=lambda i, j: (i * BN + j) % 4,
                        ),
                    }
                )
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
                T.copy(A[by * BM, k * BK], A_s)
                T.copy(B[k * BK, bx * BN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * BM, bx * BN])

    return main


def test_layout_annotations_do_not_change_cpu_results():
    M, N, K = 40, 36, 20
    a, b = rand(M, K), rand(K, N)
    plain = compile_cpu(annotated_gemm(M, N, K, False), [2])(a, b)
    annotated = compile_cpu(annotated_gemm(M, N, K, True), [2])(a, b)
    np.testing.assert_array_equal(annotated, plain)
    np.testing.assert_allclose(plain, a @ b, rtol=1e-5, atol=1e-5)


# ---- layout objects


def test_layout_maps_indices():
    layout = T.Layout((4, 8), lambda i, j: (j, i))
    assert layout.map_forward_index([1, 5]) == [5, 1]
    assert layout(3, 2) == [2, 3]
    assert layout.get_output_shape() == [8, 4]
    assert layout.is_bijective()
    flat = Layout((4, 8), lambda i, j: i * 8 + j)
    assert flat.get_output_shape() == [32]
    assert "forward=[" in repr(flat)


@pytest.mark.parametrize("shape, dtype", [((16, 64), "float16"), ((8, 32), "float32")])
def test_swizzled_layout_permutes_within_rows(shape, dtype):
    seen = {}

    @T.prim_func
    def main(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            S = T.alloc_shared(shape, dtype)
            seen["layout"] = make_swizzled_layout(S, k_major=True)
            T.annotate_layout({S: seen["layout"]})

    layout = seen["layout"]
    rows, cols = shape
    assert layout.is_bijective()
    moved = 0
    for r in range(rows):
        row = sorted(layout(r, c)[1] for c in range(cols))
        assert row == list(range(cols))  # a permutation of the row
        assert all(layout(r, c)[0] == r for c in range(cols))
        moved += sum(layout(r, c)[1] != c for c in range(cols))
    assert moved > 0  # rows after the first are really swizzled


def test_fragment_threads_and_replication():
    frag = Fragment((8, 4), forward_fn=lambda i, j: ((i * 4 + j) // 2, (i * 4 + j) % 2))
    assert frag.map_forward_thread([3, 1]) == 6
    assert frag.map_forward_index([3, 1]) == [1]
    assert frag.get_thread_size() == 16
    rep = T.Fragment((4, 4), forward_thread_fn=lambda i, j, r: i + 4 * r, replicate=2)
    assert rep.replicate == 2
    assert rep.map_forward_thread([1, 3], replica=1) == 5
    assert rep.get_thread_size() == 8
    assert rep.map_forward_index([1, 3]) == [1, 3]  # no index function: logical order


def layout_error(annotate, match):
    with pytest.raises(tilelang.TileLangError, match=match) as info:

        @T.prim_func
        def main(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=1):
                S = T.alloc_shared((8, 8), "float32")
                F = T.alloc_fragment((8, 8), "float32")
                annotate(A, S, F)

    assert "test_views_layouts.py:" in str(info.value)


@pytest.mark.parametrize(
    "annotate, match",
    [
        (lambda A, S, F: T.annotate_layout([S]), "takes a dict \\{buffer: layout\\}, got list"),
        (lambda A, S, F: T.annotate_layout({S: 3}), "layout of 'S' must be a T.Layout"),
        (
            lambda A, S, F: T.annotate_layout({S: T.Layout((4, 16), lambda i, j: (i, j))}),
            "layout for 'S' is over shape \\[4, 16\\] but the buffer has shape \\[8, 8\\]",
        ),
        (
            lambda A, S, F: T.annotate_layout({F: T.Layout((8, 8), lambda i, j: (i, j))}),
            "'F' is a fragment, so its layout must be a T.Fragment",
        ),
        (
            lambda A, S, F: T.annotate_layout({S: lambda i: i}),
            "must take 2 index argument\\(s\\) \\(one per dimension\\)",
        ),
        (lambda A, S, F: T.Fragment((8, 8)), "needs forward_fn .* or forward_thread_fn"),
        (
            lambda A, S, F: T.Fragment((8, 8), forward_thread_fn=lambda i, j: i, replicate=0),
            "replicate must be a positive integer, got 0",
        ),
        (
            lambda A, S, F: T.Layout((8, 8), lambda i, j: 1.5),
            "must return integer index expressions, got float",
        ),
        (lambda A, S, F: T.use_swizzle(0), "panel_size must be a positive integer, got 0"),
        (lambda A, S, F: T.use_swizzle(8, order="diagonal"), "order must be 'row', 'column'"),
        (lambda A, S, F: make_swizzled_layout(S, k_major="yes"), "k_major must be True or False"),
    ],
)
def test_layout_misuse(annotate, match):
    layout_error(annotate, match)


def test_use_swizzle_outside_a_kernel():
    with pytest.raises(tilelang.TileLangError, match="inside `with T.Kernel"):

        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            T.use_swizzle(4)
            with T.Kernel(1, threads=1):
                A[0] = 1.0


def bytes_through_an_annotated_view(layout_fn):
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 32), "int8")):
        with T.Kernel(1, threads=128) as _:
            stage = T.alloc_shared((2, 16, 16), "float16")
            as_bytes = T.view(stage, (2, 16, 32), dtype="int8")
            T.annotate_layout({as_bytes: T.Layout((2, 16, 32), layout_fn)})
            for i, j in T.Parallel(16, 16):
                stage[1, i, j] = A[i, j]
            for i, j in T.Parallel(16, 32):
                B[i, j] = as_bytes[1, i, j]

    return main


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_identity_layout_on_a_dtype_changing_view(target):
    kernel = tilelang.compile(
        bytes_through_an_annotated_view(lambda s, i, j: [s, i, j]), out_idx=[1], target=target
    )
    a = rand(16, 16, dtype=np.float16)
    np.testing.assert_array_equal(kernel(a), a.view(np.int8))


def test_other_layouts_on_a_view_are_refused():
    with pytest.raises(
        tilelang.TileLangError,
        match=r"T.annotate_layout of the view 'as_bytes' accepts only the identity layout over "
        r"its shape \[2, 16, 32\] .*; annotate the layout of 'stage' instead",
    ):
        bytes_through_an_annotated_view(lambda s, i, j: [s, j // 2, (j % 2) * 16 + i])
