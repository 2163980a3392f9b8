"""`tilelang.webgpu.language`: TileLang's WebGPU dialect of T, the common language
(tilelang/_dialects.py); T's other names are still its attributes."""

from tilelang._dialects import dialect_dir, dialect_getattr

__tilelang_dialect__ = "webgpu"

__getattr__ = dialect_getattr("webgpu")
__dir__ = dialect_dir("webgpu")
