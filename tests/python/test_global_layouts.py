"""T.annotate_layout on global buffers (src/transform/global_layouts.cpp): as in TileLang,
the element at logical index I of an annotated kernel parameter lives at the row-major
position forward(I) of the layout's output shape, for every access of the annotating
kernel (loads, stores, T.copy both ways, T.fill, atomics, addresses), on every target.
The raw buffers are checked against numpy's permutation of the same data."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"
METAL = "metal -emulate"
TARGETS = ["cpu", SM80, SM90A, METAL]


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def physical(logical, fn, out_shape):
    """numpy's placement of `logical` under the layout `fn`: the raw buffer contents."""
    out = np.full(int(np.prod(out_shape)), np.nan, dtype=logical.dtype)
    for idx in np.ndindex(*logical.shape):
        out[np.ravel_multi_index(tuple(fn(*idx)), out_shape)] = logical[idx]
    assert not np.isnan(out).any()
    return out.reshape(logical.shape)


M, N, BM = 32, 48, 16
LAYOUTS = {
    # rows in blocks of 8, columns split in chunks of 8 in front of the rows
    "chunks": (lambda i, j: [j // 8, i, j % 8], [N // 8, M, 8]),
    "transposed": (lambda i, j: [j, i], [N, M]),
    "flat_reversed": (lambda i, j: [M * N - 1 - (i * N + j)], [M * N]),
    "interleaved": (lambda i, j: [i // 8, j // 2, (j % 2), i % 8], [M // 8, N // 2, 2, 8]),
}


def write_through(fn, how):
    """B = 2 * A written into B through the layout: element stores, a copy out of a
    fragment, or a copy out of a shared tile (after a T.clear of B's rows)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M // BM, threads=64) as bx:
            if how == "stores":
                for i, j in T.Parallel(BM, N):
                    B[bx * BM + i, j] = A[bx * BM + i, j] * 2.0
                # annotated after the accesses: the layout holds for the whole kernel
                T.annotate_layout({B: T.Layout(B.shape, fn)})
            else:
                T.annotate_layout({B: T.Layout(B.shape, fn)})
                T.clear(B[bx * BM : (bx + 1) * BM, :])
                # other threads write these elements below: order the block's global writes
                T.sync_threads()
                if how == "fragment":
                    F = T.alloc_fragment((BM, N), "float32")
                    T.copy(A[bx * BM, 0], F)
                    for i, j in T.Parallel(BM, N):
                        F[i, j] = F[i, j] * 2.0
                    T.copy(F, B[bx * BM, 0])
                else:
                    S = T.alloc_shared((BM, N), "float32")
                    T.copy(A[bx * BM, 0], S)
                    for i, j in T.Parallel(BM, N):
                        S[i, j] = S[i, j] * 2.0
                    T.copy(S, B[bx * BM, 0])

    return main


def read_through(fn):
    """C = B + 1, B read through the layout into a shared tile and out of it."""

    @T.prim_func
    def main(B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(M // BM, threads=64) as bx:
            T.annotate_layout({B: T.Layout(B.shape, fn)})
            S = T.alloc_shared((BM, N), "float32")
            T.copy(B[bx * BM : (bx + 1) * BM, :], S)
            for i, j in T.Parallel(BM, N):
                C[bx * BM + i, j] = S[i, j] + 1.0

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(LAYOUTS))
@pytest.mark.parametrize("how", ["stores", "fragment", "shared"])
def test_written_and_read_back_through_the_layout(target, name, how):
    fn, out_shape = LAYOUTS[name]
    a = rand(M, N, seed=len(name))
    b = rand(M, N, seed=7)  # garbage the kernel overwrites
    c = np.zeros((M, N), "float32")
    tilelang.compile(write_through(fn, how), target=target)(a, b)
    np.testing.assert_array_equal(b, physical(2 * a, fn, out_shape))
    tilelang.compile(read_through(fn), target=target)(b, c)
    np.testing.assert_allclose(c, 2 * a + 1, rtol=1e-6)


def test_only_the_annotating_kernel_uses_the_layout():
    """Two T.Kernel blocks of one function: the first writes B through the layout, the
    second reads it logically (the raw placement)."""
    fn, out_shape = LAYOUTS["chunks"]

    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        B: T.Tensor((M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(M // BM, threads=64) as bx:
            T.annotate_layout({B: T.Layout(B.shape, fn)})
            T.copy(A[bx * BM : (bx + 1) * BM, :], B[bx * BM : (bx + 1) * BM, :])
        with T.Kernel(M // BM, threads=64) as bx:
            for i, j in T.Parallel(BM, N):
                C[bx * BM + i, j] = B[bx * BM + i, j]

    a = rand(M, N, seed=3)
    b, c = np.zeros((M, N), "float32"), np.zeros((M, N), "float32")
    tilelang.compile(main, target="cpu")(a, b, c)
    np.testing.assert_array_equal(b, physical(a, fn, out_shape))
    np.testing.assert_array_equal(c, b)


# ---- the FlashAttention backward pattern: dQ accumulated by atomics through make_dq_layout

BATCH, SEQ, HEADS, DIM, BLOCK_M, BLOCK_N = 2, 32, 2, 16, 16, 16


def dq_fn(b, l, h, d):
    return [b, l // 8, h, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2]


DQ_OUT_SHAPE = [BATCH, SEQ // 8, HEADS, DIM // 8, 2, 32]


def make_dq_layout(dQ):
    return T.Layout(dQ.shape, dq_fn)


def dq_kernels(vectorized):
    shape = (BATCH, SEQ, HEADS, DIM)

    @T.prim_func
    def bwd(
        Q: T.Tensor(shape, "float32"),
        W: T.Tensor((SEQ, SEQ), "float32"),
        dQ: T.Tensor(shape, "float32"),
    ):
        # block (k, h, b) adds W[:, k-block] @ Q[b, k-block, h, :] into every row block of dQ
        with T.Kernel(SEQ // BLOCK_N, HEADS, BATCH, threads=128) as (bx, by, bz):
            T.annotate_layout({dQ: make_dq_layout(dQ)})
            Qs = T.alloc_shared((BLOCK_N, DIM), "float32")
            Ws = T.alloc_shared((BLOCK_M, BLOCK_N), "float32")
            dq = T.alloc_fragment((BLOCK_M, DIM), "float32")
            T.copy(Q[bz, bx * BLOCK_N : (bx + 1) * BLOCK_N, by, :], Qs)
            for m in T.serial(SEQ // BLOCK_M):
                T.copy(W[m * BLOCK_M, bx * BLOCK_N], Ws)
                T.clear(dq)
                T.gemm(Ws, Qs, dq)
                if vectorized:
                    for i, j in T.Parallel(BLOCK_M, DIM // 2):
                        T.atomic_addx2(dQ[bz, m * BLOCK_M + i, by, j * 2], dq[i, j * 2])
                else:
                    T.atomic_add(dQ[bz, m * BLOCK_M : (m + 1) * BLOCK_M, by, :], dq)

    @T.prim_func
    def post(dQ: T.Tensor(shape, "float32"), dQ_out: T.Tensor(shape, "float32")):
        with T.Kernel(SEQ // BLOCK_M, HEADS, BATCH, threads=128) as (bx, by, bz):
            T.annotate_layout({dQ: make_dq_layout(dQ)})
            T.copy(
                dQ[bz, bx * BLOCK_M : (bx + 1) * BLOCK_M, by, :],
                dQ_out[bz, bx * BLOCK_M : (bx + 1) * BLOCK_M, by, :],
            )

    return bwd, post


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("vectorized", [False, True])
def test_dq_layout_atomics(target, vectorized):
    bwd, post = dq_kernels(vectorized)
    q = rand(BATCH, SEQ, HEADS, DIM, seed=11)
    w = rand(SEQ, SEQ, seed=12)
    dq = np.zeros((BATCH, SEQ, HEADS, DIM), "float32")
    tilelang.compile(bwd, target=target)(q, w, dq)
    want = np.einsum("lk,bkhd->blhd", w.astype("float64"), q.astype("float64"))
    np.testing.assert_allclose(dq, physical(want, dq_fn, DQ_OUT_SHAPE), rtol=1e-4, atol=1e-4)
    out = np.zeros_like(dq)
    tilelang.compile(post, target=target)(dq, out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_dq_atomics_of_a_fragment_tile_are_element_wise_through_the_layout():
    bwd, _ = dq_kernels(vectorized=False)
    src = tilelang.compile(bwd, target=SM80).get_kernel_source()
    atomics = [line for line in src.splitlines() if "tl::AtomicAdd(" in line]
    assert atomics and all("&dQ[" in line for line in atomics)
    # the offset of the layout's last output index, 4 * (l % 8) + (d % 8) / 2, is computed
    assert any("% 8" in line for line in atomics)


def dq_fp16_kernel():
    """dQ accumulated from an fp16 tensor-core gemm by one region atomic of its register
    accumulator (64 rows per block)."""
    rows = 64
    shape = (1, rows, HEADS, 64)

    @T.prim_func
    def bwd(
        Q: T.Tensor(shape, "float16"),
        W: T.Tensor((rows, rows), "float16"),
        dQ: T.Tensor(shape, "float32"),
    ):
        with T.Kernel(1, HEADS, 1, threads=128) as (_, by, bz):
            T.annotate_layout({dQ: make_dq_layout(dQ)})
            Qs = T.alloc_shared((rows, 64), "float16")
            Ws = T.alloc_shared((rows, rows), "float16")
            dq = T.alloc_fragment((rows, 64), "float32")
            T.copy(Q[bz, :, by, :], Qs)
            T.copy(W, Ws)
            T.clear(dq)
            T.gemm(Ws, Qs, dq)
            T.atomic_add(dQ[bz, :, by, :], dq)

    return bwd, shape


@pytest.mark.parametrize("target", [SM80, SM90A])
def test_region_atomic_of_a_register_accumulator_keeps_it_in_registers(target, recwarn):
    bwd, shape = dq_fp16_kernel()
    kernel = tilelang.compile(bwd, target=target)
    assert not [w for w in recwarn if "stays in shared memory" in str(w.message)]
    assert "TL_SMEM(dq" not in kernel.get_kernel_source()
    q = rand(*shape, seed=21).astype("float16")
    w = rand(shape[1], shape[1], seed=22).astype("float16")
    dq = np.zeros(shape, "float32")
    kernel(q, w, dq)
    want = np.einsum("lk,bkhd->blhd", w.astype("float64"), q.astype("float64"))
    out_shape = [1, shape[1] // 8, HEADS, 8, 2, 32]
    np.testing.assert_allclose(dq, physical(want, dq_fn, out_shape), rtol=1e-3, atol=1e-3)


def test_fill_and_element_atomics_through_the_layout():
    fn, out_shape = LAYOUTS["interleaved"]

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M // BM, threads=64) as bx:
            T.annotate_layout({B: T.Layout(B.shape, fn)})
            T.fill(B[bx * BM : (bx + 1) * BM, :], 0.5)
            for i, j in T.Parallel(BM, N):
                T.atomic_add(B[bx * BM + i, j], A[bx * BM + i, j])
                T.atomic_max(B[bx * BM + i, j], 0.75)

    for target in TARGETS:
        a = rand(M, N, seed=5)
        b = rand(M, N, seed=6)
        tilelang.compile(main, target=target)(a, b)
        np.testing.assert_allclose(b, physical(np.maximum(a + 0.5, 0.75), fn, out_shape), rtol=1e-6)


def atomic_runs(fn, offset):
    """B[r, 4 * j + offset : ... + 4] += S[r, 4 * j : ... + 4] by T.atomic_addx4 (the last
    run of a row, past the row's end when offset > 0, is dropped there)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M // BM, threads=64) as bx:
            T.annotate_layout({B: T.Layout(B.shape, fn)})
            S = T.alloc_shared((BM, N), "float32")
            T.copy(A[bx * BM, 0], S)
            for i, j in T.Parallel(BM, N // 4):
                T.atomic_addx4(B[bx * BM + i, j * 4 + offset], S[i, j * 4])

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["chunks", "interleaved", "rows"])
@pytest.mark.parametrize("offset", [0, 1])
def test_atomic_runs_through_the_layout(target, name, offset):
    fn, out_shape = (
        LAYOUTS[name] if name in LAYOUTS else (lambda i, j: [i % 2, i // 2, j], [2, M // 2, N])
    )
    a, b = rand(M, N, seed=13), rand(M, N, seed=14)
    logical = np.zeros((M, N), "float32")
    logical[:, offset:] = a[:, : N - offset]
    raw = b.copy()
    tilelang.compile(atomic_runs(fn, offset), target=target)(a, raw)
    np.testing.assert_allclose(raw, b + physical(logical, fn, out_shape), rtol=1e-6)


def test_runs_the_layout_keeps_stay_runs():
    """Rows reordered, or columns in aligned chunks of 8: a run of 4 stays 4 consecutive
    places (one tl::AtomicAddx4); the interleaved layout splits it, element by element."""
    for fn, whole in [
        (lambda i, j: [i % 2, i // 2, j], True),
        (LAYOUTS["chunks"][0], True),
        (LAYOUTS["interleaved"][0], False),
    ]:
        src = tilelang.compile(atomic_runs(fn, 0), target=SM80).get_kernel_source()
        runs = [line for line in src.splitlines() if "tl::AtomicAddx4(" in line]
        singles = [line for line in src.splitlines() if "tl::AtomicAdd(" in line]
        assert (len(runs), len(singles)) == ((1, 0) if whole else (0, 1)), src


def test_out_of_bounds_tiles_use_logical_bounds():
    """A tile past the tensor's end: the rows outside are neither written nor read,
    though their physical places lie inside the buffer."""
    rows = 24  # the second tile of 16 covers rows 16..31
    fn = lambda i, j: [j, i]

    @T.prim_func
    def main(A: T.Tensor((rows, N), "float32"), B: T.Tensor((rows, N), "float32")):
        with T.Kernel(2, threads=64) as bx:
            T.annotate_layout({B: T.Layout(B.shape, fn)})
            S = T.alloc_shared((BM, N), "float32")
            T.copy(A[bx * BM, 0], S)
            T.copy(S, B[bx * BM, 0])

    for target in ["cpu", SM80, METAL]:
        a = rand(rows, N, seed=8)
        b = np.zeros((rows, N), "float32")
        tilelang.compile(main, target=target)(a, b)
        np.testing.assert_array_equal(b, physical(a, fn, [N, rows]))


def test_vector_stores_stay_where_the_layout_keeps_rows_whole():
    """Rows reordered (even rows first), each row whole: T.Parallel's 16-byte stores stay."""
    fn = lambda i, j: [i % 2, i // 2, j]

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M // BM, threads=64) as bx:
            T.annotate_layout({B: T.Layout(B.shape, fn)})
            for i, j in T.Parallel(BM, N):
                B[bx * BM + i, j] = A[bx * BM + i, j] * 2.0

    kernel = tilelang.compile(main, target=SM80)
    assert any("store_vec<4>((&B[" in line for line in kernel.get_kernel_source().splitlines())
    a = rand(M, N, seed=4)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, physical(2 * a, fn, [2, M // 2, N]))


def test_offsets_past_two_to_the_31_are_computed_in_64_bits():
    """A 2^32-element tensor whose columns move in chunks of 64 in front of the rows:
    checked group by group (never all 2^32 points), its offsets in int64."""
    rows = cols = 65536

    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float16")):
        with T.Kernel(rows // 64, cols // 64, threads=128) as (bx, by):
            T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [j // 64, i, j % 64])})
            T.fill(A[bx * 64 : (bx + 1) * 64, by * 64 : (by + 1) * 64], 1.0)

    for target in ["cpu", SM80]:
        stores = [
            line
            for line in tilelang.compile(main, target=target).get_kernel_source().splitlines()
            if "A[" in line
        ]
        assert stores and all("((int64_t)by) * (int64_t)4194304LL" in line for line in stores)


def test_kernels_without_global_layouts_keep_their_source():
    """A shared-tile annotation is not a global one: nothing of this pass applies."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M // BM, threads=64) as bx:
            S = T.alloc_shared((BM, N), "float32")
            T.annotate_layout({S: T.Layout(S.shape, lambda i, j: [i, j])})
            T.copy(A[bx * BM, 0], S)
            T.copy(S, B[bx * BM, 0])

    src = tilelang.compile(main, target=SM80).get_kernel_source()
    assert "global_layout" not in src


# ---- errors, at the user's line


def layout_error(shape, fn, match, dtype="float32", strides=None, annotate=None):
    with pytest.raises(tilelang.TileLangError, match=match) as info:

        @T.prim_func
        def main(A: T.Tensor(shape, dtype)):
            with T.Kernel(1, threads=32):
                if annotate is not None:
                    annotate(A)
                else:
                    T.annotate_layout({A: T.Layout(A.shape, fn)})
                A[0, 0] = 1.0

        # symbolic sizes are specialized at the first call
        tilelang.compile(main, target="cpu")(np.zeros((8, 8), dtype))
    assert "test_global_layouts.py:" in str(info.value)


@pytest.mark.parametrize(
    "fn, match",
    [
        (
            lambda i, j: [i // 2, j],
            (
                r"layout of global buffer 'A' \(shape \[8, 8\]\) is invalid: it is not a bijection: "
                r"logical indices \(0, 0\) and \(1, 0\) both map to \[0, 0\]"
            ),
        ),
        (
            lambda i, j: [i, j + 1],
            r"maps the buffer's elements onto the output shape \[8, 9\], which holds a different number",
        ),
        (lambda i, j: [i, j - 1], r"logical index \(0, 0\) maps to \[0, -1\], a negative index"),
        (
            lambda i, j: [i, 3],
            r"not a bijection: logical indices \(0, 0\) and \(0, 1\) both map to \[0, 3\]",
        ),
    ],
)
def test_invalid_layouts(fn, match):
    layout_error((8, 8), fn, match)


def test_layout_over_another_shape():
    layout_error(
        (8, 8),
        None,
        r"layout for 'A' is over shape \[4, 16\] but the buffer has shape \[8, 8\]",
        annotate=lambda A: T.annotate_layout({A: T.Layout((4, 16), lambda i, j: [i, j])}),
    )


def test_fragment_on_a_global_buffer():
    layout_error(
        (8, 8),
        None,
        r"'A' is a global buffer, so its layout must be a T.Layout",
        annotate=lambda A: T.annotate_layout(
            {A: T.Fragment((8, 8), forward_thread_fn=lambda i, j: i)}
        ),
    )


def test_symbolic_dimension_must_be_carried_over_whole():
    n = T.symbolic("n")
    layout_error(
        (n, 8),
        lambda i, j: [i // 2, j, i % 2],
        r"dimension 0 has the symbolic size n, which the layout must carry over whole",
    )


def test_symbolic_dimension_carried_over_whole():
    """A symbolic dimension may move (here behind the permuted columns), not be split."""
    n = T.symbolic("n")
    fn = lambda i, j: [(j + 3) % 8, i]

    @T.prim_func
    def main(A: T.Tensor((n, 8), "float32"), B: T.Tensor((n, 8), "float32")):
        with T.Kernel(T.ceildiv(n, 4), threads=32) as bx:
            T.annotate_layout({B: T.Layout(B.shape, fn)})
            for i, j in T.Parallel(4, 8):
                B[bx * 4 + i, j] = A[bx * 4 + i, j]

    for rows in (10, 12):
        a = rand(rows, 8, seed=rows)
        b = np.zeros_like(a)
        tilelang.compile(main, target="cpu")(a, b)
        np.testing.assert_array_equal(b, physical(a, fn, [8, rows]))


def test_two_different_layouts_of_one_buffer():
    def annotate(A):
        T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [j, i])})
        T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [i, j])})

    layout_error(
        (8, 8),
        None,
        r"global buffer 'A' already has another layout in this kernel",
        annotate=annotate,
    )


def test_wide_access_of_a_remapped_buffer():
    def annotate(A):
        T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [j, i])})
        T.stg64(A[0, 0], T.Broadcast(T.uint32(0), 2))

    layout_error(
        (8, 8),
        None,
        r"tl::store_global_64 reads or writes a run of consecutive elements of 'A'",
        annotate=annotate,
    )
