"""tilelang.utils.sparse and CUTLASS's reordered metadata layout (the one torch's
semi-structured tensors keep): metadata_to_cutlass / metadata_from_cutlass and
compress / decompress with metadata_layout="cutlass", checked against torch's own
CUTLASS conversion (torch.sparse._semi_structured_conversions, what
to_sparse_semi_structured runs for CUTLASS; the tensor subclass itself takes CUDA
tensors only), and torch's metadata driving an emulated sm_80 T.gemm_sp."""

import numpy as np
import pytest
import tilelang
from tilelang.utils.sparse import (
    compress,
    decompress,
    metadata_from_cutlass,
    metadata_to_cutlass,
)

torch = pytest.importorskip("torch")
conversions = pytest.importorskip("torch.sparse._semi_structured_conversions")

from test_gemm_sp import semi_sparse, sparse_gemm

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
        ValueError, match=r"a multiple of 32 rows and an even number of columns .* shape \(16, 2\)"
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
