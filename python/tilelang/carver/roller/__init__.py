"""TileLang's `tilelang.carver.roller`: its tile-size search over TVM's IR (the roller
policies, rasterization and hints) is out of scope; tilelang.autotune searches configs
given as lists."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    "tilelang.carver.roller", internal_all=True,
    instead="list the configs and tune them with @tilelang.autotune(configs=...)",
)  # fmt: skip
