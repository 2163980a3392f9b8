"""`T.tcgen05_gemm` / `T.tcgen05_mma` and their block-scaled forms: TileLang's GEMMs on
sm_100's tensor memory. tilelang's CUDA targets are sm_80 to sm_90a, so each is out of
scope and says so (T.gemm is wgmma on sm_90a, mma.sync from sm_80)."""

from tilelang.tvm._scope import refused_name

_INSTEAD = (
    "tcgen05 and tensor memory are sm_100 (Blackwell), and tilelang's CUDA targets are sm_80 "
    "to sm_90a; write T.gemm (wgmma on sm_90a)"
)
_KIND = "an sm_100 instruction"

tcgen05_gemm = tcgen05_mma = refused_name(f"{__name__}.tcgen05_gemm", _INSTEAD, _KIND)
tcgen05_gemm_blockscaled = tcgen05_mma_blockscaled = refused_name(
    f"{__name__}.tcgen05_gemm_blockscaled", _INSTEAD, _KIND
)

__all__ = ["tcgen05_gemm", "tcgen05_gemm_blockscaled", "tcgen05_mma", "tcgen05_mma_blockscaled"]
