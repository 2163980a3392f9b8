"""T.annotate_layout on shared tiles (src/transform/shared_layouts.cpp): a layout the
frontend recognizes as a 16-byte-chunk XOR swizzle (make_swizzled_layout, the bank
helpers, make_mma_swizzle_layout, or a function of that form) is applied on CUDA
targets, so every access to the tile goes through it, TMA included where its swizzle
modes match; other layouts, the cpu and Metal keep the logical layout. Results are
the same either way; the emulators check them against numpy."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.layout import (
    Layout,
    make_half_bank_swizzled_layout,
    make_linear_layout,
    make_swizzled_layout,
)

SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"


def transpose_through_tile(M, N, bm, bn, make_layout, stages=2):
    """B = A^T, tile by tile: a copy into the annotated shared tile (pipelined, so TMA
    on sm_90a), then element loads of it by columns."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((N, M), "float16")):
        with T.Kernel(M // bm, threads=128) as bx:
            S = T.alloc_shared((bm, bn), "float16")
            layout = make_layout(S)
            if layout is not None:
                T.annotate_layout({S: layout})
            for k in T.Pipelined(N // bn, num_stages=stages):
                T.copy(A[bx * bm, k * bn], S)
                for j, i in T.Parallel(bn, bm):
                    B[k * bn + j, bx * bm + i] = S[i, j]

    return main


def tile_offsets(src, name):
    """The generated accesses of shared tile `name` (TL_SMEM offsets and addresses)."""
    body = src[src.index("__global__") :] if "__global__" in src else src
    return [line for line in body.splitlines() if f"TL_SMEM({name}," in line or f"&{name}[" in line]


LAYOUTS = {
    "none": lambda S: None,
    "swizzled": make_swizzled_layout,
    "half_bank": make_half_bank_swizzled_layout,
    "linear": make_linear_layout,
    "rotated": lambda S: Layout(S.shape, lambda i, j: [i, (j + 8) % S.shape[1]]),
    "xor_lambda": lambda S: Layout(S.shape, lambda i, j: [i, ((j // 8) ^ (i % 8)) * 8 + j % 8]),
}


@pytest.mark.parametrize("target", ["cpu", SM80, SM90A])
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_annotated_tiles_give_the_same_results(target, name):
    M, N = 128, 256
    kernel = tilelang.compile(transpose_through_tile(M, N, 64, 64, LAYOUTS[name]), target=target)
    a = np.random.default_rng(1).standard_normal((M, N)).astype(np.float16)
    b = np.zeros((N, M), np.float16)
    kernel(a, b)
    np.testing.assert_array_equal(b, a.T)


@pytest.mark.parametrize(
    "name, key",
    [
        ("swizzled", "((i >> 0) & 7)"),  # 128-byte rows: TMA's 128-byte mode
        ("xor_lambda", "((i >> 0) & 7)"),  # the same pattern written by hand
        ("half_bank", "((i >> 1) & 3)"),  # 64-byte spans of 128-byte rows: no TMA mode
    ],
)
def test_recognized_swizzles_are_applied_on_cuda(name, key):
    src = tilelang.compile(
        transpose_through_tile(128, 256, 64, 64, LAYOUTS[name]), target=SM90A
    ).get_kernel_source()
    reads = [line for line in tile_offsets(src, "S") if "TL_SMEM(S," in line]
    assert reads and all("^" in line and key in line for line in reads), reads
    assert "tl::shared_layout" not in src  # the marker is gone
    if name == "half_bank":
        assert "tl::tma_load" not in src  # no TMA swizzle writes it: cp.async instead
    else:
        assert "tl::tma_load<2>((&S[" in src  # TMA writes the tile swizzled


@pytest.mark.parametrize("name", ["none", "linear", "rotated"])
def test_other_layouts_keep_the_logical_one(name):
    src = tilelang.compile(
        transpose_through_tile(128, 256, 64, 64, LAYOUTS[name]), target=SM90A
    ).get_kernel_source()
    assert not any("^" in line for line in tile_offsets(src, "S"))
    assert "tl::tma_load<2>((&S[" in src


@pytest.mark.parametrize("target", ["cpu", "metal"])
def test_cpu_and_metal_keep_logical_layouts(target):
    src = tilelang.compile(
        transpose_through_tile(128, 256, 64, 64, make_swizzled_layout), target=target
    ).get_kernel_source()
    assert "tl::shared_layout" not in src and "^" not in "".join(tile_offsets(src, "S"))


def test_64_byte_rows_take_the_64_byte_tma_mode():
    src = tilelang.compile(
        transpose_through_tile(128, 256, 64, 32, make_swizzled_layout), target=SM90A
    ).get_kernel_source()
    reads = [line for line in tile_offsets(src, "S") if "TL_SMEM(S," in line]
    assert reads and all(">> 1) & 3)" in line for line in reads), reads
    assert "tl::tma_load<2>((&S[" in src


def gemm_with_annotated_operands(M, N, K):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.annotate_layout({A_s: make_half_bank_swizzled_layout(A_s)})
            T.clear(acc)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc)
            T.copy(acc, C)

    return main


@pytest.mark.parametrize("target", [SM80, SM90A])
def test_gemm_operands_keep_the_layout_the_gemm_chooses(target):
    M, N, K = 64, 64, 64
    kernel = tilelang.compile(gemm_with_annotated_operands(M, N, K), target=target)
    assert "((i >> 1) & 3)" not in kernel.get_kernel_source()
    rng = np.random.default_rng(2)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-2)


def scaled_through_tile(M, N, bm, bn):
    """B = 2 A: threads write the annotated tile, then a copy stores it (by TMA on
    sm_90a, in the tile's swizzle)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(N // bn, M // bm, threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), "float16")
            T.annotate_layout({S: make_swizzled_layout(S)})
            for i, j in T.Parallel(bm, bn):
                S[i, j] = A[by * bm + i, bx * bn + j] * 2
            T.copy(S, B[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("target", ["cpu", SM80, SM90A])
def test_annotated_tiles_store_through_tma_in_their_swizzle(target):
    M, N = 128, 192
    kernel = tilelang.compile(scaled_through_tile(M, N, 64, 64), target=target)
    if target == SM90A:
        src = kernel.get_kernel_source()
        assert "tl::tma_store<2>((&tl_tma_map0), (&S[0])" in src
        assert any("^" in line for line in tile_offsets(src, "S"))
    a = np.random.default_rng(3).standard_normal((M, N)).astype(np.float16)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a * np.float16(2))


def roundtrip(forward):
    @T.prim_func
    def main(A: T.Tensor((128,), "int32"), Out: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((128,), "int32")
            T.annotate_layout({s: Layout((128,), forward)})
            for i in T.Parallel(128):
                s[i] = A[i]
            for i in T.Parallel(128):
                Out[i] = s[i]

    return main


@pytest.mark.parametrize(
    "forward, first, second, phys",
    [
        (lambda i: i % 64, 0, 64, 0),
        (lambda i: i * 0, 0, 1, 0),
        (lambda i: (i % 64) * 4, 0, 64, 0),
    ],
)
def test_a_layout_mapping_two_elements_to_one_location_is_refused(forward, first, second, phys):
    # As TileLang: on a GPU that applied it, the two elements would overwrite each other.
    with pytest.raises(tilelang.TileLangError) as info:
        roundtrip(forward)
    message = str(info.value)
    assert "test_shared_layouts.py" in message
    assert (
        "T.annotate_layout: the layout of shared buffer `s` must be injective (one location "
        f"per element), but elements ({first},) and ({second},) both map to physical "
        f"coordinates ({phys},)"
    ) in message


@pytest.mark.parametrize("forward", [lambda i: i ^ 1, lambda i: i * 2, lambda i: i + 10])
@pytest.mark.parametrize("target", ["cpu", SM80])
def test_injective_layouts_that_are_not_swizzles_still_run(forward, target):
    a = np.random.default_rng(9).integers(-1000, 1000, 128).astype(np.int32)
    out = np.zeros(128, np.int32)
    tilelang.compile(roundtrip(forward), target=target)(a, out)
    np.testing.assert_array_equal(out, a)
