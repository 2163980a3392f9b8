"""Device queries of TileLang's `tilelang.carver.arch` (`from tilelang.carver.arch
import driver`)."""

from . import driver

__all__ = ["driver"]
