"""`tilelang.rocm.language`: TileLang's ROCm dialect of T, the common language plus its
ROCm names (tilelang/_dialects.py). tilelang has no ROCm backend, so those names
(`T.mfma`, `T.rdna_wmma`, the matrix-core emitters, ...) are out of scope and say so
(tilelang.rocm.language.tir and .intrinsics); T's other names are still attributes."""

from tilelang._dialects import ROCM_EXTENSIONS, dialect_dir, dialect_getattr
from tilelang.language.tir.exports import ROCM_ONLY_TIR_EXPORTS

__tilelang_dialect__ = "rocm"

_TIR = ROCM_ONLY_TIR_EXPORTS | {"mfma", "mfma_store", "rdna_wmma", "rdna_wmma_store"}
__getattr__ = dialect_getattr(
    "rocm",
    extra={
        **dict.fromkeys(_TIR, "tilelang.rocm.language.tir"),
        **dict.fromkeys(ROCM_EXTENSIONS - _TIR, "tilelang.rocm.language.intrinsics"),
    },
)
__dir__ = dialect_dir("rocm")
