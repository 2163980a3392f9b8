"""T.reduce_argmax / T.reduce_argmin (python/tilelang/language/reduce.py): the index
along a dim of each line's largest / smallest element, the first one on ties (as
numpy and torch), from shared or fragment sources into shared or fragment integer
buffers, on every target."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.utils.target import available_targets

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]


def arg_kernel(shape, dim, kind, src_scope, dst_scope, keepdim, index_dtype="int32"):
    axis = dim % len(shape)
    out_shape = (
        [1 if d == axis else n for d, n in enumerate(shape)]
        if keepdim
        else [n for d, n in enumerate(shape) if d != axis]
    )
    op = T.reduce_argmax if kind == "max" else T.reduce_argmin
    alloc = {"shared": T.alloc_shared, "fragment": T.alloc_fragment}

    @T.prim_func
    def main(A: T.Tensor(shape, "float32"), B: T.Tensor(out_shape or [1], index_dtype)):
        with T.Kernel(1, threads=128):
            src = alloc[src_scope](shape, "float32")
            dst = alloc[dst_scope](out_shape, index_dtype)
            T.copy(A, src)
            op(src, dst, dim)
            if out_shape:
                T.copy(dst, B)
            else:
                B[0] = dst[()]

    return main, out_shape


CASES = [
    ((32, 64), -1, "fragment", "fragment", False),
    ((32, 64), 0, "fragment", "fragment", False),
    ((32, 64), 1, "shared", "shared", True),
    ((64,), 0, "fragment", "fragment", False),  # a whole 1-D tile to one index
    ((8, 16, 32), 1, "shared", "fragment", False),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[str(c[:2]) for c in CASES])
def test_arg_reductions_match_numpy_with_ties(target, kind, case):
    shape, dim, src_scope, dst_scope, keepdim = CASES[case]
    func, _ = arg_kernel(shape, dim, kind, src_scope, dst_scope, keepdim)
    kernel = tilelang.compile(func, out_idx=[1], target=target)
    a = np.random.default_rng(case).integers(-3, 4, size=shape).astype(np.float32)  # many ties
    ref = (np.argmax if kind == "max" else np.argmin)(a, axis=dim)
    if keepdim:
        ref = np.expand_dims(ref, dim)
    got = np.asarray(kernel(a)).reshape(np.shape(ref))
    np.testing.assert_array_equal(got, ref)


@pytest.mark.skipif("cuda" not in available_targets(), reason="NVRTC is not available")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_arg_reduction_compiles_with_nvrtc(arch):
    func, _ = arg_kernel((32, 64), -1, "max", "fragment", "fragment", False)
    src = tilelang.compile(func, out_idx=[1], target=f"cuda -arch={arch}").get_kernel_source()
    assert "__global__" in src


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda S, I, F: T.reduce_argmax(S, F),
            "T.reduce_argmax destination 'F' must have an integer dtype for the indices, got float32",
        ),
        (lambda S, I, F: T.reduce_argmin(S, I, 2), "T.reduce_argmin dim 2 is out of range"),
        (lambda S, I, F: T.reduce_argmax(S[0:4, :], I), "T.reduce_argmax source must be a buffer"),
    ],
)
def test_arg_reduction_errors(build, message):
    with pytest.raises(tilelang.TileLangError, match=message):

        @T.prim_func
        def main(A: T.Tensor((16, 32), "float32")):
            with T.Kernel(1, threads=128):
                S = T.alloc_shared((16, 32), "float32")
                I = T.alloc_fragment((16,), "int32")
                F = T.alloc_fragment((16,), "float32")
                build(S, I, F)
