"""`tilelang.metal.language`: TileLang's Metal dialect of T, the common language plus
TVM's simdgroup builtins (tilelang/_dialects.py); T's other names are still its
attributes."""

from tilelang._dialects import dialect_dir, dialect_getattr
from tilelang.language.tir.exports import METAL_ONLY_TIR_EXPORTS

__tilelang_dialect__ = "metal"

__getattr__ = dialect_getattr(
    "metal", extra=dict.fromkeys(METAL_ONLY_TIR_EXPORTS, "tilelang.metal.language.tir")
)
__dir__ = dialect_dir("metal")
