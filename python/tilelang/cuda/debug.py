"""`tilelang.cuda.debug`: T.device_assert and T.print, TileLang's CUDA debugging calls
(the same functions as T's, which work on every target)."""

from tilelang.language.debug import device_assert, print

__all__ = ["device_assert", "print"]
