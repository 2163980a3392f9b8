"""T.view with a dtype of another width: the bytes of a shared, global or local buffer
read and written as a wider or narrower dtype, row-major on both sides, as
`reinterpret_cast` of the storage would. Checked against numpy's `.view` on the CPU,
the emulated sm_80 / sm_90a and Metal targets; NVRTC compiles the CUDA source. The
pattern of TileLang's DeepSeek sparse MLA backward (a bf16 shared tile, read by a gemm,
then reused as a float32 staging tile for a fragment's atomic adds) runs end to end."""

import re

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc

SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"
METAL = "metal -emulate"
rng = np.random.default_rng(29)


def halves_as_floats_kernel(R, C):
    """A float16 shared tile [R, C] seen as float32 [R // 2, C]: written and read through
    the view, then copied out through the base, filled, and read again."""

    @T.prim_func
    def main(
        A: T.Tensor((R // 2, C), "float32"),
        B: T.Tensor((R // 2, C), "float32"),
        Halves: T.Tensor((R, C), "float16"),
        Filled: T.Tensor((R, C), "float16"),
    ):
        with T.Kernel(1, threads=64):
            s16 = T.alloc_shared((R, C), "float16")
            s32 = T.view(s16, shape=[R // 2, C], dtype="float32")
            T.copy(A, s32)
            for i, j in T.Parallel(R // 2, C):
                B[i, j] = s32[i, j] * 2.0
            T.copy(s16, Halves)
            T.fill(s32[1, :], 1.5)
            T.clear(s32[0:1, :])
            T.copy(s16, Filled)

    return main


@pytest.mark.parametrize("target", ["cpu", SM80, SM90A, METAL])
def test_a_wider_view_of_shared_memory_reaches_its_bytes(target):
    R, C = 16, 32
    kernel = tilelang.compile(halves_as_floats_kernel(R, C), out_idx=[1, 2, 3], target=target)
    a = rng.standard_normal((R // 2, C)).astype(np.float32)
    b, halves, filled = kernel(a)
    np.testing.assert_array_equal(b, a * 2)
    np.testing.assert_array_equal(halves.view(np.float32).reshape(a.shape), a)
    expect = a.copy()
    expect[1, :] = 1.5
    expect[0, :] = 0
    np.testing.assert_array_equal(filled.view(np.float32).reshape(a.shape), expect)


def global_views_kernel(N):
    """Global tensors: float32 input read as bytes (narrower), an int16 output written
    as float32 (wider), and a uint8 input read as float32 through T.copy."""

    @T.prim_func
    def main(
        A: T.Tensor((N,), "float32"),
        Raw: T.Tensor((N * 4,), "uint8"),
        Bytes: T.Tensor((N, 4), "uint8"),
        Words: T.Tensor((N * 2,), "int16"),
        Floats: T.Tensor((N,), "float32"),
    ):
        with T.Kernel(1, threads=32):
            a_bytes = T.view(A, shape=[N, 4], dtype="uint8")
            for i, j in T.Parallel(N, 4):
                Bytes[i, j] = a_bytes[i, j]
            w_floats = T.view(Words, shape=[N], dtype="float32")
            for i in T.Parallel(N):
                w_floats[i] = A[i] + 1.0
            T.copy(T.view(Raw, shape=[N], dtype="float32"), Floats)

    return main


@pytest.mark.parametrize("target", ["cpu", SM80, SM90A, METAL])
def test_views_of_global_tensors_in_both_directions(target):
    N = 64
    kernel = tilelang.compile(global_views_kernel(N), out_idx=[2, 3, 4], target=target)
    a = rng.standard_normal(N).astype(np.float32)
    raw = rng.standard_normal(N).astype(np.float32).view(np.uint8)
    bytes_, words, floats = kernel(a, raw)
    np.testing.assert_array_equal(bytes_, a.view(np.uint8).reshape(N, 4))
    np.testing.assert_array_equal(words.view(np.float32), a + np.float32(1))
    np.testing.assert_array_equal(floats, raw.view(np.float32))


def local_views_kernel(T_, K):
    """Per-thread local buffers: float32 registers written byte by byte (a narrower view,
    allowed in a buffer one thread owns), and int16 pairs read as int32."""

    @T.prim_func
    def main(
        Raw: T.Tensor((T_ * K * 4,), "uint8"),
        Pairs: T.Tensor((T_ * K * 2,), "int16"),
        Floats: T.Tensor((T_ * K,), "float32"),
        Ints: T.Tensor((T_ * K,), "int32"),
    ):
        with T.Kernel(1, threads=T_):
            tx = T.get_thread_binding()
            regs = T.alloc_local((K,), "float32")
            as_bytes = T.view(regs, shape=[K * 4], dtype="uint8")
            for k in T.serial(K * 4):
                as_bytes[k] = Raw[tx * K * 4 + k]
            for k in T.serial(K):
                Floats[tx * K + k] = regs[k]
            pairs = T.alloc_local((K * 2,), "int16")
            for k in T.serial(K * 2):
                pairs[k] = Pairs[tx * K * 2 + k]
            as_int = T.view(pairs, shape=[K], dtype="int32")
            for k in T.serial(K):
                Ints[tx * K + k] = as_int[k]

    return main


@pytest.mark.parametrize("target", ["cpu", SM80, SM90A, METAL])
def test_views_of_local_buffers_in_both_directions(target):
    threads, K = 32, 4
    kernel = tilelang.compile(local_views_kernel(threads, K), out_idx=[2, 3], target=target)
    raw = rng.standard_normal(threads * K).astype(np.float32).view(np.uint8)
    pairs = rng.integers(-(2**15), 2**15, threads * K * 2).astype(np.int16)
    floats, ints = kernel(raw, pairs)
    np.testing.assert_array_equal(floats, raw.view(np.float32))
    np.testing.assert_array_equal(ints, pairs.view(np.int32))


def staging_kernel(H, BS, D, split, threads):
    """TileLang's sparse MLA backward pattern: a bf16 shared tile feeds a gemm, then its
    storage is reused as a float32 staging tile (T.view) for a float32 fragment, which is
    added into global memory four elements at a time (T.atomic_addx4) from the view."""
    rows = BS // split

    @T.prim_func
    def main(
        Q: T.Tensor((H, D), "bfloat16"),
        KV: T.Tensor((BS, D), "bfloat16"),
        Acc: T.Tensor((BS, D), "float32"),
        P: T.Tensor((H, BS), "float32"),
        Out: T.Tensor((BS, D), "float32"),
    ):
        with T.Kernel(1, threads=threads):
            q_s = T.alloc_shared((H, D), "bfloat16")
            kv_s = T.alloc_shared((BS, D), "bfloat16")
            stage = T.view(kv_s, shape=[rows, D], dtype="float32")
            acc_p = T.alloc_fragment((H, BS), "float32")
            acc = T.alloc_fragment((BS, D), "float32")
            T.copy(Q, q_s)
            T.copy(KV, kv_s)
            T.copy(Acc, acc)
            T.gemm(q_s, kv_s, acc_p, transpose_B=True, clear_accum=True)
            T.copy(acc_p, P)
            for s in range(split):
                for i, j in T.Parallel(BS, D):
                    if i < rows:
                        stage[i, j] = acc[i + s * rows, j]
                for i, j in T.Parallel(rows, D // 4):
                    T.atomic_addx4(Out[i + s * rows, j * 4], stage[i, j * 4])

    return main


STAGING = {"H": 16, "BS": 32, "D": 64, "split": 2, "threads": 128}


@pytest.mark.parametrize("target", ["cpu", SM80, SM90A])
def test_a_gemm_tile_reused_as_a_float32_staging_tile(target):
    H, BS, D = STAGING["H"], STAGING["BS"], STAGING["D"]
    kernel = tilelang.compile(staging_kernel(**STAGING), out_idx=[3], target=target)
    q = rng.standard_normal((H, D)).astype(ml_dtypes.bfloat16)
    kv = rng.standard_normal((BS, D)).astype(ml_dtypes.bfloat16)
    acc = rng.standard_normal((BS, D)).astype(np.float32)
    out = rng.standard_normal((BS, D)).astype(np.float32)
    start = out.copy()
    p = kernel(q, kv, acc, out)
    ref = q.astype(np.float64) @ kv.astype(np.float64).T
    np.testing.assert_allclose(p, ref, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(out, start + acc, rtol=1e-6, atol=1e-6)


def tile_ops_kernel(R, C, steps):
    """Tile operators on a float32 view of an int16 shared tile inside a pipelined loop:
    T.copy from and into fragments, and a reduction over the view."""

    @T.prim_func
    def main(
        A: T.Tensor((steps, R, C), "float32"),
        B: T.Tensor((steps, R, C), "float32"),
        RowMax: T.Tensor((steps, R), "float32"),
    ):
        with T.Kernel(1, threads=128):
            raw = T.alloc_shared((R * 2, C), "int16")
            tile = T.view(raw, shape=[R, C], dtype="float32")
            frag = T.alloc_fragment((R, C), "float32")
            back = T.alloc_fragment((R, C), "float32")
            row = T.alloc_fragment((R,), "float32")
            for t in T.Pipelined(steps, num_stages=2):
                T.copy(A[t, :, :], frag)
                for i, j in T.Parallel(R, C):
                    frag[i, j] = frag[i, j] + t
                T.copy(frag, tile)
                T.reduce_max(tile, row, dim=1)
                T.copy(tile, back)
                T.copy(back, B[t, :, :])
                T.copy(row, RowMax[t, :])

    return main


@pytest.mark.parametrize("target", ["cpu", SM80, SM90A])
def test_tile_ops_through_a_wider_view_in_a_pipelined_loop(target):
    R, C, steps = 16, 32, 3
    kernel = tilelang.compile(tile_ops_kernel(R, C, steps), out_idx=[1, 2], target=target)
    a = rng.standard_normal((steps, R, C)).astype(np.float32)
    b, row_max = kernel(a)
    want = a + np.arange(steps, dtype=np.float32)[:, None, None]
    np.testing.assert_array_equal(b, want)
    np.testing.assert_array_equal(row_max, want.max(axis=2))


NVRTC_KERNELS = {
    "shared": (lambda: halves_as_floats_kernel(16, 32), [1, 2, 3]),
    "global": (lambda: global_views_kernel(64), [2, 3, 4]),
    "local": (lambda: local_views_kernel(32, 4), [2, 3]),
    "staging": (lambda: staging_kernel(**STAGING), [3]),
    "tile_ops": (lambda: tile_ops_kernel(16, 32, 3), [1, 2]),
}


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(NVRTC_KERNELS))
def test_nvrtc_compiles_the_views(name, arch):
    make, out_idx = NVRTC_KERNELS[name]
    kernel = tilelang.compile(make(), out_idx=out_idx, target=f"cuda -arch={arch}")
    source = kernel.get_kernel_source()
    # The view is bit arithmetic on the base's elements, not a pointer of another type.
    assert re.search(r"tl::bit_cast<u?int(8|16|32)_t>", source), source
    assert "<<" in source or ">>" in source, source


# ---- errors name the argument, what was expected and what was given, at the user's line


def build(body):
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), C: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32):
            body(A, C)

    return main


def dynamic_view():
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32):
            T.view(A, shape=[n * 2], dtype="float16")

    return main


def narrow_shared_store(A, C):
    s = T.alloc_shared((4, 8), "float32")
    halves = T.view(s, shape=[4, 16], dtype="float16")
    T.fill(halves, 0)


def gemm_on_a_view(A, C):
    s = T.alloc_shared((32, 32), "float16")
    w = T.view(s, shape=[32, 16], dtype="float32")
    acc = T.alloc_fragment((32, 32), "float32")
    T.gemm(s, w, acc)


ERRORS = {
    "bytes": (
        lambda A, C: T.view(A, shape=[4, 8], dtype="float16"),
        (
            r"T.view shape: expected 128 bytes, as 'A' of shape \(4, 8\) and dtype float32 holds, "
            r"got shape \(4, 8\) of float16 with 64 bytes; a view of float16 needs 64 elements"
        ),
    ),
    "fragment": (
        lambda A, C: T.view(T.alloc_fragment((4, 8), "float32"), shape=[4, 16], dtype="float16"),
        (
            r"T.view dtype: cannot view fragment .* \(float32\) as float16, a dtype of another "
            r"width: a fragment's elements are spread over the threads' registers"
        ),
    ),
    "narrow_shared_store": (
        narrow_shared_store,
        (
            r"cannot store into view .* \(float16\) of .* \(float32, shared(.dyn)? memory\): each "
            r"float32 element holds 2 float16 elements"
        ),
    ),
    "bool_dtype": (
        lambda A, C: T.view(A, shape=[128], dtype="bool"),
        (
            r"T.view dtype: a view of another width needs scalar dtypes of 4, 8, 16, 32 or 64 bits "
            r"on both sides, but the view has bool"
        ),
    ),
    "gemm": (
        gemm_on_a_view,
        (
            r"T.gemm operand B must be a buffer or a slice of one, got .*, a view of .* \(shape "
            r"\[32, 16\], float32\); this operator does not take views"
        ),
    ),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_misuse_is_reported_at_the_users_line(case):
    body, match = ERRORS[case]
    with pytest.raises(tilelang.TileLangError, match=match) as info:
        build(body)
    assert "test_view_width.py:" in str(info.value)


def test_a_width_change_needs_constant_shapes():
    with pytest.raises(tilelang.TileLangError, match=r"needs constant shapes") as info:
        dynamic_view()
    assert "test_view_width.py:" in str(info.value)
