"""T.comm_reducer + T.tvm_thread_allreduce (TVM's cross-thread reduction, as TileLang's
TVM-style kernels write it), on every target: sums along one thread binding, a masked
max over the whole block, a reduction repeated in a loop (the scratch row is rewritten
each round), and the errors."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

ALL = ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate", "cpu"]
NULL = None  # set in the kernels: T.reinterpret(T.uint64(0), dtype="handle")


def gemv(N, K, BLOCK_N, R, TILE_K=4):
    BLOCK_K = R * TILE_K

    @T.prim_func
    def main(
        A: T.Tensor((K,), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")
    ):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, R)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            acc = T.alloc_local((1,), "float32")
            T.clear(acc)
            for bk in T.serial(T.ceildiv(K, BLOCK_K)):
                for k in T.serial(TILE_K):
                    acc[0] += (
                        A[bk * BLOCK_K + tk * TILE_K + k]
                        * B[bn * BLOCK_N + tn, bk * BLOCK_K + tk * TILE_K + k]
                    )
            red = T.alloc_local((1,), "float32")
            with T.attr(
                T.comm_reducer(lambda x, y: x + y, [T.Cast("float32", 0)]),
                "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle"),
            ):
                T.evaluate(
                    T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], tk, dtype="handle")
                )
            C[bn * BLOCK_N + tn] = red[0]

    return main


@pytest.mark.parametrize("target", ALL)
def test_sum_along_one_thread_binding(target):
    N, K = 64, 256
    a = np.random.default_rng(0).random(K, dtype=np.float32)
    b = np.random.default_rng(1).random((N, K), dtype=np.float32)
    out = tilelang.compile(gemv(N, K, 16, 8), out_idx=[-1], target=target)(a, b)
    np.testing.assert_allclose(out, b @ a, rtol=1e-5)


def block_max(rounds):
    @T.prim_func
    def main(X: T.Tensor((rounds, 8, 16), "float32"), Y: T.Tensor((rounds, 8, 16), "float32")):
        with T.Kernel(1, threads=(16, 8)) as _:
            tx, ty = T.get_thread_binding(0), T.get_thread_binding(1)
            best = T.alloc_local((1,), "float32")
            for r in T.serial(rounds):
                with T.attr(
                    T.comm_reducer(lambda x, y: T.max(x, y), [T.float32(-1e30)]),
                    "reduce_scope",
                    NULL,
                ):
                    # Only even columns take part; every thread gets the maximum.
                    T.evaluate(
                        T.tvm_thread_allreduce(
                            T.uint32(1), X[r, ty, tx], tx % 2 == 0, best[0], tx, ty
                        )
                    )
                Y[r, ty, tx] = best[0]

    return main


@pytest.mark.parametrize("target", ALL)
def test_masked_max_over_the_block_in_a_loop(target):
    x = np.random.default_rng(2).standard_normal((3, 8, 16)).astype(np.float32)
    out = tilelang.compile(block_max(3), out_idx=[-1], target=target)(x)
    expect = x[:, :, 0::2].max(axis=(1, 2))
    np.testing.assert_array_equal(out, np.broadcast_to(expect[:, None, None], x.shape))


def reduce_with(reducer_args, call):
    @T.prim_func
    def main(X: T.Tensor((32,), "float32"), Y: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as _:
            tx = T.get_thread_binding(0)
            red = T.alloc_local((1,), "float32")
            if reducer_args is None:
                call(X, tx, red)
            else:
                with T.attr(T.comm_reducer(*reducer_args), "reduce_scope", NULL):
                    call(X, tx, red)
            Y[tx] = red[0]

    return main


@pytest.mark.parametrize(
    "reducer_args, call, message",
    [
        (
            None,
            lambda X, tx, red: T.tvm_thread_allreduce(1, X[tx], True, red[0], tx),
            "needs an enclosing",
        ),
        (
            (lambda x, y: x + y, [0.0]),
            lambda X, tx, red: T.tvm_thread_allreduce(2, X[tx], True, red[0], tx),
            "only one value per reduction is supported; got size=2",
        ),
        (
            (lambda x, y: x + y, [0.0]),
            lambda X, tx, red: T.tvm_thread_allreduce(1, X[tx], True, red[0], 3),
            "reduction axes must be the kernel's thread bindings",
        ),
        (
            (lambda x, y: x + y, [0.0]),
            lambda X, tx, red: T.tvm_thread_allreduce(1, X[tx], True, 0.0, tx),
            "out must be one buffer element such as red",
        ),
        (
            (lambda x, y: x + y, [0.0, 1.0]),
            lambda X, tx, red: None,
            "only reducers of one value are supported",
        ),
    ],
)
def test_errors_name_the_argument(reducer_args, call, message):
    with pytest.raises(tilelang.TileLangError, match=message):
        tilelang.compile(reduce_with(reducer_args, call), out_idx=[-1], target="cpu")


def test_reduce_scope_takes_a_reducer():
    with pytest.raises(
        tilelang.TileLangError,
        match=r"test_thread_allreduce.py:\d+: T.attr\(node, .reduce_scope.*got 0",
    ):

        @T.prim_func
        def main(Y: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32) as _, T.attr(0, "reduce_scope", NULL):
                Y[0] = 1.0


def product_of_eight(dtype):
    @T.prim_func
    def main(A: T.Tensor((8,), dtype), C: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=8):
            tk = T.get_thread_binding(0)
            v = T.alloc_local((1,), dtype)
            v[0] = A[tk]
            out = T.alloc_local((1,), dtype)
            with T.attr(
                T.comm_reducer(lambda x, y: x * y, [T.Cast(dtype, 1)]),
                "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle"),
            ):
                T.evaluate(
                    T.tvm_thread_allreduce(T.uint32(1), v[0], True, out[0], tk, dtype="handle")
                )
            C[0] = out[0]

    return main


@pytest.mark.parametrize("target", ALL)
def test_a_warp_reduction_rounds_in_the_shuffle_trees_order(target):
    """TileLang's issue 2628 data: the bfloat16 product of 3, 8, 5, 2, 7, 6, 4, 6 is
    241664 in the order of TVM's shuffle-down tree ((v0 v4)(v2 v6))((v1 v5)(v3 v7)), as
    on the GPU, and 242688 folded in sequence (10080 rounds to 10112 there)."""
    import ml_dtypes

    a = np.array([3, 8, 5, 2, 7, 6, 4, 6], dtype=ml_dtypes.bfloat16)
    c = np.zeros(1, dtype=ml_dtypes.bfloat16)
    tilelang.compile(product_of_eight("bfloat16"), target=target)(a, c)
    assert float(c[0]) == 241664.0
