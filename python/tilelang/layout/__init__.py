"""Layouts of on-chip buffers, as TileLang spells them: `Layout(shape, forward_fn)` maps a
logical index to a physical one, `Fragment` also names the owning thread, and the
`make_*_swizzled_layout` helpers build the bank-conflict-free layouts GPU targets use.
Kernels record them with `T.annotate_layout`; the CPU target keeps logical layouts, so they
never change results there."""

from .fragment import Fragment, make_gemm_fragment_8x8, make_gemm_fragment_8x8_transposed
from .layout import Layout
from .swizzle import (
    make_cutlass_metadata_layout,
    make_full_bank_swizzled_layout,
    make_half_bank_swizzled_layout,
    make_linear_layout,
    make_metadata_layout,
    make_quarter_bank_swizzled_layout,
    make_swizzled_layout,
)
from .swizzle_mode import SwizzleMode

__all__ = [
    "Fragment",
    "Layout",
    "SwizzleMode",
    "make_cutlass_metadata_layout",
    "make_full_bank_swizzled_layout",
    "make_gemm_fragment_8x8",
    "make_gemm_fragment_8x8_transposed",
    "make_half_bank_swizzled_layout",
    "make_linear_layout",
    "make_metadata_layout",
    "make_quarter_bank_swizzled_layout",
    "make_swizzled_layout",
]
