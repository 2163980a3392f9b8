"""CUTLASS's reordered metadata storage (the one torch's semi-structured tensors keep, and
TileLang's sm_90 layout): metadata_to_cutlass / metadata_from_cutlass and compress /
decompress with metadata_layout="cutlass", checked against torch's own CUTLASS conversion
(torch.sparse._semi_structured_conversions, what to_sparse_semi_structured runs for
CUTLASS; the tensor subclass itself takes CUDA tensors only); kernels that annotate E with
make_cutlass_metadata_layout, as TileLang's examples do, reading E in that storage on
every target against numpy; the layout's errors."""

import contextlib
import warnings

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.layout import make_cutlass_metadata_layout
from tilelang.layout.gemm_sp import (
    make_cutlass_metadata_layout_sm8x,
    make_cutlass_metadata_layout_sm90,
)
from tilelang.utils.sparse import (
    compress,
    decompress,
    metadata_from_cutlass,
    metadata_to_cutlass,
)

torch = pytest.importorskip("torch")
conversions = pytest.importorskip("torch.sparse._semi_structured_conversions")

from test_gemm_sp import NP, semi_sparse, sparse_gemm

TORCH = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "int8": torch.int8,
}


def dense(rows, K, dtype, seed):
    """A torch (rows, K) matrix with exactly the kept count of nonzeros per group."""
    a = semi_sparse(rows, K, dtype, seed=seed)
    return torch.from_numpy(a.astype(np.float32)).to(TORCH[dtype])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int8"])
def test_compress_cutlass_layout_matches_torch(dtype):
    a = dense(64, 128, dtype, seed=1)
    values, meta = conversions.sparse_semi_structured_from_dense_cutlass(a)
    ours_values, ours_meta = compress(a, metadata_layout="cutlass")
    assert ours_meta.dtype == meta.dtype and ours_meta.shape == meta.shape
    assert torch.equal(ours_values, values)
    assert torch.equal(ours_meta, meta)
    # Both ways: torch's metadata read back here, ours read back by torch.
    assert torch.equal(decompress(values, meta, metadata_layout="cutlass"), a)
    row_major = compress(a)[1]
    assert torch.equal(metadata_from_cutlass(meta), row_major)
    back = conversions.sparse_semi_structured_to_dense_cutlass(
        values, metadata_to_cutlass(row_major)
    )
    assert torch.equal(back, a)


@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_groups_with_fewer_nonzeros_keep_the_zeros_torch_keeps(dtype):
    """Every mask of a 4-group with at most 2 nonzeros (a value that rounds to 0 in a
    random matrix makes one): CUTLASS keeps fixed zero positions, and compress with the
    cutlass layout keeps the same ones, so values and metadata equal torch's."""
    masks = [m for m in range(16) if bin(m).count("1") <= 2]
    rng = np.random.default_rng(7)
    a = np.zeros((64, 128), np.float32)
    for r in range(64):
        for g in range(32):
            m = masks[(r + g) % len(masks)]
            for j in range(4):
                if m >> j & 1:
                    a[r, 4 * g + j] = rng.integers(1, 5) * (1 if rng.random() < 0.5 else -1)
    t = torch.from_numpy(a).to(TORCH[dtype])
    values, meta = conversions.sparse_semi_structured_from_dense_cutlass(t)
    ours_values, ours_meta = compress(t, metadata_layout="cutlass")
    assert torch.equal(ours_values, values) and torch.equal(ours_meta, meta)
    np_values, np_meta = compress(t.numpy(), metadata_layout="cutlass")
    assert np.array_equal(np_values, values.numpy()) and np.array_equal(np_meta, meta.numpy())
    assert torch.equal(decompress(ours_values, ours_meta, metadata_layout="cutlass"), t)
    assert torch.equal(decompress(*compress(t)), t)  # the row-major layout's choice reads back too


@pytest.mark.parametrize("meta_dtype", [np.int16, np.int32])
def test_conversions_are_inverse_permutations(meta_dtype):
    rng = np.random.default_rng(3)
    info = np.iinfo(meta_dtype)
    e = rng.integers(info.min, info.max, size=(64, 6), dtype=np.int64).astype(meta_dtype)
    reordered = metadata_to_cutlass(e)
    assert reordered.dtype == e.dtype and reordered.shape == e.shape
    assert not np.array_equal(reordered, e)  # the layout moves elements
    assert sorted(reordered.reshape(-1).tolist()) == sorted(e.reshape(-1).tolist())
    np.testing.assert_array_equal(metadata_from_cutlass(reordered), e)
    np.testing.assert_array_equal(metadata_to_cutlass(metadata_from_cutlass(e)), e)
    t = torch.from_numpy(e)
    assert torch.equal(metadata_to_cutlass(t), torch.from_numpy(reordered))
    assert torch.equal(metadata_from_cutlass(torch.from_numpy(reordered)), t)


def test_conversion_errors():
    with pytest.raises(ValueError, match=r"16-bit .* or 32-bit .* elements, got uint8"):
        metadata_to_cutlass(np.zeros((32, 2), np.uint8))
    with pytest.raises(
        ValueError,
        match=r"a multiple of 32 rows and an even number of columns; got 'E' of shape \[16, 2\]",
    ):
        metadata_from_cutlass(np.zeros((16, 2), np.int16))
    with pytest.raises(
        ValueError, match=r"metadata_layout must be 'row_major' or 'cutlass', got 'torch'"
    ):
        compress(np.zeros((32, 32), np.float16), metadata_layout="torch")


def test_torch_metadata_drives_the_sparse_tensor_cores():
    """A sparse A as torch's CUTLASS conversion stores it, its metadata brought to the
    row-major layout, multiplied by T.gemm_sp on the emulated mma.sp path."""
    M, N, K = 64, 64, 128
    a = dense(M, K, "float16", seed=8)
    values, meta = conversions.sparse_semi_structured_from_dense_cutlass(a)
    b = (np.random.default_rng(9).integers(-8, 9, size=(K, N)) / 4).astype(np.float16)
    func = sparse_gemm(M, N, K, 64, 64, 64, "float16", "int16")
    kernel = tilelang.compile(func, out_idx=[3], target="cuda -arch=sm_80 -emulate")
    assert "tl::gemm_sp_ss<" in kernel.get_kernel_source()
    got = np.asarray(kernel(values.numpy(), metadata_from_cutlass(meta).numpy(), b))
    ref = a.numpy().astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


SM90A = "cuda -arch=sm_90a -emulate"
# (target, pass configs): every path a T.gemm_sp takes: the decoded tile (cpu, Metal),
# mma.sp (sm_80, and sm_90a under tl.gemm_sp_wgmma=False) and wgmma.sp (sm_90a's default).
MMA_SP_ONLY = {"tl.gemm_sp_wgmma": False}
PATHS = [
    ("cpu", {}),
    ("cuda -arch=sm_80 -emulate", {}),
    (SM90A, MMA_SP_ONLY),
    (SM90A, {}),
    ("metal -emulate", {}),
]


def _b(K, N, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return rng.integers(-4, 5, size=(K, N)).astype(np.int8)
    return (rng.integers(-8, 9, size=(K, N)) / 4).astype(NP[dtype])


def _run_layouts(target, configs, dtype, meta, layout, trans_A=False):
    """C of a 128 x 64 x 256 sparse gemm (tiles 64 x 64 x 64) whose E comes in `layout`:
    "row_major" (no annotation), "torch" (torch's CUTLASS conversion, annotated for arch
    8.0) or "sm90" (compress's sm_90 layout, annotated for arch 9.0), against numpy."""
    M, N, K, bK = 128, 64, 256, 64
    accum = "int32" if dtype == "int8" else "float32"
    a = semi_sparse(M, K, dtype, seed=21)
    b = _b(K, N, dtype, seed=22)
    if layout == "torch":
        values, e = conversions.sparse_semi_structured_from_dense_cutlass(
            torch.from_numpy(a.astype(np.float32)).to(TORCH[dtype])
        )
        values, e = values.float().numpy().astype(NP[dtype]), e.numpy()
        arch = "8.0"
    elif layout == "sm90":
        values, e = compress(a, arch="9.0", block_k=bK, metadata_layout="cutlass")
        arch = "9.0"
    else:
        values, e = compress(a, meta_dtype=meta)
        arch = None
    assert str(e.dtype) == meta
    if trans_A:
        values = np.ascontiguousarray(values.T)
    func = sparse_gemm(
        M, N, K, 64, 64, bK, dtype, meta, trans_A=trans_A, accum=accum, layout_arch=arch
    )
    kernel = tilelang.compile(func, out_idx=[3], target=target, pass_configs=configs)
    got = np.asarray(kernel(values, e, b)).astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    return kernel


@pytest.mark.parametrize("target,configs", PATHS)
@pytest.mark.parametrize(
    "dtype,meta,layout",
    [
        ("float16", "int16", "row_major"),
        ("float16", "int16", "torch"),
        ("bfloat16", "uint8", "sm90"),
    ],
)
def test_annotated_metadata_layouts_end_to_end(target, configs, dtype, meta, layout):
    kernel = _run_layouts(target, configs, dtype, meta, layout)
    if target == SM90A and not configs:  # the annotated E keeps the sparse warpgroup MMA
        assert "tl::wgmma_gemm_sp_ss<" in kernel.get_kernel_source()
    elif target != "cpu" and not target.startswith("metal"):
        assert "tl::gemm_sp_ss<" in kernel.get_kernel_source()


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate", SM90A])
def test_torch_metadata_through_the_annotation_more_forms(target):
    # int8 (int32 metadata, mma.sp m16n8k64) and a transposed A's kept values.
    _run_layouts(target, {}, "int8", "int32", "torch")
    _run_layouts(target, {}, "float16", "int16", "torch", trans_A=True)


@pytest.mark.parametrize(
    "mma_dtype,meta,arch,block_k",
    [
        ("float16", "int16", "8.0", None),
        ("int8", "int32", "8.9", None),
        ("float16", "uint8", "9.0", 64),
        ("float32", "uint8", "9.0", 32),
        ("int8", "uint8", "9.0", 256),  # clamped to 128, as TileLang does
    ],
)
def test_layout_and_host_conversion_agree(mma_dtype, meta, arch, block_k):
    """The annotation's map of every element is the place metadata_to_cutlass puts it,
    and it is a permutation of the buffer."""
    rows, cols = 128, 32
    made = []
    kwargs = {} if block_k is None else {"block_k": block_k}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the clamp's warning, checked below

        @T.prim_func
        def main(E: T.Tensor((rows, cols), meta)):
            with T.Kernel(1, threads=32):
                made.append(
                    make_cutlass_metadata_layout(E, mma_dtype=mma_dtype, arch=arch, **kwargs)
                )
                if arch == "9.0":  # TileLang's per-arch entry points give the same map
                    made.append(make_cutlass_metadata_layout_sm90(E, mma_dtype, block_k))
                else:
                    made.append(make_cutlass_metadata_layout_sm8x(E, mma_dtype))

    assert main is not None
    assert made[0].map_forward_index([5, 3]) == made[1].map_forward_index([5, 3])
    info = np.iinfo(meta)
    e = np.random.default_rng(4).integers(info.min, info.max, size=(rows, cols), dtype=np.int64)
    e = e.astype(meta)
    clamped = block_k is not None and block_k > 128
    with (
        pytest.warns(UserWarning, match="block_k 256 is larger .* 128 is used")
        if clamped
        else (contextlib.nullcontext())
    ):
        stored = metadata_to_cutlass(e, arch, mma_dtype, block_k)
        back = metadata_from_cutlass(stored, arch, mma_dtype, block_k)
    layout = made[0]
    for r in range(rows):
        for c in range(cols):
            pr, pc = layout.map_forward_index([r, c])
            assert stored[pr, pc] == e[r, c]
    assert sorted(stored.reshape(-1).tolist()) == sorted(e.reshape(-1).tolist())
    np.testing.assert_array_equal(back, e)


def test_compress_sm90_layout_round_trip():
    a = semi_sparse(64, 256, "float16", seed=5)
    values, e = compress(a, arch="9.0", block_k=128, metadata_layout="cutlass")
    assert e.dtype == np.uint8 and e.shape == (64, 32)
    assert not np.array_equal(e, compress(a, arch="9.0")[1])
    np.testing.assert_array_equal(
        decompress(values, e, metadata_layout="cutlass", arch="9.0", block_k=128), a
    )
    t = torch.from_numpy(a)
    tv, te = compress(t, arch="9.0", block_k=128, metadata_layout="cutlass")
    assert torch.equal(te, torch.from_numpy(e)) and torch.equal(tv, torch.from_numpy(values))


def _layout_error(shape, meta, match, **kwargs):
    with pytest.raises(tilelang.TileLangError, match=match):

        @T.prim_func
        def main(E: T.Tensor(shape, meta)):
            with T.Kernel(1, threads=32):
                T.annotate_layout({E: make_cutlass_metadata_layout(E, **kwargs)})


def test_layout_errors_name_argument_expected_and_given():
    _layout_error(
        (32, 4),
        "uint8",
        r"arch 8.0 \(sm_8x\) lays out 16-bit metadata for float16 A \(mma_dtype\), got 'E' "
        r"of uint8",
        mma_dtype="float16",
        arch="8.0",
    )
    _layout_error(
        (32, 4),
        "int16",
        r"arch 8.0 \(sm_8x\) lays out 32-bit metadata for int8 A .* got 'E' of int16",
        mma_dtype="int8",
        arch="8.0",
    )
    _layout_error(
        (64, 8),
        "int16",
        r"arch 9.0 \(sm_90\) lays out 8-bit metadata \(uint8 or int8\), got 'E' of int16",
        mma_dtype="float16",
        arch="9.0",
        block_k=64,
    )
    _layout_error(
        (64, 8),
        "uint8",
        r"block_k \(the kernel's K tile\) is required for arch 9.0 .* got None",
        mma_dtype="float16",
        arch="9.0",
    )
    _layout_error(
        (64, 8),
        "uint8",
        r"block_k must be a multiple of 32 for 16-bit A on arch 9.0 and later, got 48",
        mma_dtype="float16",
        arch="9.0",
        block_k=48,
    )
    _layout_error(
        (48, 8),
        "uint8",
        r"tiles 'E' by 64 rows x 8 columns; expected a shape that is a whole number of tiles, "
        r"got \[48, 8\]",
        mma_dtype="float16",
        arch="9.0",
        block_k=64,
    )
    _layout_error(
        (40, 4),
        "int16",
        r"needs a multiple of 32 rows and an even number of columns; got 'E' of shape \[40, 4\]",
        arch="8.0",
    )
    _layout_error((32, 4), "int16", r"arch must be 8.0 or later .* got '7.5'", arch="7.5")
    _layout_error(
        (32, 4), "int16", r"arch must be a compute version .* got 'ampere'", arch="ampere"
    )
    _layout_error(
        (32, 4),
        "int16",
        r"mma_dtype must be one of float16, .* got 'float64'",
        mma_dtype="float64",
        arch="8.0",
    )
    _layout_error(
        (32, 4),
        "int16",
        r"unexpected arguments \['block_m'\] \(expected block_k\)",
        arch="8.0",
        block_m=64,
    )
    with pytest.raises(
        ValueError, match=r"mma_dtype \(A's element type\) is required for arch 9.0"
    ):
        metadata_to_cutlass(np.zeros((64, 8), np.uint8), arch="9.0", block_k=64)


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_kernel_writing_through_the_annotation_makes_torchs_metadata(target):
    """A kernel that stores row-major metadata into an annotated E (as TileLang's custom
    compressor example does) leaves torch's reordered metadata in memory."""
    M, K = 64, 256
    a = dense(M, K, "bfloat16", seed=12)
    _, meta = conversions.sparse_semi_structured_from_dense_cutlass(a)
    row_major = compress(a)[1].numpy()

    @T.prim_func
    def reorder(E_in: T.Tensor((M, K // 16), "int16"), E_out: T.Tensor((M, K // 16), "int16")):
        with T.Kernel(1, threads=128):
            T.annotate_layout(
                {E_out: make_cutlass_metadata_layout(E_out, mma_dtype="bfloat16", arch="8.0")}
            )
            T.copy(E_in, E_out)

    got = np.asarray(tilelang.compile(reorder, out_idx=[1], target=target)(row_major))
    np.testing.assert_array_equal(got, meta.numpy())


def test_arch_none_follows_the_default_target(monkeypatch):
    """arch=None takes the default CUDA target's compute version, as TileLang does (its
    examples that omit arch); without one it is an error naming arch."""
    from tilelang.contrib import nvcc

    def no_gpu(target=None):
        raise ValueError("no target given and no CUDA GPU to ask")

    monkeypatch.setattr(nvcc, "get_target_compute_version", no_gpu)
    _layout_error(
        (32, 4),
        "int16",
        r"arch must be a compute version such as '8.0' or '9.0' .* got None: no target given",
        mma_dtype="float16",
    )
    monkeypatch.setattr(nvcc, "get_target_compute_version", lambda target=None: "9.0")
    _layout_error(
        (64, 8),
        "uint8",
        r"block_k \(the kernel's K tile\) is required for arch 9.0",
        mma_dtype="float16",
    )
    made = []

    @T.prim_func
    def main(E: T.Tensor((64, 8), "uint8")):
        with T.Kernel(1, threads=32):
            made.append(make_cutlass_metadata_layout(E, mma_dtype="float16", block_k=64))
            made.append(
                make_cutlass_metadata_layout(E, mma_dtype="float16", arch="9.0", block_k=64)
            )

    assert main is not None
    assert all(
        made[0].map_forward_index([r, 5]) == made[1].map_forward_index([r, 5]) for r in range(64)
    )
