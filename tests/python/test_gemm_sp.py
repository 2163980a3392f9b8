"""T.gemm_sp (python/tilelang/language/sparse.py) and tilelang.utils.sparse: 2:4 sparse A
(1:2 for float32) as kept values + 4-bit codes, compressed on the host, decoded in the
kernel and multiplied, on every target against numpy; TileLang's kernel shape
(T.Pipelined; E in CUTLASS's order under make_cutlass_metadata_layout is
test_sparse_cutlass_metadata.py's); the errors."""

import re

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.layout import make_cutlass_metadata_layout, make_metadata_layout
from tilelang.utils.sparse import compress, compress_sm90, decompress, e_factor
from tilelang.utils.target import available_targets

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]
NP = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "int8": np.int8,
    "uint8": np.uint8,
    "float8_e4m3": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}


def semi_sparse(rows, K, dtype, seed=0, kept=None):
    """A (rows, K) array keeping `kept` random elements of every group along K."""
    rng = np.random.default_rng(seed)
    group = 2 if dtype == "float32" else 4
    kept = kept if kept is not None else group // 2
    if dtype == "int8":
        a = rng.integers(-4, 5, size=(rows, K // group, group))
    elif dtype == "uint8":
        a = rng.integers(1, 9, size=(rows, K // group, group))
    else:
        a = rng.integers(-8, 9, size=(rows, K // group, group)) / 4  # exact in every float type
    a = np.where(a == 0, 1, a)
    drop = np.argsort(rng.random((rows, K // group, group)), -1)[..., : group - kept]
    np.put_along_axis(a, drop, 0, -1)
    return a.reshape(rows, K).astype(NP[dtype])


def sparse_gemm(
    M,
    N,
    K,
    bM,
    bN,
    bK,
    dtype,
    meta,
    trans_A=False,
    trans_B=False,
    stages=2,
    accum="float32",
    trans_E=False,
    threads=128,
    layout_arch=None,
):
    """TileLang's sparse gemm kernel; with layout_arch ("8.0", "9.0") E and E_shared are
    annotated with make_cutlass_metadata_layout for that arch, as TileLang's examples
    write it, so E is passed in CUTLASS's order."""
    ef = e_factor(dtype, meta)
    e_shape = (K // ef, M) if trans_E else (M, K // ef)
    es_shape = (bK // ef, bM) if trans_E else (bM, bK // ef)
    a_shape = (K // 2, M) if trans_A else (M, K // 2)
    as_shape = (bK // 2, bM) if trans_A else (bM, bK // 2)
    if dtype == "float32":  # 1:2 keeps half as well
        pass
    b_shape = (N, K) if trans_B else (K, N)
    bs_shape = (bN, bK) if trans_B else (bK, bN)

    @T.prim_func
    def main(
        A_sparse: T.Tensor(a_shape, dtype),
        E: T.Tensor(e_shape, meta),
        B: T.Tensor(b_shape, dtype),
        C: T.Tensor((M, N), accum),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(as_shape, dtype)
            E_shared = T.alloc_shared(es_shape, meta)
            B_shared = T.alloc_shared(bs_shape, dtype)
            C_frag = T.alloc_fragment((bM, bN), accum)
            if layout_arch is not None:
                T.annotate_layout(
                    {
                        E: make_cutlass_metadata_layout(
                            E, mma_dtype=dtype, arch=layout_arch, block_k=bK
                        ),
                        E_shared: make_cutlass_metadata_layout(
                            E_shared, mma_dtype=dtype, arch=layout_arch, block_k=bK
                        ),
                    }
                )
            T.clear(C_frag)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if trans_E:
                    T.copy(E[k * bK // ef, by * bM], E_shared)
                else:
                    T.copy(E[by * bM, k * bK // ef], E_shared)
                if trans_A:
                    T.copy(A_sparse[k * bK // 2, by * bM], A_shared)
                else:
                    T.copy(A_sparse[by * bM, k * bK // 2], A_shared)
                if trans_B:
                    T.copy(B[bx * bN, k * bK], B_shared)
                else:
                    T.copy(B[k * bK, bx * bN], B_shared)
                # TileLang 0.1.15's argument order: transpose_A, transpose_E, transpose_B
                T.gemm_sp(A_shared, E_shared, B_shared, C_frag, trans_A, trans_E, trans_B)
            T.copy(C_frag, C[by * bM, bx * bN])

    return main


def operands(M, N, K, dtype, meta="int16", trans_A=False, trans_B=False, trans_E=False, seed=0):
    """(A_sparse, E, B, reference) of one sparse GEMM: a random 2:4 (1:2) sparse A and a
    random B, exact in `dtype`, compressed and laid out as the transposes ask, and A @ B
    in float64."""
    a = semi_sparse(M, K, dtype, seed=seed)
    rng = np.random.default_rng(seed + 1)
    if dtype in ("int8", "uint8"):
        b = rng.integers(0 if dtype == "uint8" else -4, 5, size=(K, N)).astype(NP[dtype])
    else:
        b = (rng.integers(-8, 9, size=(K, N)) / 4).astype(NP[dtype])
    a_in = np.ascontiguousarray(a.T) if trans_A else a
    a_sparse, e = compress(a_in, transposed=trans_A, meta_dtype=meta)
    if trans_E:
        e = np.ascontiguousarray(e.T)
    b_in = np.ascontiguousarray(b.T) if trans_B else b
    return a_sparse, e, b_in, a.astype(np.float64) @ b.astype(np.float64)


def run(
    target,
    M,
    N,
    K,
    bM,
    bN,
    bK,
    dtype,
    meta,
    trans_A=False,
    trans_B=False,
    accum="float32",
    trans_E=False,
):
    a_sparse, e, b, ref = operands(M, N, K, dtype, meta, trans_A, trans_B, trans_E)
    func = sparse_gemm(
        M, N, K, bM, bN, bK, dtype, meta, trans_A, trans_B, accum=accum, trans_E=trans_E
    )
    kernel = tilelang.compile(func, out_idx=[3], target=target)
    got = np.asarray(kernel(a_sparse, e, b)).astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    return kernel


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("trans", [(False, False), (False, True), (True, False), (True, True)])
def test_gemm_sp_float16_all_transposes(target, trans):
    run(target, 64, 64, 128, 32, 32, 64, "float16", "int16", *trans)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("trans_A", [False, True])
def test_gemm_sp_transposed_metadata(target, trans_A):
    # E stored (K / e_factor, M), as TileLang's tests pass it for a transposed A
    run(target, 64, 64, 128, 32, 32, 64, "float16", "int16", trans_A, trans_E=True)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "dtype,meta,accum",
    [
        ("bfloat16", "uint8", "float32"),  # TileLang's sm_90 metadata (e_factor 8)
        ("int8", "int32", "int32"),
        ("float32", "int16", "float32"),  # 1:2, codes 0b0100 / 0b1110
        ("float8_e4m3", "int32", "float32"),
    ],
)
def test_gemm_sp_dtypes_and_metadata(target, dtype, meta, accum):
    if dtype == "float8_e4m3" and target.startswith("metal"):  # Metal has no float8
        with pytest.raises(tilelang.TileLangError, match="float8_e4m3fn is not supported on Metal"):
            run(target, 64, 32, 128, 64, 32, 64, dtype, meta, False, True, accum=accum)
        return
    run(target, 64, 32, 128, 64, 32, 64, dtype, meta, False, True, accum=accum)


def test_gemm_sp_tails_on_cpu():
    # M, N and K that the tiles do not divide (K still a whole number of metadata words).
    run("cpu", 72, 40, 192, 64, 32, 128, "float16", "int16")


@pytest.mark.skipif("cuda" not in available_targets(), reason="needs NVRTC")
def test_gemm_sp_cuda_source_is_pipelined_and_compiles():
    for trans_A in (False, True):
        func = sparse_gemm(256, 256, 256, 128, 128, 64, "float16", "int16", trans_A)
        source = tilelang.compile(
            func, out_idx=[3], target="cuda -arch=sm_90a", pass_configs={"tl.gemm_sp_wgmma": False}
        ).get_kernel_source()
        # The copies stay async (A's kept values through TMA, or cp.async when
        # transposed; B through cp.async in mma.sync's swizzle), in the prologue and the
        # loop, and the gemm runs on mma.sp (select_gemm_sp.h; wgmma.sp, sm_90a's
        # default, is test_gemm_sp_wgmma.py's).
        # Every E copy is a cp.async (its column k * bK // 16 is known to be a multiple of
        # 4 int16s, so the 8-byte rows stay whole), the loop's as well as the prologue's.
        assert (
            source.count("tl::tma_load")
            + len(re.findall(r"tl::cp_async_gs(?:_conditional)?<16>", source))
            == 4
        )
        assert source.count("tl::tma_load") == (0 if trans_A else 2)
        assert (
            source.count("E[")
            == len(re.findall(r"tl::cp_async_gs(?:_conditional)?<8>", source))
            == 2
        )
        assert "tl::gemm_sp_ss<" in source and "wgmma" not in source


def test_compress_codes_and_round_trip():
    row = np.array([[0, 1.5, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1]], np.float16)
    values, e = compress(row)
    assert values.tolist() == [[1.5, 2, 3, 0, 0, 0, 0, -1]]
    # groups: (1, 3) -> 0b1101, (0, 1) -> 0b0100 (a lone value keeps the next zero),
    # (0, 1) for an empty group, (0, 3) -> 0b1100; little end first in an int16.
    assert e.dtype == np.int16 and e.shape == (1, 1)
    assert int(e[0, 0]) & 0xFFFF == 0b1100_0100_0100_1101
    assert (decompress(values, e) == row).all()
    for dtype, meta in [
        ("bfloat16", "uint8"),
        ("int8", "int32"),
        ("float32", "int16"),
        ("float8_e4m3", "int32"),
    ]:
        a = semi_sparse(32, 128, dtype, seed=3)
        for transposed in (False, True):
            a_in = np.ascontiguousarray(a.T) if transposed else a
            v, e = compress(a_in, transposed=transposed, meta_dtype=meta)
            assert e.shape == (32, 128 // e_factor(dtype, meta)) and str(e.dtype) == meta
            assert v.shape == ((64, 32) if transposed else (32, 64))
            back = decompress(v, e, transposed=transposed)
            assert back.dtype == a_in.dtype
            np.testing.assert_array_equal(back.astype(np.float32), a_in.astype(np.float32))


def test_compress_float32_codes():
    values, e = compress(np.array([[0, 2, 3, 0, 0, 0, 0, 5]], np.float32), meta_dtype="int16")
    assert values.tolist() == [[2, 3, 0, 5]]
    assert int(e[0, 0]) & 0xFFFF == 0b1110_0100_0100_1110


def test_compress_defaults_follow_tilelang():
    a = semi_sparse(16, 64, "float16")
    assert compress(a)[1].dtype == np.int16
    assert compress(a, arch="9.0")[1].dtype == np.uint8
    assert compress(semi_sparse(16, 64, "int8"))[1].dtype == np.int32
    values, e = compress_sm90(a, block_k=64)  # TileLang's older sm_90 entry point
    assert e.dtype == np.uint8 and (decompress(values, e) == a).all()


def test_compress_errors():
    dense = np.ones((4, 16), np.float16)
    with pytest.raises(
        ValueError, match=r"not 2:4 sparse along K: row 0, columns 0-3 hold 4 nonzeros"
    ):
        compress(dense)
    with pytest.raises(ValueError, match=r"K = 8 .* must be a multiple of 16"):
        compress(np.zeros((4, 8), np.float16))
    with pytest.raises(ValueError, match="meta_dtype must be one of"):
        compress(np.zeros((4, 16), np.float16), meta_dtype="float32")
    with pytest.raises(ValueError, match="dtypes float16, bfloat16"):
        compress(np.zeros((4, 16), np.float64))


def errors_kernel(e_cols, e_dtype="int16", a_dtype="float16", **gemm_kwargs):
    @T.prim_func
    def main(
        A: T.Tensor((32, 16), a_dtype),
        E: T.Tensor((32, e_cols), e_dtype),
        B: T.Tensor((32, 32), a_dtype),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((32, 16), a_dtype)
            E_s = T.alloc_shared((32, e_cols), e_dtype)
            B_s = T.alloc_shared((32, 32), a_dtype)
            C = T.alloc_fragment((32, 32), "float32")
            T.gemm_sp(A_s, E_s, B_s, C, **gemm_kwargs)

    return main


def test_gemm_sp_errors_name_the_operand():
    with pytest.raises(
        tilelang.TileLangError, match=r"E 'E_s' must have shape \[32, 2\] .* got \[32, 4\]"
    ):
        errors_kernel(4)
    with pytest.raises(
        tilelang.TileLangError, match=r"E 'E_s' must have an integer dtype .* got float32"
    ):
        errors_kernel(2, "float32")
    with pytest.raises(
        tilelang.TileLangError, match=r"A_sparse 'A_s' must have one of the dtypes .* got float64"
    ):
        errors_kernel(2, a_dtype="float64")
    with pytest.raises(
        tilelang.TileLangError,
        match=r"E 'E_s' must have shape \[2, 32\] .* each, transpose_E\), got \[32, 2\]",
    ):
        errors_kernel(2, transpose_E=True)
    with pytest.raises(
        tilelang.TileLangError, match=r"annotations: expected only 'wg_wait', got \['swizzle'\]"
    ):
        errors_kernel(2, annotations={"swizzle": True})


def test_metadata_layout_backends():
    made = []

    @T.prim_func
    def main(E: T.Tensor((32, 4), "int16")):
        with T.Kernel(1, threads=32):
            made.append(make_metadata_layout(E, mma_dtype="float16", backend="naive"))
            made.append(make_metadata_layout(E, mma_dtype="bfloat16", arch="8.0"))
            made.append(make_cutlass_metadata_layout(E, mma_dtype="bfloat16", arch="8.0"))

    assert main is not None
    naive, cutlass, direct = made
    assert naive.map_forward_index([3, 2]) == [3, 2]
    # CUTLASS's sm_80 order: row 3 of 32 is woven to 12; (12, 2) stays in its 2 x 2
    # block, at flat offset (2 // 2) * 64 + 12 * 2 = 88 = (22, 0) in the (32, 4) buffer;
    # (12, 1) swaps to (13, 0), at 13 * 2 = 26 = (6, 2).
    assert cutlass.map_forward_index([3, 2]) == direct.map_forward_index([3, 2]) == [22, 0]
    assert cutlass.map_forward_index([3, 1]) == [6, 2]
    with pytest.raises(
        tilelang.TileLangError, match="backend must be 'cutlass' or 'naive', got 'other'"
    ):

        @T.prim_func
        def bad(E: T.Tensor((32, 4), "int16")):
            with T.Kernel(1, threads=32):
                make_metadata_layout(E, backend="other")


def test_shared_tile_allocated_inside_a_pipelined_loop():
    """T.alloc_shared inside T.Pipelined is a block-level tile (TileLang's rule): the loop
    still pipelines, and results are right."""

    @T.prim_func
    def main(
        A: T.Tensor((64, 256), "float16"),
        B: T.Tensor((256, 64), "float16"),
        C: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(1, threads=128):
            C_f = T.alloc_fragment((64, 64), "float32")
            T.clear(C_f)
            for k in T.Pipelined(4, num_stages=2):
                A_s = T.alloc_shared((64, 64), "float16")
                B_s = T.alloc_shared((64, 64), "float16")
                T.copy(A[0, k * 64], A_s)
                T.copy(B[k * 64, 0], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C)

    a = (np.random.default_rng(0).integers(-4, 5, (64, 256)) / 4).astype(np.float16)
    b = (np.random.default_rng(1).integers(-4, 5, (256, 64)) / 4).astype(np.float16)
    for target in ("cpu", "cuda -arch=sm_80 -emulate"):
        got = tilelang.compile(main, out_idx=[2], target=target)(a, b)
        np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5)
    if "cuda" in available_targets():
        source = tilelang.compile(main, out_idx=[2], target="cuda -arch=sm_80").get_kernel_source()
        assert "tl::cp_async" in source


def test_gemm_sp_on_slices_of_the_tiles():
    """A_sparse, E and B given as slices: two gemm_sp calls over the two halves of K of
    one staged tile add up to the whole product (E's columns split with A_sparse's)."""

    @T.prim_func
    def main(
        A: T.Tensor((32, 64), "float16"),
        E: T.Tensor((32, 8), "int16"),
        B: T.Tensor((128, 16), "float16"),
        C: T.Tensor((32, 16), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((32, 64), "float16")
            E_s = T.alloc_shared((32, 8), "int16")
            B_s = T.alloc_shared((128, 16), "float16")
            C_f = T.alloc_fragment((32, 16), "float32")
            T.copy(A, A_s)
            T.copy(E, E_s)
            T.copy(B, B_s)
            T.clear(C_f)
            T.gemm_sp(A_s[:, 0:32], E_s[:, 0:4], B_s[0:64, :], C_f)
            T.gemm_sp(A_s[:, 32:64], E_s[:, 4:8], B_s[64:128, :], C_f)
            T.copy(C_f, C)

    a = semi_sparse(32, 128, "float16", seed=5)
    b = (np.random.default_rng(6).integers(-8, 9, (128, 16)) / 4).astype(np.float16)
    a_sparse, e = compress(a)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for target in ("cpu", "cuda -arch=sm_90a -emulate"):
        got = tilelang.compile(main, out_idx=[3], target=target)(a_sparse, e, b)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
