"""TileLang's `tilelang.language.common`: the dialect-neutral language, T's names less
every backend's extensions (tilelang/_dialects.py). Here one T serves every target, so
its other names are still attributes of this module."""

from tilelang._dialects import dialect_dir, dialect_getattr

__tilelang_dialect__ = "common"

__getattr__ = dialect_getattr("common")
__dir__ = dialect_dir("common")
