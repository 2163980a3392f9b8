"""T.alloc_global: a global workspace that the T.Kernel blocks of one prim_func share,
allocated by the runtime on every call and hidden from the caller (kernel.params,
out_idx, the call's arguments, run(), the profiler's inputs). Checked against numpy
on the cpu target and the CUDA and Metal emulators; a split-KV decode (GQA, and MLA
with a positional part) whose combine kernel reads the partial results through two
workspaces, against a float64 reference; the errors at the user's line."""

import inspect

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.engine.lower import extract_params
from tilelang.jit import kernel as jit_kernel
from tilelang.jit import load_kernel
from tilelang.jit.metal_torch import MetalTorchLauncher

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
LOG2E = 1.4426950408889634


def line_of(func, text):
    lines, start = inspect.getsourcelines(func)
    return start + next(i for i, line in enumerate(lines) if text in line)


def split_logsumexp(num_split=4, block=32):
    """Row-wise logsumexp of X (m, n) in two kernels: the first writes each column
    slice's max and sum of exponentials into two workspaces, the second combines them.
    m and n are dynamic: the workspaces' sizes follow the argument's shape."""
    m, n = T.dynamic("m, n")

    @T.prim_func
    def lse(X: T.Tensor((m, n), "float32"), Out: T.Tensor((m,), "float32")):
        part_max = T.alloc_global((num_split, m), "float32")
        part_sum = T.alloc_global((num_split, m), "float32")
        with T.Kernel(T.ceildiv(m, block), num_split, threads=block) as (bm, s):
            width = T.ceildiv(n, num_split)
            for i in T.Parallel(block):
                row = bm * block + i
                if row < m:
                    best = T.alloc_var("float32", -T.infinity("float32"))
                    for j in T.serial(width):
                        if s * width + j < n:
                            best = T.max(best, X[row, s * width + j])
                    total = T.alloc_var("float32", 0.0)
                    for j in T.serial(width):
                        if s * width + j < n:
                            total += T.exp(X[row, s * width + j] - best)
                    part_max[s, row] = best
                    part_sum[s, row] = total
        with T.Kernel(T.ceildiv(m, block), threads=block) as bm:
            for i in T.Parallel(block):
                row = bm * block + i
                if row < m:
                    top = T.alloc_var("float32", -T.infinity("float32"))
                    for s in T.serial(num_split):
                        top = T.max(top, part_max[s, row])
                    acc = T.alloc_var("float32", 0.0)
                    for s in T.serial(num_split):
                        acc += part_sum[s, row] * T.exp(part_max[s, row] - top)
                    Out[row] = T.log(acc) + top

    return lse


def logsumexp_reference(x):
    x = x.astype(np.float64)
    top = x.max(axis=1)
    return np.log(np.exp(x - top[:, None]).sum(axis=1)) + top


@pytest.mark.parametrize("target", TARGETS)
def test_two_kernels_share_workspaces(target):
    kernel = tilelang.compile(split_logsumexp(), out_idx=[1], target=target)
    rng = np.random.default_rng(11)
    for m, n in ((70, 301), (33, 64)):  # one kernel; the workspaces sized per call
        x = (rng.standard_normal((m, n)) * 3).astype(np.float32)
        np.testing.assert_allclose(kernel(x), logsumexp_reference(x), rtol=1e-5, atol=1e-5)


def test_the_caller_never_sees_a_workspace():
    kernel = tilelang.compile(split_logsumexp(), out_idx=[1], target="cpu")
    assert [p.name for p in kernel.params] == ["X", "Out"]
    assert kernel.out_idx == [1]
    x = np.random.default_rng(12).standard_normal((40, 50)).astype(np.float32)
    want = logsumexp_reference(x)
    # All of the caller's parameters (the output given) ...
    out = np.full(40, np.nan, np.float32)
    assert kernel(x, out) is out
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    # ... and run(), which returns every parameter the caller has.
    args = kernel.run([x])
    assert len(args) == 2 and args[0] is x
    np.testing.assert_allclose(args[1], want, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match=r"kernel 'lse' takes 1 argument\(s\) \(X\), got 3"):
        kernel(x, out, np.zeros((4, 40), np.float32))
    # The profiler makes inputs for the caller's parameters only.
    kernel.get_profiler().assert_allclose(
        lambda a: logsumexp_reference(np.asarray(a)).astype(np.float32),
        rtol=1e-4,
        atol=1e-4,
        dynamic_symbolic_constraints={"m": 30, "n": 70},
    )
    # out_idx counts the caller's parameters: a workspace's index is out of range.
    with pytest.raises(ValueError, match=r"out_idx entry 2 is out of range for 2 parameter\(s\)"):
        tilelang.compile(split_logsumexp(), out_idx=[2], target="cpu")


def test_what_the_sources_show():
    func = split_logsumexp()
    assert func.params == ["X", "Out"]
    assert [p.name for p in extract_params(func)] == ["X", "Out"]
    script = func.script()
    assert 'def lse(X: T.Tensor((m, n), "float32"), Out: T.Tensor((m,), "float32")):' in script
    assert 'part_max = T.alloc_global((4, m), "float32")' in script
    kernel = tilelang.compile(func, out_idx=[1], target="cuda -arch=sm_80 -emulate")
    # The device code takes each workspace as a pointer after the caller's tensors.
    src = kernel.get_kernel_source()
    assert (
        "float* __restrict__ Out, float* __restrict__ part_max, float* __restrict__ part_sum" in src
    )
    host = kernel.get_host_source()
    assert "def lse(X, Out):" in host
    assert "    part_max = empty((4, m), float32)  # T.alloc_global" in host
    assert "args = [X.data, Out.data, part_max.data, part_sum.data, m, n]" in host


def test_torch_tensors_get_torch_workspaces_on_every_call(monkeypatch):
    torch = pytest.importorskip("torch")
    made = []
    real = jit_kernel._allocate

    def recording(shape, dtype, like):
        out = real(shape, dtype, like)
        made.append((tuple(shape), dtype, type(out).__module__.split(".")[0]))
        return out

    monkeypatch.setattr(jit_kernel, "_allocate", recording)
    kernel = tilelang.compile(split_logsumexp(), out_idx=[1], target="cuda -arch=sm_80 -emulate")
    x = torch.randn(24, 80, dtype=torch.float32)
    for _ in range(2):
        out = kernel(x)
        assert isinstance(out, torch.Tensor)
        np.testing.assert_allclose(
            out.numpy(), logsumexp_reference(x.numpy()), rtol=1e-5, atol=1e-5
        )
    # Per call: the output, then the two workspaces.
    per_call = [((24,), "float32", "torch")] + [((4, 24), "float32", "torch")] * 2
    assert made == per_call * 2


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_export_and_load_keep_the_workspaces_hidden(target, tmp_path):
    kernel = tilelang.compile(split_logsumexp(), out_idx=[1], target=target)
    path = str(tmp_path / "lse.tlk")
    kernel.export_library(path)
    loaded = load_kernel(path)
    assert [p.name for p in loaded.params] == ["X", "Out"]
    x = np.random.default_rng(13).standard_normal((50, 90)).astype(np.float32)
    np.testing.assert_allclose(loaded(x), logsumexp_reference(x), rtol=1e-5, atol=1e-5)


def test_metal_emulator_and_torch_launcher():
    @T.prim_func
    def reverse_twice(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        w = T.alloc_global((64,), "float32")
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                w[i] = X[63 - i] * 2.0
            T.sync_threads()
            for i in T.Parallel(64):
                Y[i] = w[63 - i] + X[i]

    kernel = tilelang.compile(reverse_twice, out_idx=[1], target="metal -emulate")
    x = np.random.default_rng(14).standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(kernel(x), 3.0 * x, rtol=1e-6)
    # On a Mac, torch.mps runs it: the launcher takes the same two parameters.
    metal = tilelang.compile(reverse_twice, out_idx=[1], target="metal")
    launcher = MetalTorchLauncher(metal.kernel, [1])
    assert launcher.num_visible == 2 and launcher.inputs == [0]
    assert "device float* w [[buffer(2)]]" in metal.get_kernel_source()


def test_a_workspace_is_indexed_in_64_bits_when_it_needs_to_be():
    """A workspace of 2**32 elements gets the 64-bit index arithmetic a parameter of
    that size gets (compiled only: the call would allocate 16 GiB)."""

    def func(as_workspace):
        if as_workspace:

            @T.prim_func
            def big(X: T.Tensor((4,), "float32"), Y: T.Tensor((4,), "float32")):
                W = T.alloc_global((65536, 65536), "float32")
                with T.Kernel(4, threads=1) as b:
                    W[b * 16384 + 3, 65535] = X[b]
                with T.Kernel(4, threads=1) as b:
                    Y[b] = W[b * 16384 + 3, 65535]

            return big

        @T.prim_func
        def big(
            X: T.Tensor((4,), "float32"),
            Y: T.Tensor((4,), "float32"),
            W: T.Tensor((65536, 65536), "float32"),
        ):
            with T.Kernel(4, threads=1) as b:
                W[b * 16384 + 3, 65535] = X[b]
            with T.Kernel(4, threads=1) as b:
                Y[b] = W[b * 16384 + 3, 65535]

        return big

    for target in ("cpu", "cuda -arch=sm_80 -emulate"):
        hidden = tilelang.compile(func(True), target=target).get_kernel_source()
        param = tilelang.compile(func(False), target=target).get_kernel_source()
        assert "W[((((int64_t)((bx * 16384) + 3)) * (int64_t)65536LL)" in hidden, hidden
        assert hidden == param


def test_alloc_buffer_with_global_scope_before_the_kernels_is_a_workspace():
    @T.prim_func
    def double(X: T.Tensor((32,), "float32"), Y: T.Tensor((32,), "float32")):
        tmp = T.alloc_buffer((32,), "float32", scope="global")
        with T.Kernel(1, threads=32):
            for i in T.Parallel(32):
                tmp[i] = X[i] * 2.0
        with T.Kernel(1, threads=32):
            for i in T.Parallel(32):
                Y[i] = tmp[31 - i]

    kernel = tilelang.compile(double, out_idx=[1], target="cpu")
    x = np.random.default_rng(15).standard_normal(32).astype(np.float32)
    np.testing.assert_allclose(kernel(x), 2.0 * x[::-1], rtol=1e-6)
    assert [p.name for p in kernel.params] == ["X", "Y"]


# ---- errors


def test_inside_a_kernel_is_refused_at_its_line():
    def body():
        @T.prim_func
        def inside(X: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8):
                w = T.alloc_global((8,), "float32")  # in the kernel
                for i in T.Parallel(8):
                    w[i] = X[i]

        return inside

    with pytest.raises(tilelang.TileLangError) as err:
        body()
    msg = str(err.value)
    assert f"test_alloc_global.py:{line_of(body, '# in the kernel')}" in msg, msg
    assert "T.alloc_global('w') is inside a `with T.Kernel(...)` block" in msg, msg


def test_a_size_no_argument_binds_is_refused_at_its_line():
    def body():
        n, k = T.dynamic("n, k")

        @T.prim_func
        def unbound(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
            w = T.alloc_global((n, k), "float32")  # k is in no parameter
            with T.Kernel(1, threads=1):
                w[0, 0] = X[0]
            with T.Kernel(1, threads=1):
                Y[0] = w[0, 0]

        return unbound

    with pytest.raises(tilelang.TileLangError) as err:
        body()
    msg = str(err.value)
    assert f"test_alloc_global.py:{line_of(body, '# k is in no parameter')}" in msg, msg
    assert "dimension 1 of workspace 'w' is 'k', and no argument binds 'k'" in msg, msg


def test_other_scopes_and_negative_sizes_are_refused():
    with pytest.raises(tilelang.TileLangError, match="scope='shared' is not 'global'"):

        @T.prim_func
        def shared(X: T.Tensor((8,), "float32")):
            w = T.alloc_global((8,), "float32", scope="shared")
            with T.Kernel(1, threads=8):
                X[0] = w[0]

    with pytest.raises(
        tilelang.TileLangError, match="the shape of 'w' must not be negative; dimension 0 is -8"
    ):

        @T.prim_func
        def negative(X: T.Tensor((8,), "float32")):
            w = T.alloc_global((-8,), "float32")
            with T.Kernel(1, threads=8):
                X[0] = w[0]


def test_a_size_bound_only_by_an_omitted_output_is_refused_at_the_call():
    n = T.dynamic("n")

    @T.prim_func
    def copy_out(X: T.Tensor((4,), "float32"), Y: T.Tensor((n,), "float32")):
        w = T.alloc_global((n,), "float32")
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                w[i] = X[i % 4]
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                Y[i] = w[i] + 1.0

    kernel = tilelang.compile(copy_out, out_idx=[1], target="cpu")
    x = np.random.default_rng(16).standard_normal(4).astype(np.float32)
    with pytest.raises(
        tilelang.TileLangError,
        match=r"cannot infer the shape \(n,\) of output 'Y' of kernel 'copy_out': 'n' is not "
        r"bound by any input; pass the output tensor explicitly",
    ):
        kernel(x)
    y = np.zeros(10, np.float32)
    kernel(x, y)  # given, the output binds n
    np.testing.assert_allclose(y, np.resize(x, 10) + 1.0, rtol=1e-6)


# ---- split-KV decode: partial attention per KV slice, then a combine kernel


def combine_kernel(lse, partial, out, batch, heads, num_split, dim):
    """The second T.Kernel of both decoders: weights each split's partial output by
    exp2(its log-sum-exp minus the total one)."""
    with T.Kernel(heads, batch, threads=64) as (h, b):
        top = T.alloc_var("float32", -T.infinity("float32"))
        for s in T.serial(num_split):
            top = T.max(top, lse[b, h, s])
        total = T.alloc_var("float32", 0.0)
        for s in T.serial(num_split):
            total += T.exp2(lse[b, h, s] - top)
        lse_all = T.log2(total) + top
        acc = T.alloc_fragment((dim,), "float32")
        T.clear(acc)
        for s in T.serial(num_split):
            weight = T.exp2(lse[b, h, s] - lse_all)
            for i in T.Parallel(dim):
                acc[i] += partial[b, h, s, i] * weight
        for i in T.Parallel(dim):
            out[b, h, i] = acc[i]


combine = T.macro(combine_kernel)


def gqa_decode(batch, heads, groups, seqlen, dim, num_split, block_N=32):
    """One query per head; heads // groups query heads share each K/V head; a mask
    (b, s, group) drops positions. Kernel 1: one block per (batch, group, split)
    runs online softmax over its slice of the sequence."""
    rows = heads // groups  # query heads per K/V head: the gemm's M
    slice_len = seqlen // num_split
    scale = dim**-0.5 * LOG2E

    @T.prim_func
    def gqa(
        Q: T.Tensor((batch, heads, dim), "float16"),
        K: T.Tensor((batch, seqlen, groups, dim), "float16"),
        V: T.Tensor((batch, seqlen, groups, dim), "float16"),
        mask: T.Tensor((batch, seqlen, groups), "uint8"),
        Out: T.Tensor((batch, heads, dim), "float16"),
    ):
        lse = T.alloc_global((batch, heads, num_split), "float32")
        partial = T.alloc_global((batch, heads, num_split, dim), "float32")
        with T.Kernel(batch, groups, num_split, threads=128) as (b, g, s):
            q_s = T.alloc_shared((rows, dim), "float16")
            k_s = T.alloc_shared((block_N, dim), "float16")
            v_s = T.alloc_shared((block_N, dim), "float16")
            scores = T.alloc_fragment((rows, block_N), "float32")
            probs = T.alloc_fragment((rows, block_N), "float16")
            acc = T.alloc_fragment((rows, dim), "float32")
            row_max = T.alloc_fragment((rows,), "float32")
            prev_max = T.alloc_fragment((rows,), "float32")
            rescale = T.alloc_fragment((rows,), "float32")
            row_sum = T.alloc_fragment((rows,), "float32")
            denom = T.alloc_fragment((rows,), "float32")
            T.copy(Q[b, g * rows : (g + 1) * rows, :], q_s)
            T.fill(acc, 0)
            T.fill(denom, 0)
            T.fill(row_max, -T.infinity("float32"))
            for t in T.Pipelined(slice_len // block_N, num_stages=2):
                start = s * slice_len + t * block_N
                T.copy(K[b, start : start + block_N, g, :], k_s)
                T.copy(V[b, start : start + block_N, g, :], v_s)
                T.clear(scores)
                T.gemm(q_s, k_s, scores, transpose_B=True)
                for i, j in T.Parallel(rows, block_N):
                    scores[i, j] = T.if_then_else(
                        mask[b, start + j, g] != 0, scores[i, j], -T.infinity("float32")
                    )
                T.copy(row_max, prev_max)
                T.reduce_max(scores, row_max, dim=1, clear=False)
                for i in T.Parallel(rows):
                    rescale[i] = T.exp2(prev_max[i] * scale - row_max[i] * scale)
                for i, j in T.Parallel(rows, block_N):
                    scores[i, j] = T.exp2(scores[i, j] * scale - row_max[i] * scale)
                T.reduce_sum(scores, row_sum, dim=1)
                for i in T.Parallel(rows):
                    denom[i] = denom[i] * rescale[i] + row_sum[i]
                T.copy(scores, probs)
                for i, j in T.Parallel(rows, dim):
                    acc[i, j] *= rescale[i]
                T.gemm(probs, v_s, acc)
            for i, j in T.Parallel(rows, dim):
                partial[b, g * rows + i, s, j] = acc[i, j] / denom[i]
            for i in T.Parallel(rows):
                lse[b, g * rows + i, s] = T.log2(denom[i]) + row_max[i] * scale
        combine(lse, partial, Out, batch, heads, num_split, dim)

    return gqa


def mla_decode(batch, heads, seqlen, dim, pe_dim, num_split, block_N=32):
    """DeepSeek MLA decode: one latent KV head whose `dim` part is both key and value,
    plus a positional part (Q_pe, K_pe) that only adds to the scores."""
    slice_len = seqlen // num_split
    scale = (dim + pe_dim) ** -0.5 * LOG2E

    @T.prim_func
    def mla(
        Q: T.Tensor((batch, heads, dim), "float16"),
        Q_pe: T.Tensor((batch, heads, pe_dim), "float16"),
        KV: T.Tensor((batch, seqlen, dim), "float16"),
        K_pe: T.Tensor((batch, seqlen, pe_dim), "float16"),
        Out: T.Tensor((batch, heads, dim), "float16"),
    ):
        lse = T.alloc_global((batch, heads, num_split), "float32")
        partial = T.alloc_global((batch, heads, num_split, dim), "float32")
        with T.Kernel(batch, num_split, threads=128) as (b, s):
            q_s = T.alloc_shared((heads, dim), "float16")
            qpe_s = T.alloc_shared((heads, pe_dim), "float16")
            kv_s = T.alloc_shared((block_N, dim), "float16")
            kpe_s = T.alloc_shared((block_N, pe_dim), "float16")
            scores = T.alloc_fragment((heads, block_N), "float32")
            probs = T.alloc_fragment((heads, block_N), "float16")
            acc = T.alloc_fragment((heads, dim), "float32")
            row_max = T.alloc_fragment((heads,), "float32")
            prev_max = T.alloc_fragment((heads,), "float32")
            rescale = T.alloc_fragment((heads,), "float32")
            row_sum = T.alloc_fragment((heads,), "float32")
            denom = T.alloc_fragment((heads,), "float32")
            T.copy(Q[b, :, :], q_s)
            T.copy(Q_pe[b, :, :], qpe_s)
            T.fill(acc, 0)
            T.fill(denom, 0)
            T.fill(row_max, -T.infinity("float32"))
            for t in T.Pipelined(slice_len // block_N, num_stages=2):
                start = s * slice_len + t * block_N
                T.copy(KV[b, start : start + block_N, :], kv_s)
                T.copy(K_pe[b, start : start + block_N, :], kpe_s)
                T.clear(scores)
                T.gemm(q_s, kv_s, scores, transpose_B=True)
                T.gemm(qpe_s, kpe_s, scores, transpose_B=True)
                T.copy(row_max, prev_max)
                T.reduce_max(scores, row_max, dim=1, clear=False)
                for i in T.Parallel(heads):
                    rescale[i] = T.exp2(prev_max[i] * scale - row_max[i] * scale)
                for i, j in T.Parallel(heads, block_N):
                    scores[i, j] = T.exp2(scores[i, j] * scale - row_max[i] * scale)
                T.reduce_sum(scores, row_sum, dim=1)
                for i in T.Parallel(heads):
                    denom[i] = denom[i] * rescale[i] + row_sum[i]
                T.copy(scores, probs)
                for i, j in T.Parallel(heads, dim):
                    acc[i, j] *= rescale[i]
                T.gemm(probs, kv_s, acc)
            for i, j in T.Parallel(heads, dim):
                partial[b, i, s, j] = acc[i, j] / denom[i]
            for i in T.Parallel(heads):
                lse[b, i, s] = T.log2(denom[i]) + row_max[i] * scale
        combine(lse, partial, Out, batch, heads, num_split, dim)

    return mla


def attention_reference(torch, q, k, v, scale, keep=None):
    """softmax(q k^T * scale) v in float64; q (b, h, d), k and v (b, h, s, d)."""
    scores = torch.einsum("bhd,bhsd->bhs", q.double(), k.double()) * scale
    if keep is not None:
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.einsum("bhs,bhsd->bhd", torch.softmax(scores, dim=-1), v.double())


@pytest.mark.parametrize("target", ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"])
def test_gqa_split_kv_decode(target):
    torch = pytest.importorskip("torch")
    batch, heads, groups, seqlen, dim, num_split = 2, 32, 2, 256, 64, 4
    kernel = tilelang.compile(
        gqa_decode(batch, heads, groups, seqlen, dim, num_split), out_idx=[4], target=target
    )
    assert [p.name for p in kernel.params] == ["Q", "K", "V", "mask", "Out"]
    gen = torch.Generator().manual_seed(17)
    q = torch.randn(batch, heads, dim, generator=gen).half()
    k = torch.randn(batch, seqlen, groups, dim, generator=gen).half()
    v = torch.randn(batch, seqlen, groups, dim, generator=gen).half()
    mask = (torch.rand(batch, seqlen, groups, generator=gen) < 0.7).to(torch.uint8)
    mask[:, ::32, :] = 1  # every block of 32 positions keeps one
    out = kernel(q, k, v, mask)
    rows = heads // groups
    k_h = k.permute(0, 2, 1, 3).repeat_interleave(rows, dim=1)  # (b, h, s, d)
    v_h = v.permute(0, 2, 1, 3).repeat_interleave(rows, dim=1)
    keep = mask.permute(0, 2, 1).repeat_interleave(rows, dim=1).bool()
    want = attention_reference(torch, q, k_h, v_h, dim**-0.5, keep)
    np.testing.assert_allclose(out.double().numpy(), want.numpy(), rtol=1e-2, atol=2e-3)


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_mla_split_kv_decode(target):
    torch = pytest.importorskip("torch")
    batch, heads, seqlen, dim, pe_dim, num_split = 1, 16, 256, 64, 16, 2
    kernel = tilelang.compile(
        mla_decode(batch, heads, seqlen, dim, pe_dim, num_split), out_idx=[4], target=target
    )
    gen = torch.Generator().manual_seed(18)
    q = torch.randn(batch, heads, dim, generator=gen).half()
    q_pe = torch.randn(batch, heads, pe_dim, generator=gen).half()
    kv = torch.randn(batch, seqlen, dim, generator=gen).half()
    k_pe = torch.randn(batch, seqlen, pe_dim, generator=gen).half()
    out = kernel(q, q_pe, kv, k_pe)
    key = torch.cat([kv, k_pe], dim=-1)[:, None].expand(batch, heads, seqlen, dim + pe_dim)
    value = kv[:, None].expand(batch, heads, seqlen, dim)
    want = attention_reference(torch, torch.cat([q, q_pe], -1), key, value, (dim + pe_dim) ** -0.5)
    np.testing.assert_allclose(out.double().numpy(), want.numpy(), rtol=1e-2, atol=2e-3)
