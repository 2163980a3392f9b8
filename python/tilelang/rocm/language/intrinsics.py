"""`tilelang.rocm.language.intrinsics`: TileLang's ROCm matrix-core emitters, layouts and
LDS transposing loads. tilelang has no ROCm backend: each is out of scope."""

from tilelang.tvm._scope import refused_name

_INSTEAD = "tilelang has no ROCm (HIP) backend; compile for target='cuda', 'metal' or 'cpu'"
_KIND = "a ROCm-only name"

MatrixCoreIntrinEmitter = refused_name(f"{__name__}.MatrixCoreIntrinEmitter", _INSTEAD, _KIND)
WMMAIntrinEmitter = refused_name(f"{__name__}.WMMAIntrinEmitter", _INSTEAD, _KIND)
ds_read_tr8_b64 = refused_name(f"{__name__}.ds_read_tr8_b64", _INSTEAD, _KIND)
ds_read_tr16_b64 = refused_name(f"{__name__}.ds_read_tr16_b64", _INSTEAD, _KIND)
make_mfma_swizzle_layout = refused_name(f"{__name__}.make_mfma_swizzle_layout", _INSTEAD, _KIND)

__all__ = [
    "MatrixCoreIntrinEmitter",
    "WMMAIntrinEmitter",
    "ds_read_tr8_b64",
    "ds_read_tr16_b64",
    "make_mfma_swizzle_layout",
]
