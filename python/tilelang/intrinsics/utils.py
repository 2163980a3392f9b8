"""Helpers of TileLang's `tilelang.intrinsics.utils`: ldmatrix row offsets, the
accumulator store map and the mma tile sizes per dtype."""

from tilelang.language.dtypes import dtype as _dtype

from .mma_layout import (
    get_swizzle_layout,  # noqa: F401  (re-exported, as in TileLang)
    ldmatrix_32x8_to_shared_16x16_layout,
    ldmatrix_32x16_to_shared_16x32_layout_a,
    ldmatrix_32x16_to_shared_16x32_layout_b,
    ldmatrix_trans_32x8_to_shared_16x16_layout,
    make_mma_swizzle_layout,  # noqa: F401
    mma_store_32x8_to_shared_16x16_layout,
    shared_16x16_to_mma_32x8_layout_sr_a,
    shared_16x32_to_mma_32x16_layout_sr_a,
)


def get_ldmatrix_offset(matrix, row_idx, col_idx, stride, dtype="float16", transposed=False):
    """Offset, in elements from the tile's first element, of the row that lane `row_idx`
    hands to ldmatrix.x4 (element `col_idx` of it), for operand `matrix` ("A" or "B")
    of `dtype` stored with rows of `stride` elements. 16-bit tiles take both
    orientations; 8-bit ones only A (m, k) and B (n, k) (transposed=True), the
    orientations ldmatrix can load without .trans."""
    if matrix not in ("A", "B"):
        raise ValueError(f"get_ldmatrix_offset: matrix must be 'A' or 'B', got {matrix!r}")
    bits = _dtype(dtype).bits
    if bits == 16:
        fn = (
            ldmatrix_trans_32x8_to_shared_16x16_layout
            if transposed
            else ldmatrix_32x8_to_shared_16x16_layout
        )
    elif bits == 8:
        if matrix == "A" and not transposed:
            fn = ldmatrix_32x16_to_shared_16x32_layout_a
        elif matrix == "B" and transposed:
            fn = ldmatrix_32x16_to_shared_16x32_layout_b
        else:
            raise ValueError(
                f"get_ldmatrix_offset: 8-bit operands load with ldmatrix only as A (m, k) or "
                f"B (n, k); got matrix={matrix!r} with transposed={transposed}"
            )
    else:
        raise ValueError(
            f"get_ldmatrix_offset: dtype must be a 16-bit or 8-bit type, got {_dtype(dtype)}"
        )
    row, col = fn(row_idx, col_idx)
    return row * stride + col


def mma_store_index_map(thread_id, local_id):
    """(row, col) in a 16 x 16 accumulator tile of element `local_id` of lane `thread_id`."""
    return mma_store_32x8_to_shared_16x16_layout(thread_id, local_id)


def shared_16x16_to_mma_32x8_layout(i, j):
    return shared_16x16_to_mma_32x8_layout_sr_a(i, j)


def shared_16x32_to_mma_32x16_layout(i, j):
    return shared_16x32_to_mma_32x16_layout_sr_a(i, j)


def get_mma_micro_size(dtype):
    """(micro_size_x, micro_size_y, micro_size_k) of one mma tile for operands of
    `dtype`: 16 x 16 x 16 for 16-bit types, 16 x 16 x 32 for 8-bit ones."""
    k = 32 if _dtype(dtype).bits == 8 else 16
    return 16, 16, k
