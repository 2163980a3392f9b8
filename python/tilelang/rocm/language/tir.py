"""`tilelang.rocm.language.tir`: TVM's raw TIR builtins for AMD's matrix cores
(tilelang.language.tir.exports.ROCM_ONLY_TIR_EXPORTS) and TileLang's short names for
them (`mfma` is `tvm_mfma`). tilelang has no ROCm backend: each is out of scope."""

from tilelang.tvm._scope import refused_name

_INSTEAD = "tilelang has no ROCm (HIP) backend; compile for target='cuda', 'metal' or 'cpu'"
_KIND = "a raw TIR builtin of TVM's ROCm code generator"

tvm_mfma = mfma = refused_name(f"{__name__}.tvm_mfma", _INSTEAD, _KIND)
tvm_mfma_store = mfma_store = refused_name(f"{__name__}.tvm_mfma_store", _INSTEAD, _KIND)
tvm_rdna_wmma = rdna_wmma = refused_name(f"{__name__}.tvm_rdna_wmma", _INSTEAD, _KIND)
tvm_rdna_wmma_store = rdna_wmma_store = refused_name(
    f"{__name__}.tvm_rdna_wmma_store", _INSTEAD, _KIND
)

__all__ = [
    "mfma",
    "mfma_store",
    "rdna_wmma",
    "rdna_wmma_store",
    "tvm_mfma",
    "tvm_mfma_store",
    "tvm_rdna_wmma",
    "tvm_rdna_wmma_store",
]
