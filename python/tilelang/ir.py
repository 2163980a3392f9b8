"""TileLang's `tilelang.ir`: its TVM IR node helpers (spans on TVM statements and
buffers). tilelang's IR records the user's file:line on every node itself and reports
it in errors; these helpers of TVM's IR raise an error saying they are out of scope."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    "tilelang.ir", internal_all=True,
    instead="tilelang errors carry the user's file:line themselves",
)  # fmt: skip
