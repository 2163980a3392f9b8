"""Stores in a T.Parallel loop to one fragment element (transform/check_parallel_stores.h,
lower_fragments' per-iteration scalars): `tmp[0]` is each thread's own scalar, as in
TileLang (it raced in shared memory before: the emulator's race detector caught it, a
GPU would have kept any thread's value); a store of a varying value at another constant
index is refused on every target at the store's line."""

import pathlib

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]


def scalar_temporary():
    @T.prim_func
    def main(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            tmp = T.alloc_fragment((1,), "float32")
            for i in T.Parallel(128):
                tmp[0] = A[bx * 128 + i] * 2
                B[bx * 128 + i] = tmp[0] + 1

    return main


def scalar_temporary_2d():
    @T.prim_func
    def main(A: T.Tensor((32, 16), "float32"), B: T.Tensor((32, 16), "float32")):
        with T.Kernel(1, threads=128):
            t = T.alloc_fragment((1, 1), "float32")
            for i, j in T.Parallel(32, 16):
                t[0, 0] = A[i, j] - 3
                B[i, j] = t[0, 0] * t[0, 0]

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_a_fragment_at_index_zero_is_each_iterations_scalar(target):
    a = np.random.default_rng(0).standard_normal(256).astype(np.float32)
    b = np.zeros(256, np.float32)
    tilelang.compile(scalar_temporary(), target=target)(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)
    a2 = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    b2 = np.zeros((32, 16), np.float32)
    tilelang.compile(scalar_temporary_2d(), target=target)(a2, b2)
    np.testing.assert_array_equal(b2, (a2 - 3) * (a2 - 3))


def test_the_scalar_is_a_register_of_each_thread():
    source = tilelang.compile(scalar_temporary(), target="cuda -arch=sm_80").get_kernel_source()
    assert "float tmp[1];" in source and "TL_SMEM(tmp" not in source and "tl_smem" not in source


def racing_store(guarded=False, same_value=False):
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=128):
            frag = T.alloc_fragment((4,), "float32")
            T.clear(frag)
            for i in T.Parallel(4):
                if guarded:
                    if i == 2:
                        frag[1] = A[i]
                elif same_value:
                    frag[1] = A[7]
                else:
                    frag[1] = A[i]  # the racing store
            T.copy(frag, B)

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_a_varying_store_to_one_element_is_refused_at_its_line(target):
    with pytest.raises(tilelang.TileLangError) as e:
        tilelang.compile(racing_store(), target=target)
    message = str(e.value)
    assert "test_parallel_stores.py:" in message and "frag[1]" in message
    assert (
        "depends on loop variable 'i'" in message
        and "Only fragment[0] access is allowed" in message
    )
    lines = pathlib.Path(__file__).read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if text.strip().endswith("# the racing store"))
    assert f"test_parallel_stores.py:{line}:" in message


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_every_iteration_storing_one_value_is_refused_too(target):
    with pytest.raises(
        tilelang.TileLangError,
        match=r"stores frag\[1\] a value, once per value of loop variable 'i'",
    ):
        tilelang.compile(racing_store(same_value=True), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_a_store_that_one_iteration_makes_stands(target):
    a = np.arange(128, dtype=np.float32)
    b = np.ones(4, np.float32)
    tilelang.compile(racing_store(guarded=True), target=target)(a, b)
    np.testing.assert_array_equal(b, [0, 2, 0, 0])


def scalar_and_layout():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            f = T.alloc_fragment((64,), "float32")
            for i in T.Parallel(64):
                f[i] = A[i]
            for i in T.Parallel(64):
                f[0] = A[i] + 1
            T.copy(f, B)

    return main


def test_a_scalar_that_also_needs_a_layout_is_refused_on_the_gpu_targets():
    with pytest.raises(
        tilelang.TileLangError, match=r"fragment 'f' is used at \[0\] in this T.Parallel loop"
    ):
        tilelang.compile(scalar_and_layout(), target="cuda -arch=sm_80")
