"""T.copy between regions of the same rank whose constant extents differ: the copy runs
over the region of the side in the deeper memory (the source when both are alike), as
TileLang does, and the other region only gives the start."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
rng = np.random.default_rng(53)


@pytest.mark.parametrize("target", TARGETS)
def test_global_to_global_runs_over_the_source(target):
    @T.prim_func
    def main(A: T.Tensor((64, 16), T.float32), B: T.Tensor((64, 16), T.float32)):
        with T.Kernel(1, threads=64):
            T.copy(A[:, 4:6], B[:, 1:4])  # 2 columns, into a 3-column region

    kernel = tilelang.compile(main, target=target)
    a = rng.standard_normal((64, 16)).astype(np.float32)
    b = rng.standard_normal((64, 16)).astype(np.float32)
    want = b.copy()
    want[:, 1:3] = a[:, 4:6]
    kernel(a, b)
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize("target", TARGETS)
def test_shared_tile_larger_than_the_global_source(target):
    @T.prim_func
    def main(A: T.Tensor((64, 32), T.float32), B: T.Tensor((64, 32), T.float32)):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((32, 16), T.float32)
            T.copy(A[8:24, 0:8], S)  # the tile (deeper memory) is the base: 32 x 16
            T.copy(S, B[0:32, 0:16])

    kernel = tilelang.compile(main, target=target)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((64, 32)).astype(np.float32)
    want = b.copy()
    want[0:32, 0:16] = a[8:40, 0:16]
    kernel(a, b)
    np.testing.assert_array_equal(b, want)


def test_destination_base_smaller_than_the_source_is_an_error():
    with pytest.raises(tilelang.TileLangError, match="T.copy extents cannot be reconciled"):

        @T.prim_func
        def main(A: T.Tensor((64, 64), T.float32)):
            with T.Kernel(1, threads=1):
                S = T.alloc_shared((16, 16), T.float32)
                T.copy(A[0:32, 0:8], S)
