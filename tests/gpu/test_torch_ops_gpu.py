"""Kernels as PyTorch operators (tilelang.torch.op) on a real GPU: an operator launches
on torch's current stream, and a function calling registered operators is captured in a
torch.cuda.CUDAGraph and by torch.compile(mode="reduce-overhead") (CUDA graphs), with
no host synchronization or allocation capture forbids on the call path: replays with
new inputs copied into the static ones match the eager results."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

torch = pytest.importorskip("torch")

NS = "tl_gpu_test_ops"
COLS = 64
BLOCK = 128


def add_kernel():
    """C = A + B * alpha over a T.dynamic number of rows of COLS; C allocated (out_idx)."""
    n = T.dynamic("n")

    @T.prim_func
    def add(
        A: T.Tensor((n, COLS), "float32"),
        B: T.Tensor((n, COLS), "float32"),
        alpha: T.float32,
        C: T.Tensor((n, COLS), "float32"),
    ):
        with T.Kernel(T.ceildiv(n, 2), threads=BLOCK) as bx:
            for i, j in T.Parallel(2, COLS):
                if bx * 2 + i < n:
                    C[bx * 2 + i, j] = A[bx * 2 + i, j] + B[bx * 2 + i, j] * alpha

    return tilelang.compile(add, out_idx=[3], target="cuda")


def scale_kernel():
    """X *= s in place (a mutated input; returns nothing)."""
    n = T.dynamic("n")

    @T.prim_func
    def scale(X: T.Tensor((n,), "float32"), s: T.float32):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    X[bx * BLOCK + i] = X[bx * BLOCK + i] * s

    return tilelang.compile(scale, target="cuda")


@pytest.fixture(scope="module")
def ops():
    return (
        tilelang.torch.op(add_kernel(), f"{NS}::add"),
        tilelang.torch.op(scale_kernel(), f"{NS}::scale"),
    )


def inputs(rows=1000, seed=0):
    rng = np.random.default_rng(seed)
    a, b = (torch.from_numpy(rng.standard_normal((rows, COLS), dtype=np.float32)) for _ in "ab")
    return a.cuda(), b.cuda()


def reference(a, b):
    """f below in float64 with torch's functions."""
    a, b = a.double(), b.double()
    h = a + b * 2.0
    return ((h + b * -0.5) * 3.0).float()


def two_ops(ops):
    add, scale = ops

    def f(a, b):
        h = add(a, b, 2.0)  # output allocated through torch's allocator
        out = add(h, b, -0.5)
        scale(out.view(-1), 3.0)  # in place, on an intermediate
        return out

    return f


def test_operator_launches_on_the_current_stream(ops):
    add, _ = ops
    a, b = inputs()
    new_a, _ = inputs(seed=1)
    add(a, b, 2.0)  # loads the module first: loading synchronizes the device
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000_000)
        a.copy_(new_a)  # on `side`, after the sleep: only a launch on `side` sees it
        c = add(a, b, 2.0)
    assert c.is_cuda and c.shape == a.shape
    assert not side.query(), "the call synchronized with the side stream, or the sleep was short"
    side.synchronize()
    torch.testing.assert_close(c, (new_a.double() + b.double() * 2.0).float())


def test_cuda_graph_capture_of_two_operator_calls(ops):
    f = two_ops(ops)
    a, b = inputs()
    # Warm up on a side stream (loads the kernels' modules outside the capture), as torch asks.
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        for _ in range(2):
            f(a, b)
    torch.cuda.current_stream().wait_stream(warm)
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = f(a, b)
    for seed in (1, 2):
        new_a, new_b = inputs(seed=seed)
        a.copy_(new_a)
        b.copy_(new_b)
        graph.replay()
        torch.cuda.synchronize()
        eager = f(new_a, new_b)
        torch.testing.assert_close(out, eager)
        torch.testing.assert_close(out, reference(new_a, new_b))


def test_torch_compile_reduce_overhead(ops):
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    f = two_ops(ops)
    compiled = torch.compile(f, mode="reduce-overhead", fullgraph=True)
    a, b = inputs()
    # Calls 1 and 2 warm up and record the graph; later calls replay it.
    for seed in range(5):
        new_a, new_b = inputs(seed=seed)
        a.copy_(new_a)
        b.copy_(new_b)
        out = compiled(a, b).clone()  # the next replay overwrites the graph's output
        torch.cuda.synchronize()
        torch.testing.assert_close(out, f(new_a, new_b))
        torch.testing.assert_close(out, reference(new_a, new_b))
    assert counters["inductor"]["cudagraph_skips"] == 0, "torch.compile did not use CUDA graphs"
