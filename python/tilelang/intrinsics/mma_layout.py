"""Index maps of the mma.sync m16n8k16 / m16n8k32 fragments and of ldmatrix, and the
XOR swizzle of shared tiles that TileLang's MMA-intrinsic kernels annotate.

Every map works on Python ints and on kernel expressions alike (it only uses `+`,
`*`, `//`, `%` and `^`). Names follow TileLang's `tilelang.intrinsics.mma_layout`:

- `ldmatrix_*(thread_id, local_id)`: the (row, col) of the 16 x 16 (16-bit) or
  16 x 32 (8-bit) shared tile whose row address lane `thread_id` hands to ldmatrix.x4;
- `mma_store_32x8_to_shared_16x16_layout(thread_id, local_id)`: the (row, col) of the
  16 x 16 accumulator tile held in register `local_id` (0..7) of lane `thread_id`
  (two m16n8 C fragments side by side);
- `shared_16x16_to_mma_32x8_layout_sr_{a,b}(i, j)` and the 16 x 32 ones: which
  (lane, register element) holds element (i, j) of an A tile indexed (m, k) or a B
  tile indexed (n, k) ("sr": spatial axis first, reduction axis second);
- `mma_load_{a,b}_32x16_to_shared_16x32_layout(thread_id, local_id)`: the way back,
  (m, k) for A and (n, k) for B.

A lane's registers follow the PTX ISA ("Matrix Fragments for mma.m16n8k16 / k32"):
with g = lane // 4 and t = lane % 4 and P elements per 32-bit register (2 for 16-bit
types, 4 for 8-bit), A register r holds row g + 8 * (r % 2), columns
P * t + 4 * P * (r // 2) + {0 .. P-1}; B register r holds column (n) g and rows (k)
P * t + 4 * P * r + {0 .. P-1}; C element e holds row g + 8 * (e // 2), column
2 * t + e % 2. Sixteen columns of B (or C) are two such n8 fragments, the second
after the first in the lane's registers.
"""

from tilelang.language.dtypes import dtype as _dtype

# ---------------------------------------------------------------------------
# ldmatrix.x4 row addresses: lanes 8q .. 8q + 7 address the eight rows of matrix q.


def ldmatrix_32x8_to_shared_16x16_layout(thread_id, local_id):
    """Plain ldmatrix of a 16 x 16 tile stored with the fragment's rows along its rows:
    matrices (rows 0-7, cols 0-7), (rows 8-15, cols 0-7), (rows 0-7, cols 8-15),
    (rows 8-15, cols 8-15)."""
    return thread_id % 16, (thread_id // 16) * 8 + local_id % 8


def ldmatrix_trans_32x8_to_shared_16x16_layout(thread_id, local_id):
    """ldmatrix.trans of a 16 x 16 tile stored the other way round: matrices
    (rows 0-7, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15, cols 0-7), (rows 8-15,
    cols 8-15)."""
    return (thread_id // 16) * 8 + thread_id % 8, ((thread_id % 16) // 8) * 8 + local_id % 8


def ldmatrix_32x16_to_shared_16x32_layout_a(thread_id, local_id):
    """Plain ldmatrix of a 16 x 32 8-bit A tile (m, k): 16-byte rows of 16 elements."""
    return thread_id % 16, (thread_id // 16) * 16 + local_id % 16


def ldmatrix_32x16_to_shared_16x32_layout_b(thread_id, local_id):
    """Plain ldmatrix of a 16 x 32 8-bit B tile stored (n, k)."""
    return (thread_id // 16) * 8 + thread_id % 8, ((thread_id % 16) // 8) * 16 + local_id % 16


# TileLang's older names for the two 8-bit maps.
ldmatrix_16x32_to_shared_16x32_layout_a = ldmatrix_32x16_to_shared_16x32_layout_a
ldmatrix_16x32_to_shared_16x32_layout_b = ldmatrix_32x16_to_shared_16x32_layout_b

# ---------------------------------------------------------------------------
# Accumulators: a 16 x 16 tile as two m16n8 C fragments, 8 elements per lane.


def mma_store_32x8_to_shared_16x16_layout(thread_id, local_id):
    row = (thread_id // 4) + 8 * ((local_id % 4) // 2)
    col = 2 * (thread_id % 4) + local_id % 2 + 8 * (local_id // 4)
    return row, col


mma_32x8_to_shared_16x16_layout = mma_store_32x8_to_shared_16x16_layout

# ---------------------------------------------------------------------------
# Operand fragments, element (i, j) -> (lane, element of the lane's registers).


def _operand_slot(i, j, per_reg, is_b):
    """Lane and element index of element (i, j) of an A tile (m, k) or a B tile (n, k)
    with `per_reg` elements per register; B spans two n8 fragments."""
    half_k = 4 * per_reg
    lane = (i % 8) * 4 + (j % half_k) // per_reg
    if is_b:  # n8 fragment i // 8, register j // half_k
        local = (i // 8) * (2 * per_reg) + (j // half_k) * per_reg + j % per_reg
    else:  # register (i // 8) + 2 * (j // half_k)
        local = (i // 8) * per_reg + (j // half_k) * (2 * per_reg) + j % per_reg
    return lane, local


def shared_16x16_to_mma_32x8_layout_sr_a(i, j):
    return _operand_slot(i, j, 2, False)


def shared_16x16_to_mma_32x8_layout_sr_b(i, j):
    return _operand_slot(i, j, 2, True)


def shared_16x16_to_mma_32x8_layout_rs_a(i, j):
    return _operand_slot(j, i, 2, False)


def shared_16x16_to_mma_32x8_layout_rs_b(i, j):
    return _operand_slot(j, i, 2, True)


def shared_16x32_to_mma_32x16_layout_sr_a(i, j):
    return _operand_slot(i, j, 4, False)


def shared_16x32_to_mma_32x16_layout_sr_b(i, j):
    return _operand_slot(i, j, 4, True)


def shared_16x32_to_mma_32x16_layout_rs_a(i, j):
    return _operand_slot(j, i, 4, False)


def shared_16x32_to_mma_32x16_layout_rs_b(i, j):
    return _operand_slot(j, i, 4, True)


# Older TileLang names: the A maps.
shared_16x16_to_mma_32x8_layout = shared_16x16_to_mma_32x8_layout_sr_a
shared_16x16_to_mma_32x8_layout_sr = shared_16x16_to_mma_32x8_layout_sr_a
shared_16x16_to_mma_32x8_layout_rs = shared_16x16_to_mma_32x8_layout_rs_a
shared_16x16_to_mma_32x8_layout_trans = shared_16x16_to_mma_32x8_layout_rs_a
shared_16x32_to_mma_32x16_layout = shared_16x32_to_mma_32x16_layout_sr_a


def _operand_element(thread_id, local_id, per_reg, is_b):
    """(spatial, reduction) index of element `local_id` of lane `thread_id`."""
    g, t = thread_id // 4, thread_id % 4
    half_k = 4 * per_reg
    reg, part = local_id // per_reg, local_id % per_reg
    if is_b:  # two n8 fragments of two registers each
        return g + 8 * (reg // 2), per_reg * t + half_k * (reg % 2) + part
    return g + 8 * (reg % 2), per_reg * t + half_k * (reg // 2) + part


def mma_load_a_32x8_to_shared_16x16_layout(thread_id, local_id):
    return _operand_element(thread_id, local_id, 2, False)


def mma_load_b_32x8_to_shared_16x16_layout(thread_id, local_id):
    return _operand_element(thread_id, local_id, 2, True)


def mma_load_a_32x16_to_shared_16x32_layout(thread_id, local_id):
    return _operand_element(thread_id, local_id, 4, False)


def mma_load_b_32x16_to_shared_16x32_layout(thread_id, local_id):
    return _operand_element(thread_id, local_id, 4, True)


# ---------------------------------------------------------------------------
# Shared-memory swizzle.


def get_swizzle_layout(row_idx, col_idx, row_size, dtype, swizzle_bytes=None):
    """(row, swizzled column) of element (row_idx, col_idx) of a shared tile whose rows
    hold `row_size` elements of `dtype`: the 16-byte chunk index of the column is
    XORed with (row // (128 / swizzle_bytes)) modulo swizzle_bytes / 16 (swizzle_bytes
    defaults to the row's bytes, at most 128; TMA's swizzle modes for rows that long),
    so that the eight rows one ldmatrix reads fall in different banks. Rows must be a
    multiple of 32 bytes."""
    bits = _dtype(dtype).bits
    row_size_int = row_size if isinstance(row_size, int) else int(row_size)
    row_bytes = row_size_int * bits // 8
    if row_bytes % 32 != 0:
        raise ValueError(
            f"get_swizzle_layout: row_size * dtype bytes must be a multiple of 32 bytes; got "
            f"{row_size_int} elements of {_dtype(dtype)} ({row_bytes} bytes)"
        )
    if swizzle_bytes is None:
        swizzle_bytes = min(128, row_bytes)
    if swizzle_bytes not in (32, 64, 128):
        raise ValueError(
            f"get_swizzle_layout: swizzle_bytes must be 32, 64 or 128; got {swizzle_bytes}"
        )
    per_chunk = 128 // bits  # elements per 16 bytes
    chunk = (col_idx // per_chunk) ^ ((row_idx // (128 // swizzle_bytes)) % (swizzle_bytes // 16))
    return row_idx, chunk * per_chunk + col_idx % per_chunk


def make_mma_swizzle_layout(shared_buf, is_smooth=False):
    """A T.Layout for a shared tile read by the MMA emitter: the XOR swizzle of
    get_swizzle_layout on its last two dimensions when a row is a multiple of 64
    bytes, else (or with is_smooth=True) the identity."""
    import tilelang.language as T

    shape = list(shared_buf.shape)
    bits = _dtype(shared_buf.dtype).bits
    last = shape[-1] if isinstance(shape[-1], int) else None
    if is_smooth or last is None or (last * bits) % 512 != 0:
        return T.Layout(shape, lambda *idx: list(idx))

    def swizzled(*idx):
        row, col = get_swizzle_layout(idx[-2], idx[-1], last, shared_buf.dtype)
        return [*idx[:-2], row, col]

    return T.Layout(shape, swizzled)
