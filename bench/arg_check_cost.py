"""Host cost of one call of a small cpu kernel (three tensors and an int32 scalar),
with numpy arrays and with torch tensors: the fastest of ROUNDS x CALLS calls, in
microseconds. It measures the argument checks' share of a call when run against
two builds in alternation, e.g.

  for i in 1 2 3 4; do
    TILELANG_DEV_BUILD_DIR=<build before> PYTHONPATH=<its python> python bench/arg_check_cost.py
    TILELANG_DEV_BUILD_DIR=<build after> PYTHONPATH=<its python> python bench/arg_check_cost.py
  done

(docs/design/reliability.md, section Arguments, has the figures).
"""

import timeit

import numpy as np
import tilelang
import tilelang.language as T

ROUNDS, CALLS, N = 60, 2000, 256
n = T.dynamic("n")


@T.prim_func
def add(
    A: T.Tensor((n,), "float32"),
    B: T.Tensor((n,), "float32"),
    C: T.Tensor((n,), "float32"),
    s: T.int32,
):
    with T.Kernel(1, threads=1) as _:
        for i in T.serial(4):
            C[i] = A[i] + B[i] + T.cast(s, "float32")


def fastest_us(fn):
    return min(timeit.repeat(fn, number=CALLS, repeat=ROUNDS)) / CALLS * 1e6


def main():
    kernel = tilelang.compile(add, target="cpu")
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    line = f"numpy {fastest_us(lambda: kernel(a, b, c, 3)):.3f} us"
    try:
        import torch
    except ImportError:
        print(line)
        return
    ta, tb, tc = (torch.from_numpy(x.copy()) for x in (a, b, c))
    print(f"{line}  torch {fastest_us(lambda: kernel(ta, tb, tc, 3)):.3f} us")


if __name__ == "__main__":
    main()
