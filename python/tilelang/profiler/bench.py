"""TileLang's `tilelang.profiler.bench`: do_bench (CUDA events or graphs, or wall time
on the CPU). The CUPTI timer is out of scope: it needs NVIDIA's CUPTI library, which
tilelang does not load."""

from tilelang._compat import forwarding_getattr

from . import do_bench

__all__ = ["do_bench"]

__getattr__ = forwarding_getattr(
    "tilelang.profiler.bench", internal=("_bench_with_cupti", "bench_with_cupti"),
    instead="time with do_bench(fn, backend='event') or backend='cudagraph'",
)  # fmt: skip
