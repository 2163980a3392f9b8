"""The warp-level helpers (T.shfl_*, T.ballot, T.any_sync, T.all_sync, T.activemask,
T.sync_warp, lane and warp indices) on a real GPU: the kernels and numpy expectations
of tests/python/test_warp.py, which checks the same on the cpu target and the emulator."""

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

import tilelang
from test_warp import (
    INDEX_CASES,
    VOTE_CASES,
    expected_indices,
    expected_shuffles,
    expected_votes,
    indices,
    random_values,
    rng,
    shuffles,
    signed_with_uniform_warps,
    uniform_votes,
    votes,
    warp_rotate_through_shared,
    warp_sum,
)

torch = pytest.importorskip("torch")


def on_gpu(a):
    """A numpy array as a CUDA tensor (bfloat16 through its bits)."""
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).cuda()
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def on_host(t):
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
    if t.dtype == torch.uint64:
        return t.view(torch.int64).cpu().numpy().view(np.uint64)
    return t.cpu().numpy()


def outputs(kernel_result):
    return [
        on_host(t)
        for t in (kernel_result if isinstance(kernel_result, (list, tuple)) else [kernel_result])
    ]


def test_warp_sum_by_shfl_xor():
    n = 4096
    kernel = tilelang.compile(warp_sum(n), out_idx=[1, 2], target="cuda")
    assert "__shfl_xor_sync(" in kernel.get_kernel_source()  # a float32 moves as it is
    a = rng.standard_normal(n).astype(np.float32)
    b, s = outputs(kernel(on_gpu(a)))
    sums = a.astype(np.float64).reshape(-1, 32).sum(axis=1)
    np.testing.assert_allclose(s, sums, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b, np.repeat(sums, 32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "dtype, width, delta, src",
    [
        ("float32", 32, 1, 7),
        ("float16", 16, 3, 21),
        ("bfloat16", 8, 5, 2),
        ("float64", 32, 13, 31),
        ("int64", 4, 2, -1),
        ("int8", 32, 16, 40),
    ],
)
def test_shuffles(dtype, width, delta, src):
    n = 1024
    kernel = tilelang.compile(
        shuffles(n, dtype, width, delta, src), out_idx=[1, 2, 3, 4], target="cuda"
    )
    a = random_values(n, dtype)
    for got, ref in zip(outputs(kernel(on_gpu(a))), expected_shuffles(a, width, delta, src)):
        np.testing.assert_array_equal(got.view(np.uint8), ref.view(np.uint8))


@pytest.mark.parametrize("threads, mask", VOTE_CASES)
def test_votes(threads, mask):
    n = threads * 8
    kernel = tilelang.compile(votes(n, threads, mask), out_idx=[1, 2, 3, 4, 5], target="cuda")
    a = signed_with_uniform_warps(n)
    names = ["ballot", "ballot_sync", "any_sync", "all_sync", "activemask"]
    for name, got, ref in zip(names, outputs(kernel(on_gpu(a))), expected_votes(a, threads, mask)):
        np.testing.assert_array_equal(got, ref, err_msg=name)


@pytest.mark.parametrize("shape, warp_size, group", INDEX_CASES)
def test_lane_warp_and_group_indices(shape, warp_size, group):
    kernel = tilelang.compile(
        indices(shape, warp_size, group), out_idx=list(range(1, 7)), target="cuda"
    )
    shift = rng.integers(-1000, 1000, 1).astype(np.int32)
    names = ["lane", "warp", "warp_sync", "group", "default lane", "default group"]
    got = outputs(kernel(on_gpu(shift)))
    for name, g, ref in zip(names, got, expected_indices(shape, warp_size, group, shift[0])):
        np.testing.assert_array_equal(g, ref, err_msg=name)


def test_sync_warp_orders_shared_memory_within_a_warp():
    n = 1024
    kernel = tilelang.compile(warp_rotate_through_shared(n), out_idx=[1], target="cuda")
    a = rng.standard_normal(n).astype(np.float32)
    ref = (a * 2).reshape(-1, 32)
    np.testing.assert_array_equal(
        outputs(kernel(on_gpu(a)))[0], np.roll(ref, -1, axis=1).reshape(-1)
    )


@pytest.mark.parametrize("threads", [16, 64])
def test_votes_in_code_without_thread_indices(threads):
    blocks = 6
    kernel = tilelang.compile(uniform_votes(blocks, threads), out_idx=[1], target="cuda")
    a = rng.standard_normal(blocks).astype(np.float32)
    a[0], a[1] = 1.0, -1.0
    lanes = np.uint64((1 << min(threads, 32)) - 1)
    out = outputs(kernel(on_gpu(a)))[0]
    np.testing.assert_array_equal(out[:, 0], np.where(a > 0, lanes, np.uint64(0)))
    np.testing.assert_array_equal(out[:, 1], np.full(blocks, lanes))
    np.testing.assert_array_equal(out[:, 2], (a > 0).astype(np.uint64))
