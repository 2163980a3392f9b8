"""`T.gemm_sp`: C += op(A) @ op(B) where A is a 2:4 structured-sparse tile given as its
kept values and metadata (tilelang.utils.sparse.compress makes both).

The format (docs/guide/language.md, "Sparse GEMM"): A (M, K) keeps `elem` of every `group`
consecutive elements along K (2 of 4; 1 of 2 for float32). A_sparse (M, K * elem /
group) holds them in order; E (M, K / e_factor), an integer tile, holds one 4-bit code
per group, little end first within each element (e_factor = E's bits / 4 * group). For
2:4 a code's bits 0-1 are the position (0-3) of the first kept value in its group and
bits 2-3 that of the second; for 1:2 the code is 0b0100 (position 0) or 0b1110
(position 1), as the tensor cores read them. Equal positions (which compress never
writes) keep the first value.

E annotated with tilelang.layout.make_cutlass_metadata_layout is stored in CUTLASS's
reordered order (torch's semi-structured metadata for arch 8.x): the annotation maps
each logical element above to its place there, and every read of E goes through it.

On CUDA sm_80 and later (not when the kernel's gemms take wgmma) a gemm that fits
mma.sp m16n8k32 (float16 / bfloat16 into float32, tiles in shared memory; the rule is
src/transform/select_gemm_sp.h's) runs on the sparse tensor cores from the kept values
and the metadata (tl::gemm_sp_ss, device/cuda/gemm_sp_sm80.cuh). Everywhere else the
op decodes the tile into a dense one of A's shape and dtype in shared memory and runs
`T.gemm` on it, with the dense tensor-core path of the target; the choice is logged at
debug level. wgmma.sp (sm_90a) is not used yet."""

from __future__ import annotations

from typing import Any

from tilelang.types import BufferLike

from . import builder_ctx, ops
from .buffer import Buffer, Region, const_int, to_value
from .builder_ctx import frontend_error
from .math import cast, if_then_else

# Kept values per group and group size, by A's element type.
_SPARSITY = {
    "float16": (2, 4),
    "bfloat16": (2, 4),
    "int8": (2, 4),
    "uint8": (2, 4),
    "float8_e4m3": (2, 4),
    "float8_e5m2": (2, 4),
    "float32": (1, 2),
}
# The metadata's integer types and their widths.
META_BITS = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32}


def sparsity_of(dtype, what="A"):
    """(kept, group) for A's element type, or a clear error."""
    key = str(dtype)
    if key.startswith("float8_e4m3"):
        key = "float8_e4m3"
    if key.startswith("float8_e5m2"):
        key = "float8_e5m2"
    if key not in _SPARSITY:
        raise ValueError(
            f"{what} must have one of the dtypes {', '.join(_SPARSITY)} for a 2:4 (1:2 for "
            f"float32) sparse gemm, got {dtype}"
        )
    return _SPARSITY[key]


def e_factor(a_dtype, meta_dtype):
    """How many elements of dense A (along K) one metadata element describes."""
    _, group = sparsity_of(a_dtype)
    bits = META_BITS.get(str(meta_dtype))
    if bits is None:
        raise ValueError(
            f"metadata must have one of the dtypes {', '.join(META_BITS)}, got {meta_dtype}"
        )
    return bits // 4 * group


def _tile(x, what):
    """(buffer, mins, extents) of a 2-D buffer or slice with constant extents."""
    x = to_value(x)
    if isinstance(x, Buffer):
        x = x.full_region()
    if not isinstance(x, Region):
        raise frontend_error(
            f"T.gemm_sp {what} must be a buffer or a slice of one, got {type(x).__name__} {x!r}"
        )
    if len(x.extents) != 2:
        raise frontend_error(
            f"T.gemm_sp {what} '{x.buffer.name}' must be 2-D, got shape {list(x.extents)}"
        )
    extents = [const_int(to_value(e)) for e in x.extents]
    if None in extents:
        raise frontend_error(
            f"T.gemm_sp {what} '{x.buffer.name}' must have a constant shape, got {list(x.extents)}"
        )
    return x.buffer, list(x.mins), extents


def gemm_sp(
    A_sparse: BufferLike,
    E: BufferLike,
    B: BufferLike,
    C: BufferLike,
    transpose_A: bool = False,
    transpose_E: bool = False,
    transpose_B: bool = False,
    policy: Any = ops.GemmWarpPolicy.Square,
    clear_accum: bool = False,
    annotations: dict[str, Any] | None = None,
    k_pack: int = 1,
    wg_wait: int = 0,
) -> Any:
    """C += op(A) @ op(B), A given by its kept values `A_sparse` ((M, K/2), or (K/2, M)
    with transpose_A) and metadata `E` ((M, K / e_factor), or (K / e_factor, M) with
    transpose_E); see the module's text. The arguments are in TileLang 0.1.15's order;
    `annotations` may carry "wg_wait" (its other lowering knob), as the keyword does."""
    name = "T.gemm_sp"
    builder_ctx.current(name)
    annotations = dict(annotations or {})
    unknown = sorted(set(annotations) - {"wg_wait"})
    if unknown:
        raise frontend_error(f"{name} annotations: expected only 'wg_wait', got {unknown}")
    wg_wait = annotations.get("wg_wait", wg_wait)
    a, a_at, a_ext = _tile(A_sparse, "A_sparse")
    e, e_at, e_ext = _tile(E, "E")
    try:
        kept, group = sparsity_of(a.dtype, f"{name} A_sparse '{a.name}'")
    except ValueError as err:
        raise frontend_error(str(err)) from None
    if str(e.dtype) not in META_BITS:
        raise frontend_error(
            f"{name} E '{e.name}' must have an integer dtype of 8, 16 or 32 bits "
            f"({', '.join(META_BITS)}), got {e.dtype}"
        )
    factor = e_factor(a.dtype, e.dtype)
    M, k_kept = (a_ext[1], a_ext[0]) if transpose_A else a_ext
    if k_kept % kept:
        raise frontend_error(
            f"{name} A_sparse '{a.name}' keeps {kept} of every {group} elements along K, so its "
            f"K extent must be a multiple of {kept}; got shape {a_ext}"
        )
    K = k_kept // kept * group
    want_e = [K // factor, M] if transpose_E else [M, K // factor]
    if K % factor or e_ext != want_e:
        raise frontend_error(
            f"{name} E '{e.name}' must have shape {want_e} for A_sparse '{a.name}' of shape "
            f"{a_ext} (M = {M}, K = {K}, {e.dtype} metadata describes {factor} elements of K "
            f"each{', transpose_E' if transpose_E else ''}), got {e_ext}"
        )
    # The decoded tile, in shared memory: one parallel iteration per group of K (its
    # code read once), the group's elements written by an unrolled loop, each a select
    # (no arithmetic, so no conversions). (Decoding straight into the gemm's register
    # operand measured slower on the H200: each thread holds half of each group, so
    # every element re-reads and re-shifts its code.)
    dense_shape = [K, M] if transpose_A else [M, K]
    dense = ops.alloc_shared(dense_shape, a.dtype)
    builder = builder_ctx.current(name).builder
    groups = K // group
    outer = [groups, M] if transpose_A else [M, groups]
    x, y = [builder.begin_for(f"sp{d}", 0, n, "parallel", {}) for d, n in enumerate(outer)]
    m, g = (y, x) if transpose_A else (x, y)
    codes_per_word = factor // group
    e_row, e_col = (g // codes_per_word, m) if transpose_E else (m, g // codes_per_word)
    word = cast(e[e_at[0] + e_row, e_at[1] + e_col], "int32")
    code = builder.let("sp_code", (word >> ((g % codes_per_word) * 4)) & 15)
    zero = cast(0, a.dtype)

    def kept_value(slot):
        at = (g * kept + slot, m) if transpose_A else (m, g * kept + slot)
        return a[a_at[0] + at[0], a_at[1] + at[1]]

    pos = builder.begin_for("sp_p", 0, group, "unroll", {})
    if kept == 2:  # equal positions (never made by compress) keep the first value
        value = if_then_else(
            (code & 3) == pos,
            kept_value(0),
            if_then_else(((code >> 2) & 3) == pos, kept_value(1), zero),
        )
    else:  # 1:2: the code names a pair of 16-bit halves, position = first half / 2
        value = if_then_else(((code & 3) >> 1) == pos, kept_value(0), zero)
    k = g * group + pos
    if transpose_A:
        dense[k, m] = value
    else:
        dense[m, k] = value
    for _ in range(3):
        builder.end_for()
    # The gemm of the decoded tile, carrying the kept values and the metadata: the
    # compiler (select_gemm_sp) runs it on mma.sp where that fits, dropping the
    # decoding, and keeps the decoding otherwise.
    attrs = {
        "transpose_A": bool(transpose_A),
        "transpose_B": bool(transpose_B),
        "policy": int(policy),
        "clear_accum": bool(clear_accum),
        "k_pack": int(k_pack),
        "wg_wait": int(wg_wait),
        "tl.gemm_sp": 1,
        "transpose_E": bool(transpose_E),
    }
    regions = [ops._region(x, f"{name} operand {n}").to_core() for x, n in ((B, "B"), (C, "C"))]
    sparse_regions = [
        ops._region(x, f"{name} {n}").to_core() for x, n in ((A_sparse, "A_sparse"), (E, "E"))
    ]
    builder.tile_op("gemm", [dense.full_region().to_core(), *regions, *sparse_regions], [], attrs)


# TileLang's second front end for the same operation.
gemm_sp_v2 = gemm_sp
