"""The part of TileLang's `tilelang.carver` that kernels written for it import:
`tilelang.carver.arch.driver` (device queries). The rest of carver (hardware-aware
config templates) is not provided."""
