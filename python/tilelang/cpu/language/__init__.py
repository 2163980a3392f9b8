"""`tilelang.cpu.language`: TileLang's CPU dialect of T, the common language
(tilelang/_dialects.py); T's other names are still its attributes."""

from tilelang._dialects import dialect_dir, dialect_getattr

__tilelang_dialect__ = "cpu"

__getattr__ = dialect_getattr("cpu")
__dir__ = dialect_dir("cpu")
