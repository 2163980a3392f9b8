"""`tilelang.cuda.intrinsics.sparse_layout`: the 2:4 (1:2 for float32) sparsity facts
that host-side compressors written for TileLang import, from tilelang.language.sparse
(the rules T.gemm_sp checks)."""

from tilelang.language import sparse as _sparse
from tilelang.language.dtypes import dtype

__all__ = ["GROUP_CONFIG", "get_e_factor", "get_e_replicate_factor"]

# (kept, group) per dtype of A: 2 of every 4 elements along K are kept (1 of 2 for float32).
GROUP_CONFIG = {
    dtype(name): kept_group
    for name, kept_group in (
        ("float32", (1, 2)),
        ("float16", (2, 4)),
        ("bfloat16", (2, 4)),
        ("int8", (2, 4)),
        ("uint8", (2, 4)),
        ("float8_e4m3fn", (2, 4)),
        ("float8_e5m2", (2, 4)),
    )
}


def get_e_factor(a_dtype, meta_dtype):
    """How many elements of dense A along K one metadata element describes."""
    return _sparse.e_factor(dtype(a_dtype), dtype(meta_dtype))


def get_e_replicate_factor(a_dtype):
    """How many consecutive lanes share one metadata value in mma.sp's operand layout:
    a lane pair for 16- and 32-bit A (the sparsity selector picks one of the pair), one
    lane for 8-bit A."""
    return 1 if dtype(a_dtype).bits <= 8 else 2
