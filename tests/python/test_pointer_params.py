"""Pointer parameters: `a_ptr: T.ptr` (or `T.handle`) made a tensor in the body by
T.make_tensor (or T.match_buffer). A tensor passed for one is checked like any tensor
argument (dtype, shape, device, writability where the kernel writes it); an integer
address such as `x.data_ptr()` is taken as given. `T.Tensor(shape, T.ptr)` is a tensor
of int64 addresses (docs/design/pointer_params.md)."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
import torch

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
rng = np.random.default_rng(20261205)


def scale_add(block=32):
    @T.prim_func
    def main(a_ptr: T.ptr, b_ptr: T.ptr, out_ptr: T.ptr, n: T.int32):
        A = T.make_tensor(a_ptr, (n,), T.float32)
        B = T.make_tensor(b_ptr, (n,), T.float16)
        Out = T.make_tensor(out_ptr, (n,), T.float32)
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                g = bx * block + i
                if g < n:
                    Out[g] = A[g] * 2.0 + T.cast(B[g], T.float32)

    return main


_kernels = {}


def kernel(target):
    if target not in _kernels:
        _kernels[target] = tilelang.compile(scale_add(), target=target)
    return _kernels[target]


def inputs(n):
    a = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    b = torch.from_numpy(rng.standard_normal(n).astype(np.float16))
    return a, b, a.double() * 2 + b.double()


@pytest.mark.parametrize("target", TARGETS)
def test_tensors_and_addresses_compute_the_same(target):
    k = kernel(target)
    n = 77
    a, b, ref = inputs(n)
    out = torch.empty(n)
    k(a, b, out, n)
    np.testing.assert_allclose(out.double().numpy(), ref.numpy(), rtol=1e-6, atol=1e-6)
    out2 = torch.empty(n)
    k(a.data_ptr(), b.data_ptr(), out2.data_ptr(), n)
    np.testing.assert_array_equal(out2.numpy(), out.numpy())
    # Tensors and addresses mixed, and an address into the middle of a tensor.
    big = torch.empty(n + 5)
    k(a, b.data_ptr(), big[5:].data_ptr(), n)
    np.testing.assert_array_equal(big[5:].numpy(), out.numpy())


@pytest.mark.parametrize("target", TARGETS)
def test_a_tensor_for_a_pointer_is_checked_as_the_tensor_made_of_it(target):
    k = kernel(target)
    n = 40
    a, b, _ = inputs(n)
    out = torch.empty(n)
    with pytest.raises(
        tilelang.TileLangError,
        match=r"argument 'b_ptr' \(parameter 1 of kernel 'main'\) has dtype float32, expected float16",
    ):
        k(a, a, out, n)
    with pytest.raises(
        tilelang.TileLangError,
        match=r"argument 'b_ptr' \(parameter 1 of kernel 'main'\) has shape \(40,\): dimension 0 is 40 "
        r"but 'n' was bound to 39 by an earlier argument",
    ):
        k(a[:39], b, out, n)
    # Writability: the kernel writes out_ptr, so a read-only array is refused; the
    # pointers it only reads take one.
    ro = np.zeros(n, np.float32)
    ro.flags.writeable = False
    with pytest.raises(
        tilelang.TileLangError,
        match=r"argument 'out_ptr' \(parameter 2 of kernel 'main'\) is read-only, but the kernel writes it",
    ):
        k(a.numpy(), b.numpy(), ro, n)
    np.testing.assert_array_equal(ro, 0)
    a_ro = a.numpy().copy()
    a_ro.flags.writeable = False
    out_np = np.empty(n, np.float32)
    k(a_ro, b.numpy(), out_np, n)
    np.testing.assert_allclose(out_np, a_ro * 2 + b.numpy().astype(np.float32), rtol=1e-6)


def test_an_address_is_refused_when_it_cannot_be_one():
    k = kernel("cpu")
    n = 8
    a, b, _ = inputs(n)
    out = torch.empty(n)
    with pytest.raises(tilelang.TileLangError, match=r"argument 'a_ptr' .* is the null address"):
        k(0, b, out, n)
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'out_ptr' .* is -16, which is no address"
    ):
        k(a, b, -16, n)
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'a_ptr' .* is an integer wider than 64 bits"
    ):
        k(1 << 70, b, out, n)


def test_an_address_takes_its_shape_from_the_other_arguments():
    @T.prim_func
    def copy(x_ptr: T.ptr, Y: T.Tensor((4,), T.float32)):
        m = T.dynamic("m")
        X = T.make_tensor(x_ptr, (m,), T.float32)
        with T.Kernel(1, threads=4) as _:
            for i in T.Parallel(4):
                Y[i] = X[i % m]

    k = tilelang.compile(copy, target="cpu")
    x = torch.from_numpy(rng.standard_normal(3).astype(np.float32))
    y = torch.empty(4)
    k(x, y)
    np.testing.assert_array_equal(y.numpy(), x.numpy()[[0, 1, 2, 0]])
    with pytest.raises(
        tilelang.TileLangError,
        match=r"argument 'x_ptr' of kernel 'copy' is an address, but the shape \(m,\) of the tensor the "
        r"kernel makes of it has 'm', which no other argument gives; pass the tensor itself",
    ):
        k(x.data_ptr(), y)


def test_handle_and_match_buffer():
    @T.prim_func
    def fill(a: T.handle, n: T.int32):
        A = T.match_buffer(a, (n, 4), dtype=T.float32, align=16)
        with T.Kernel(n, threads=4) as bx:
            for j in T.Parallel(4):
                A[bx, j] = T.cast(bx * 10 + j, T.float32)

    k = tilelang.compile(fill, target="cpu")
    out = np.full((3, 4), np.nan, np.float32)
    k(out, 3)
    np.testing.assert_array_equal(out, np.arange(3)[:, None] * 10.0 + np.arange(4))
    out2 = torch.full((3, 4), float("nan"))
    k(out2.data_ptr(), 3)
    np.testing.assert_array_equal(out2.numpy(), out)
    assert "a: T.ptr" in fill.script()
    assert 'a = T.make_tensor(a, (n, 4), "float32")' in fill.script()


def test_pointer_tables_are_int64_tensors_of_addresses():
    @T.prim_func
    def gather(ptrs: T.Tensor((4,), T.ptr), out: T.Tensor((4,), T.int64)):
        with T.Kernel(1, threads=4) as _:
            for i in T.Parallel(4):
                out[i] = ptrs[i]

    src = gather.buffer_map[gather.params[0]]
    assert src.dtype == "int64"
    assert [int(d) for d in src.shape] == [4]
    k = tilelang.compile(gather, target="cpu")
    ptrs = torch.from_numpy(rng.integers(1, 1 << 40, 4)).to(torch.int64)
    out = torch.empty(4, dtype=torch.int64)
    k(ptrs, out)
    np.testing.assert_array_equal(out.numpy(), ptrs.numpy())


def test_misuses_of_a_pointer_are_named():
    with pytest.raises(
        tilelang.TileLangError,
        match=r"parameter 'p' of T.prim_func 'f' is a pointer \(T.ptr\); make it a tensor first",
    ):

        @T.prim_func
        def f(p: T.ptr, Y: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=4) as _:
                Y[0] = p[0]

    with pytest.raises(
        tilelang.TileLangError,
        match=r"pointer parameter 'p' of T.prim_func 'g' is never made a tensor",
    ):

        @T.prim_func
        def g(p: T.ptr, Y: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=4) as _:
                Y[0] = 1.0

    with pytest.raises(
        tilelang.TileLangError,
        match=r"pointer parameter 'p' was already made a tensor of shape \(4,\)",
    ):

        @T.prim_func
        def h(p: T.ptr, Y: T.Tensor((4,), T.float32)):
            A = T.make_tensor(p, (4,), T.float32)
            B = T.make_tensor(p, (8,), T.float32)
            with T.Kernel(1, threads=4) as _:
                Y[0] = A[0] + B[0]

    with pytest.raises(
        tilelang.TileLangError,
        match=r"T.make_tensor\(p, ...\) is inside a `with T.Kernel\(...\)` block; make the tensor "
        r"of a pointer parameter before the kernel",
    ):

        @T.prim_func
        def inside(p: T.ptr, Y: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=4) as bx:
                X = T.make_tensor(p, (bx + 4,), T.float32)
                Y[0] = X[0]


def test_eager_functions_take_pointer_parameters():
    @tilelang.jit(target="cpu")
    def axpy(X: T.ptr, Y: T.ptr, n: int, alpha: float = 2.0, block: int = 16):
        X = T.make_tensor(X, (n,), T.float32)
        Y = T.make_tensor(Y, (n,), T.float32)
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = Y[bx * block + i] + alpha * X[bx * block + i]

    x = torch.from_numpy(rng.standard_normal(40).astype(np.float32))
    y0 = torch.from_numpy(rng.standard_normal(40).astype(np.float32))
    y = y0.clone()
    axpy(x, y, 40)
    np.testing.assert_allclose(y.numpy(), y0.double().numpy() + 2.0 * x.double().numpy(), rtol=1e-6)
    y2 = y0.clone()
    axpy(x.data_ptr(), y2.data_ptr(), 40)
    np.testing.assert_array_equal(y2.numpy(), y.numpy())
    with pytest.raises(
        tilelang.TileLangError,
        match=r"argument 'X' \(parameter 0 of kernel 'axpy'\) has dtype float16, expected float32",
    ):
        axpy(x.half(), y, 40)

    @tilelang.jit(target="cpu")
    def unused(P: T.ptr, Y: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                Y[i] = 1.0

    with pytest.raises(
        tilelang.TileLangError, match=r"pointer parameter 'P' of 'unused' is never made a tensor"
    ):
        unused(x, torch.empty(4))


def table_kernel(G, N, M):
    @T.prim_func
    def main(
        srcs: T.Tensor((G,), T.ptr),
        dsts: T.Tensor((G,), T.ptr),
        rows: T.Tensor((G,), T.int32),
        out: T.Tensor((G, N), T.float16),
    ):
        with T.Kernel(G, threads=32) as bx:
            Src = T.make_tensor(srcs[bx], (N,), T.float16)
            Dst = T.make_tensor(dsts[bx], (rows[bx], M), T.float32)
            tile = T.alloc_shared((16, M), T.float32)
            for i in T.serial(N):
                out[bx, i] = Src[i]
            for i, j in T.Parallel(16, M):
                tile[i, j] = T.cast(Src[(i * M + j) % N], T.float32) * 2.0
            T.copy(tile, Dst[0, 0])  # rows past rows[bx] are not written

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_tensors_at_addresses_read_from_a_table(target):
    G, N, M = 3, 24, 8
    k = tilelang.compile(table_kernel(G, N, M), target=target)
    srcs = [torch.from_numpy(rng.standard_normal(N).astype(np.float16)) for _ in range(G)]
    rows = [16, 5, 11]
    dsts = [torch.full((rows[g] + 2, M), -7.0) for g in range(G)]  # 2 sentinel rows each
    out = torch.empty(G, N, dtype=torch.float16)
    k(
        torch.tensor([s.data_ptr() for s in srcs]),
        torch.tensor([d.data_ptr() for d in dsts]),
        torch.tensor(rows, dtype=torch.int32),
        out,
    )
    np.testing.assert_array_equal(out.numpy(), torch.stack(srcs).numpy())
    for g in range(G):
        src64 = srcs[g].double().numpy()
        want = (2.0 * src64[(np.arange(16)[:, None] * M + np.arange(M)) % N])[: rows[g]]
        np.testing.assert_array_equal(dsts[g][: rows[g]].double().numpy(), want)
        np.testing.assert_array_equal(dsts[g][rows[g] :].numpy(), -7.0)


def test_tensors_at_addresses_refuse_slices_and_non_addresses():
    with pytest.raises(
        tilelang.TileLangError,
        match=r"a tensor made by T.make_tensor of an address takes 1 indices .* slices of it are "
        r"not supported",
    ):

        @T.prim_func
        def sliced(ptrs: T.Tensor((2,), T.ptr), Y: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=4) as _:
                X = T.make_tensor(ptrs[0], (4,), T.float32)
                T.copy(X[0:4], Y)

    with pytest.raises(
        tilelang.TileLangError,
        match=r"T.make_tensor takes a pointer parameter \(`a_ptr: T.ptr`\) or a 64-bit address",
    ):

        @T.prim_func
        def not_an_address(ptrs: T.Tensor((2,), T.int32), Y: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=4) as _:
                X = T.make_tensor(ptrs[0], (4,), T.float32)
                Y[0] = X[0]

    @T.prim_func
    def table(ptrs: T.Tensor((2,), T.ptr), Y: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=4) as _:
            X = T.make_tensor(ptrs[0], (4,), T.float32)
            Y[0] = X[0]

    with pytest.raises(
        tilelang.TileLangError,
        match=r"a tensor made of an address read in the kernel .* is not supported on Metal",
    ):
        tilelang.compile(table, target="metal").get_kernel_source()
