"""Where CUTLASS keeps a sparse gemm's metadata (E of T.gemm_sp), as TileLang 0.1.15's
`make_cutlass_metadata_layout` describes it: a layout maps the logical index (row, column)
of E, whose elements hold the 4-bit codes row-major (tilelang.utils.sparse.compress's
format), to the place the element has in the reordered storage.

- sm_8x (arch 8.0 - 8.9): CUTLASS's sm_80 sparse GEMM order, ColumnMajorInterleaved<2>
  over rows woven in groups of 32 (16-bit metadata) or 16 (32-bit), with 2 x 2 blocks
  transposed. torch's semi-structured tensors keep their metadata this way
  (`to_sparse_semi_structured(A).meta`, torch.sparse._semi_structured_conversions).
- sm_90 (arch 9.0 and later): TileLang's layout of CUTLASS's sm_90 compressor, 8-bit
  metadata in atoms of 64 rows by block_k / 8 columns (block_k at most 128), the atoms
  column-major over the buffer.

The offset functions take Python integers, numpy arrays or index expressions alike, so
the kernel's annotation and tilelang.utils.sparse's host conversions are one definition.
"""

from __future__ import annotations

import warnings

from tilelang.language.buffer import const_int
from tilelang.language.builder_ctx import frontend_error

from .layout import Layout

# Bits of the A operand's element, by the mma_dtype names TileLang accepts.
_MMA_BITS = {
    "float16": 16,
    "bfloat16": 16,
    "float32": 32,
    "int8": 8,
    "uint8": 8,
    "float8_e4m3": 8,
    "float8_e4m3fn": 8,
    "float8_e4m3fnuz": 8,
    "float8_e5m2": 8,
    "float8_e5m2fnuz": 8,
}
_META_BITS = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32}


def _name(dtype):
    return str(dtype).replace("torch.", "")


def mma_bits(mma_dtype, who):
    bits = _MMA_BITS.get(_name(mma_dtype))
    if bits is None:
        raise ValueError(
            f"{who}: mma_dtype must be one of {', '.join(_MMA_BITS)} (A's element type), "
            f"got {mma_dtype!r}"
        )
    return bits


def arch_version(arch, who):
    """(major, minor) of a compute version "8.0" / "9.0" / "sm_90a"; arch None asks the
    default CUDA target or GPU, as TileLang does."""
    from tilelang.contrib import nvcc

    text = arch
    try:
        if arch is None:
            text = nvcc.get_target_compute_version()
        elif str(arch).startswith("sm_"):
            text = nvcc.get_target_compute_version(str(arch))
        version = nvcc.parse_compute_version(text)
    except ValueError as err:
        raise ValueError(
            f"{who}: arch must be a compute version such as '8.0' or '9.0' (the metadata "
            f"layout differs between them), got {arch!r}: {err}"
        ) from None
    if version < (8, 0):
        raise ValueError(f"{who}: arch must be 8.0 or later (sparse tensor cores), got {arch!r}")
    return version


def sm8x_offset(r, c, rows, meta_bits):
    """Flat offset, in CUTLASS's sm_80 order, of element (r, c) of a (rows, cols) metadata
    matrix of meta_bits-wide elements."""
    group, weave = (32, 4) if meta_bits == 16 else (16, 2)
    r = r // group * group + (r % 8) * weave + (r % group) // 8
    # 2 x 2 blocks transposed: (even row, odd column) <-> (odd row, even column).
    swap = (1 - r % 2) * (c % 2) - (r % 2) * (1 - c % 2)
    r, c = r + swap, c - swap
    return (c // 2) * rows * 2 + r * 2 + c % 2


def sm90_offset(r, c, rows, a_bits, block_k):
    """Flat offset, in TileLang's sm_90 CUTLASS layout, of element (r, c) of a (rows,
    cols) uint8 metadata matrix for A of a_bits-wide elements and K tiles of block_k."""
    tiles_r = -(-rows // 64)
    if a_bits == 8:
        atom_cols = block_k // 8
        inner = (r % 64) * atom_cols + c % atom_cols
    else:
        # Rows 64 = 8 x 2 x 4 and columns kb x 2 x steps (kb = bytes of one 16 x 32-byte
        # sparse step's codes per row), strides in the order k0, r1, step, r0, k1, r2.
        kb = 2 if a_bits == 16 else 1
        steps = block_k // (512 // a_bits)
        atom_cols = 2 * kb * steps
        r0, r1, r2 = r % 8, (r // 8) % 2, (r % 64) // 16
        cc = c % atom_cols
        k0, k1, step = cc % kb, (cc // kb) % 2, cc // (2 * kb)
        inner = (
            k0
            + r1 * kb
            + step * 2 * kb
            + r0 * 2 * kb * steps
            + k1 * 16 * kb * steps
            + r2 * 32 * kb * steps
        )
    atom = 64 * atom_cols
    return inner + (r // 64) * atom + (c // atom_cols) * atom * tiles_r


def sm90_block_k(block_k, a_bits, who):
    """block_k as the sm_90 layout uses it: at most 128 (TileLang warns and clamps), a
    multiple of the 512-bit atom along K."""
    value = const_int(block_k) if block_k is not None else None
    if isinstance(block_k, bool) or value is None or value <= 0:
        raise ValueError(
            f"{who}: block_k (the kernel's K tile) is required for arch 9.0 and later, where "
            f"the metadata layout's atom spans it; expected a positive integer, got {block_k!r}"
        )
    if value > 128:
        warnings.warn(
            f"{who}: block_k {value} is larger than the sm_90 metadata atom, 128 is used",
            stacklevel=3,
        )
        value = 128
    step = 512 // a_bits
    if value % step:
        raise ValueError(
            f"{who}: block_k must be a multiple of {step} for {a_bits}-bit A on arch 9.0 and "
            f"later, got {value}"
        )
    return value


def cutlass_offset_fn(shape, meta_dtype, mma_dtype, arch, block_k, who, name="E"):
    """The checked offset function (r, c) -> flat offset of CUTLASS's metadata layout
    for a (rows, cols) buffer, and the arch's major version."""
    version = arch_version(arch, who)
    a_bits = mma_bits(mma_dtype, who)
    meta = _name(meta_dtype)
    e_bits = _META_BITS.get(meta)
    if len(shape) != 2 or None in (const_int(shape[0]), const_int(shape[1])):
        raise ValueError(
            f"{who}: '{name}' must be a 2-D buffer of constant shape, got shape {list(shape)}"
        )
    rows, cols = const_int(shape[0]), const_int(shape[1])
    if version >= (9, 0):
        if e_bits != 8:
            raise ValueError(
                f"{who}: arch {arch or '.'.join(map(str, version))} (sm_90) lays out 8-bit "
                f"metadata (uint8 or int8), got '{name}' of {meta}"
            )
        bk = sm90_block_k(block_k, a_bits, who)
        atom_cols = bk // 8
        if rows % 64 or cols % atom_cols:
            raise ValueError(
                f"{who}: the sm_90 metadata layout ({_name(mma_dtype)}, block_k {bk}) tiles "
                f"'{name}' by 64 rows x {atom_cols} columns; expected a shape that is a whole "
                f"number of tiles, got {[rows, cols]}"
            )
        return (lambda r, c: sm90_offset(r, c, rows, a_bits, bk)), version
    want = 32 if a_bits == 8 else 16
    if e_bits != want:
        raise ValueError(
            f"{who}: arch {arch or '.'.join(map(str, version))} (sm_8x) lays out {want}-bit "
            f"metadata for {_name(mma_dtype)} A (mma_dtype), got '{name}' of {meta}"
        )
    group = 32 if want == 16 else 16
    if rows % group or cols % 2:
        raise ValueError(
            f"{who}: the sm_8x metadata layout of {meta} needs a multiple of {group} rows "
            f"and an even number of columns; got '{name}' of shape {[rows, cols]}"
        )
    return (lambda r, c: sm8x_offset(r, c, rows, want)), version


def make_cutlass_metadata_layout(buffer, mma_dtype="float16", arch=None, **extra_args):
    """TileLang's layout of metadata in CUTLASS's order (see the module's text): annotated
    on E (`T.annotate_layout({E: make_cutlass_metadata_layout(E, ...)})`), the kernel
    reads an E the caller passes in that order, e.g. torch's semi-structured metadata
    (arch "8.0") or compress(..., metadata_layout="cutlass", arch=..., block_k=...).
    arch None takes the default CUDA target's (or GPU 0's); block_k is required from
    arch 9.0 (`block_k=` as TileLang's examples pass it). On E's shared tile the
    annotation changes nothing the kernel computes."""
    from .swizzle import _buffer_info

    who = "make_cutlass_metadata_layout"
    unknown = sorted(set(extra_args) - {"block_k"})
    if unknown:
        raise frontend_error(f"{who}: unexpected arguments {unknown} (expected block_k)")
    shape, dtype = _buffer_info(buffer, who)
    name = getattr(buffer, "name", "E")
    try:
        offset, _ = cutlass_offset_fn(
            shape, dtype, mma_dtype, arch, extra_args.get("block_k"), who, name
        )
    except ValueError as err:
        raise frontend_error(str(err)) from None
    cols = const_int(shape[1])

    def forward(r, c):
        flat = offset(r, c)
        return [flat // cols, flat % cols]

    return Layout(shape, forward)


def make_cutlass_metadata_layout_sm90(buffer, mma_dtype, block_k):
    """make_cutlass_metadata_layout for arch 9.0 (TileLang's per-arch entry point)."""
    return make_cutlass_metadata_layout(buffer, mma_dtype, "9.0", block_k=block_k)


def make_cutlass_metadata_layout_sm8x(buffer, mma_dtype):
    """make_cutlass_metadata_layout for arch 8.0 (TileLang's per-arch entry point)."""
    return make_cutlass_metadata_layout(buffer, mma_dtype, "8.0")
