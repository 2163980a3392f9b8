"""`tilelang.cuda.intrinsics.macro.wgmma_macro_generator`: TileLang's emitter of this instruction
family is out of scope; T.gemm emits the instructions the target has. `select_wgmma_inst_n` is
the instruction width rule that tilelang's wgmma GEMM applies too."""

from math import gcd

from tilelang._compat import forwarding_getattr

__all__ = ["select_wgmma_inst_n"]


def select_wgmma_inst_n(warp_col_tiles: int) -> int:
    """The N of one wgmma (m64nNk16) for a warpgroup tile `warp_col_tiles` columns wide: the
    widest multiple of 16 up to 256 that divides it (96 is one m64n96k16, 384 two
    m64n192k16), and gcd(warp_col_tiles, 256) for a width that is not a multiple of 16.
    tilelang's `tl::wgmma_gemm_ss` / `wgmma_gemm_rs` pick their instruction so for a K-major
    B (device/cuda/gemm_sm90.cuh, `sm90::inst_n`; an N-major B keeps whole swizzle blocks:
    the largest power of two dividing the tile)."""
    if (
        not isinstance(warp_col_tiles, int)
        or isinstance(warp_col_tiles, bool)
        or warp_col_tiles <= 0
    ):
        raise ValueError(
            f"select_wgmma_inst_n: warp_col_tiles must be a positive int, got {warp_col_tiles!r}"
        )
    fallback = gcd(warp_col_tiles, 256)
    if warp_col_tiles % 16 != 0:
        return fallback
    return next(n for n in range(256, 15, -16) if warp_col_tiles % n == 0)


__getattr__ = forwarding_getattr(
    __name__,
    internal_all=True,
    instead="write the GEMM with T.gemm (tilelang picks the instruction)",
)
