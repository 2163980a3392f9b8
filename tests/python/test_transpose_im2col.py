"""T.transpose and T.im2col (alias T.c2d_im2col) on the CPU against numpy: transposed
tiles with tails and a batch dimension, the im2col matrix itself, and a 2-D convolution
written as TileLang's convolution example does it (im2col + GEMM over views of the
filter and output tensors, swizzled layouts annotated)."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(11)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# ---- T.transpose


def transpose_kernel(M, N, BM):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        X: T.Tensor((2, 6, 5), "float32"),
        B: T.Tensor((N, M), "float32"),
        Y: T.Tensor((2, 5, 6), "float16"),
    ):
        with T.Kernel(T.ceildiv(M, BM), threads=32) as bx:
            S = T.alloc_shared((N, BM), "float32")
            # a global tile that hangs over the last row reads 0 there
            T.transpose(A[bx * BM : (bx + 1) * BM, 0:N], S)
            T.copy(S, B[0, bx * BM])
            if bx == 0:
                F = T.alloc_fragment((2, 5, 6), "float16")
                T.transpose(X, F)  # batched, with a dtype conversion
                T.copy(F, Y)

    return main


def test_transpose_tiles_with_tails_and_a_batch_dimension():
    M, N = 21, 7
    a, x = rand(M, N), rand(2, 6, 5)
    b, y = tilelang.compile(transpose_kernel(M, N, 8), out_idx=[2, 3], target="cpu")(a, x)
    np.testing.assert_array_equal(b, a.T)
    np.testing.assert_array_equal(y, x.transpose(0, 2, 1).astype(np.float16))


def test_transpose_shape_mismatch_names_the_expected_shape():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((8, 4), "float32")):
            with T.Kernel(1, threads=1):
                S = T.alloc_shared((8, 4), "float32")
                T.transpose(A, S)

    msg = str(info.value)
    assert "test_transpose_im2col.py:" in msg
    assert "source 'A' covers [8, 4] so destination 'S' must cover [4, 8]" in msg
    assert "but it covers [8, 4]" in msg


# ---- T.im2col


def out_size(size, k, s, d, p):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def im2col_reference(img, k, s, d, p):
    n, h, w, c = img.shape
    oh, ow = out_size(h, k, s, d, p), out_size(w, k, s, d, p)
    padded = np.zeros((n, h + 2 * p, w + 2 * p, c), img.dtype)
    padded[:, p : p + h, p : p + w] = img
    col = np.zeros((n, oh, ow, k, k, c), img.dtype)
    for kh in range(k):
        for kw in range(k):
            rows = padded[:, kh * d : kh * d + s * (oh - 1) + 1 : s]
            col[:, :, :, kh, kw] = rows[:, :, kw * d : kw * d + s * (ow - 1) + 1 : s]
    return col.reshape(n * oh * ow, k * k * c)


def conv_reference(img, wgt, s, d, p):
    k, _, c, f = wgt.shape
    return im2col_reference(img, k, s, d, p).astype(np.float64) @ wgt.reshape(k * k * c, f)


def im2col_kernel(N, H, W, C, K, S, D, P, BM, BK):
    OH, OW = out_size(H, K, S, D, P), out_size(W, K, S, D, P)
    rows, cols = N * OH * OW, K * K * C

    @T.prim_func
    def main(img: T.Tensor((N, H, W, C), "float32"), col: T.Tensor((rows, cols), "float32")):
        with T.Kernel(T.ceildiv(cols, BK), T.ceildiv(rows, BM), threads=32) as (bx, by):
            tile = T.alloc_shared((BM, BK), "float32")
            T.im2col(img, tile, by, bx, K, S, D, P)
            T.copy(tile, col[by * BM, bx * BK])

    return main


@pytest.mark.parametrize("S, D, P", [(2, 2, 2)])
def test_im2col_matrix(S, D, P):
    N, H, W, C, K = 2, 7, 6, 3, 3
    img = rand(N, H, W, C)
    col = tilelang.compile(im2col_kernel(N, H, W, C, K, S, D, P, 16, 8), out_idx=[1], target="cpu")(
        img
    )
    np.testing.assert_array_equal(col, im2col_reference(img, K, S, D, P))


def convolution(N, C, H, W, F, K, S, D, P, block_M, block_N, block_K, use_alias):
    KH, KW = K, K
    OH, OW = out_size(H, K, S, D, P), out_size(W, K, S, D, P)
    dtype, accum_dtype = "float16", "float32"
    gather = T.c2d_im2col if use_alias else T.im2col

    @T.prim_func
    def main(
        data: T.Tensor((N, H, W, C), dtype),
        kernel: T.Tensor((KH, KW, C, F), dtype),
        out: T.Tensor((N, OH, OW, F), dtype),
    ):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=128) as (
            bx,
            by,
        ):
            data_shared = T.alloc_shared((block_M, block_K), dtype)
            kernel_shared = T.alloc_shared((block_K, block_N), dtype)
            out_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            out_shared = T.alloc_shared((block_M, block_N), dtype)

            kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)

            T.annotate_layout(
                {
                    out_shared: tilelang.layout.make_swizzled_layout(out_shared),
                    data_shared: tilelang.layout.make_swizzled_layout(data_shared),
                    kernel_shared: tilelang.layout.make_swizzled_layout(kernel_shared),
                }
            )

            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=2):
                gather(data, data_shared, by, k_iter, KH, S, D, P)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)

            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * block_M, bx * block_N])

    return main


@pytest.mark.parametrize("S, D, P, use_alias", [(1, 1, 1, False), (2, 2, 1, True)])
def test_convolution_through_im2col_and_gemm(S, D, P, use_alias):
    N, C, H, W, F, K = 2, 6, 9, 8, 10, 3
    img = rand(N, H, W, C, dtype=np.float16)
    wgt = rand(K, K, C, F, dtype=np.float16)
    conv = convolution(N, C, H, W, F, K, S, D, P, 16, 8, 16, use_alias)
    out = tilelang.compile(conv, out_idx=[2], target="cpu")(img, wgt)
    OH, OW = out_size(H, K, S, D, P), out_size(W, K, S, D, P)
    want = conv_reference(img, wgt, S, D, P).reshape(N, OH, OW, F)
    np.testing.assert_allclose(out.astype(np.float32), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize(
    "call, match",
    [
        ("T.im2col(img, tile, 0, 0, 0, 1, 1, 0)", "kernel must be at least 1, got 0"),
        ("T.im2col(img, tile, 0, 0, 3, 0, 1, 0)", "stride must be at least 1, got 0"),
        ("T.im2col(img, tile, 0, 0, 3, 1, 1, -1)", "pad must be at least 0, got -1"),
        ("T.im2col(img, tile, 0, 0, 3, n, 1, 0)", "stride must be a constant integer"),
        ("T.im2col(flat, tile, 0, 0, 3, 1, 1, 0)", "must be a whole NHWC tensor of 4 dimensions"),
        ("T.im2col(img, cube, 0, 0, 3, 1, 1, 0)", "must have 2 dimensions \\[block_M, block_K\\]"),
        ("T.im2col(img, tile, 0, 0, (3, 2), 1, 1, 0)", "square kernels only"),
    ],
)
def test_im2col_misuse(call, match):
    n = T.dynamic("n")
    with pytest.raises(tilelang.TileLangError, match=match) as info:

        @T.prim_func
        def main(
            img: T.Tensor((1, 4, 4, 2), "float32"),
            flat: T.Tensor((16, 2), "float32"),
            s: T.int32,
        ):
            with T.Kernel(1, threads=1):
                tile = T.alloc_shared((8, 8), "float32")
                cube = T.alloc_shared((2, 8, 8), "float32")
                eval(call, {"T": T, "img": img, "flat": flat, "tile": tile, "cube": cube, "n": n})

    assert "test_transpose_im2col.py:" in str(info.value)
