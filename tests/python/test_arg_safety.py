"""Memory safety of kernel arguments: what a hostile or careless caller passes is
refused by the C++ runtime with an error naming the parameter, what was expected and
what was given, on the cpu target and on the emulated CUDA target, before any
generated code runs. Cases that would crash the process if the check were missing run
in a subprocess. Read-only arrays stay valid for the parameters a kernel only reads;
which parameters a kernel writes is read off its IR at compile time (the kernel
signature's `readonly` records)."""

import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T

torch = pytest.importorskip("torch")

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
N = 64
rng = np.random.default_rng(20261205)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@T.prim_func
def add(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
    with T.Kernel(1, threads=N) as _:
        for i in T.Parallel(N):
            C[i] = A[i] + B[i]


@T.prim_func
def widen(A: T.Tensor((N,), "bfloat16"), B: T.Tensor((N,), "float32")):
    with T.Kernel(1, threads=N) as _:
        for i in T.Parallel(N):
            B[i] = T.cast(A[i], "float32")


@T.prim_func
def affine(
    A: T.Tensor((N,), "float32"),
    k: T.int32,
    u: T.uint32,
    s: T.float32,
    B: T.Tensor((N,), "float32"),
):
    with T.Kernel(1, threads=N) as _:
        for i in T.Parallel(N):
            B[i] = A[i] * s + T.cast(k, "float32") + T.cast(u, "float32")


n = T.dynamic("n")


@T.prim_func
def copy_dyn(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
    with T.Kernel(1, threads=1) as _:
        for i in T.serial(n):
            B[i] = A[i]


_cache = {}


def kernel(func, target, out_idx=None):
    key = (id(func), target, str(out_idx))
    if key not in _cache:
        _cache[key] = tilelang.compile(func, out_idx=out_idx, target=target)
    return _cache[key]


def read_only(a):
    a = a.copy()
    a.flags.writeable = False
    return a


class Producer:
    """A DLPack producer that is neither numpy nor torch (its arrays go through the
    runtime's generic DLPack reader); read-only when the array it wraps is."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def run_isolated(tmp_path, code):
    """Runs `code` (a script: kernels need a source file) in a fresh interpreter, where
    a missing check would crash it rather than pytest; returns its stdout and fails on a
    signal or a nonzero exit."""
    script = tmp_path / "isolated.py"
    script.write_text(textwrap.dedent(code))
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        check=False,
        text=True,
        env=dict(os.environ),
        timeout=600,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# ---- written parameters, read off the IR


def test_signature_records_which_parameters_the_kernel_writes():
    bM = 16

    @T.prim_func
    def mixed(
        A: T.Tensor((bM, bM), "float32"),
        B: T.Tensor((bM, bM), "float32"),
        C: T.Tensor((bM, bM), "float32"),
        D: T.Tensor((bM,), "float32"),
        E: T.Tensor((bM,), "float32"),
        F: T.Tensor((bM,), "float32"),
    ):
        with T.Kernel(1, threads=128) as _:
            A_s = T.alloc_shared((bM, bM), "float32")
            B_s = T.alloc_shared((bM, bM), "float32")
            C_f = T.alloc_fragment((bM, bM), "float32")
            T.copy(A, A_s)  # A: read by a copy
            T.copy(B, B_s)
            T.clear(C_f)
            T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C)  # C: the destination of a copy
            for i in T.Parallel(bM):
                T.atomic_add(D[i], F[i])  # D: atomics; F: read by a load
            T.fill(E, 2.0)  # E: filled

    k = tilelang.compile(mixed, target="cpu")
    text = k.kernel.signature_text
    readonly = {line.split()[1] for line in text.splitlines() if line.startswith("readonly ")}
    assert readonly == {"A", "B", "F"}, text
    assert "check A: tensor float32(16, 16) on cpu, strides (16, 1), may be read-only" in (
        k.get_host_source()
    )
    assert "check C: tensor float32(16, 16) on cpu, strides (16, 1), writable" in (
        k.get_host_source()
    )
    a, b, f = rand(bM, bM), rand(bM, bM), rand(bM)
    c, d, e = np.empty((bM, bM), np.float32), rand(bM), np.empty(bM, np.float32)
    d0 = d.copy()
    k(read_only(a), read_only(b), c, d, e, read_only(f))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d, d0 + f, rtol=1e-6)
    np.testing.assert_array_equal(e, np.full(bM, 2.0, np.float32))
    for name, i in (("C", 2), ("D", 3), ("E", 4)):
        args = [a, b, c, d, e, f]
        args[i] = read_only(args[i])
        with pytest.raises(
            tilelang.TileLangError,
            match=rf"argument '{name}' \(parameter {i} of kernel 'mixed'\) is read-only, "
            "but the kernel writes it",
        ):
            k(*args)


EXTERN = """
#if defined(__CUDACC__) && !defined(TL_EMULATE)
__device__
#endif
inline void tl_argsafety_twice(const float* src, float* dst, int n) {
  for (int i = 0; i < n; ++i) dst[i] = 2.0f * src[i];
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_access_ptr_masks_decide_what_is_written(target):
    @T.prim_func
    def twice(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=1) as _:
            T.import_source(EXTERN)
            T.call_extern(
                "handle", "tl_argsafety_twice", T.access_ptr(A, "r"), T.access_ptr(B, "w"), N
            )

    @T.prim_func
    def twice_unmasked(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=1) as _:
            T.import_source(EXTERN)
            # An address without a mask may be written through: A counts as written.
            T.call_extern(
                "handle", "tl_argsafety_twice", T.address_of(A[0]), T.access_ptr(B, "w"), N
            )

    a = rand(N)
    k = tilelang.compile(twice, target=target)
    assert "readonly A" in k.kernel.signature_text
    assert "readonly B" not in k.kernel.signature_text
    b = np.empty(N, np.float32)
    k(read_only(a), b)
    np.testing.assert_allclose(b, 2 * a, rtol=1e-6)
    with pytest.raises(tilelang.TileLangError, match=r"argument 'B' .* is read-only"):
        k(a, read_only(b))
    k2 = tilelang.compile(twice_unmasked, target=target)
    assert "readonly" not in k2.kernel.signature_text
    with pytest.raises(tilelang.TileLangError, match=r"argument 'A' .* is read-only"):
        k2(read_only(a), b)


# ---- read-only arrays


def read_only_arrays(tmp_path):
    """(label, a read-only array holding `values`) for each kind of read-only array."""
    values = rand(N)
    path = tmp_path / "values.bin"
    values.tofile(path)
    yield "writeable=False", read_only(values), values
    yield "memmap mode=r", np.memmap(path, np.float32, mode="r"), values
    yield "frombuffer(bytes)", np.frombuffer(values.tobytes(), np.float32), values
    yield "DLPack producer", Producer(read_only(values)), values
    yield "memoryview(bytes)", memoryview(values.tobytes()).cast("f"), values


@pytest.mark.parametrize("target", TARGETS)
def test_read_only_arrays_work_for_parameters_the_kernel_reads(target, tmp_path):
    k = kernel(add, target)
    for label, ro, values in read_only_arrays(tmp_path):
        b, c = rand(N), np.empty(N, np.float32)
        k(ro, b, c)
        np.testing.assert_allclose(c, values + b, rtol=1e-6, err_msg=label)


@pytest.mark.parametrize("target", TARGETS)
def test_read_only_arrays_are_refused_for_written_parameters(target, tmp_path):
    k = kernel(add, target)
    a, b = rand(N), rand(N)
    for _label, ro, values in read_only_arrays(tmp_path):
        with pytest.raises(
            tilelang.TileLangError,
            match=r"argument 'C' \(parameter 2 of kernel 'add'\) is read-only, but the kernel "
            r"writes it; pass a writable array",
        ):
            k(a, b, ro)
        np.testing.assert_array_equal(np.asarray(getattr(ro, "array", ro)), values)
    # A writable array through the same generic reader is accepted.
    c = np.empty(N, np.float32)
    k(a, b, Producer(c))
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    # The kernel object under the JITKernel checks the same way.
    with pytest.raises(tilelang.TileLangError, match=r"argument 'C' .* is read-only"):
        k.kernel([a, b, read_only(c)])
    with pytest.raises(
        TypeError,
        match=r"argument 'C' \(parameter 2 of kernel 'add'\): kernel arguments must be tensors",
    ):
        k.kernel([a, b, "out"])


@pytest.mark.parametrize("target", TARGETS)
def test_writing_a_read_only_memmap_does_not_crash(target, tmp_path):
    # Without the check the kernel's stores hit a read-only mapping: SIGSEGV.
    out = run_isolated(
        tmp_path,
        f"""
        import numpy as np, tilelang, tilelang.language as T
        @T.prim_func
        def add(A: T.Tensor(({N},), "float32"), B: T.Tensor(({N},), "float32"),
                C: T.Tensor(({N},), "float32")):
            with T.Kernel(1, threads={N}) as _:
                for i in T.Parallel({N}):
                    C[i] = A[i] + B[i]
        k = tilelang.compile(add, target={target!r})
        np.ones({N}, np.float32).tofile({str(tmp_path / "c.bin")!r})
        c = np.memmap({str(tmp_path / "c.bin")!r}, np.float32, mode="r")
        try:
            k(np.ones({N}, np.float32), np.ones({N}, np.float32), c)
        except tilelang.TileLangError as e:
            print("refused:", e)
        """,
    )
    assert "refused: argument 'C' (parameter 2 of kernel 'add') is read-only" in out


# ---- relabelled dtypes: the (array, dtype) form


@pytest.mark.parametrize("target", TARGETS)
def test_relabelling_to_a_dtype_of_the_same_size_works(target):
    k = kernel(widen, target)
    values = rand(N).astype(ml_dtypes.bfloat16)
    expected = values.astype(np.float32)
    b = np.empty(N, np.float32)
    k((values.view(np.uint16), "bfloat16"), b)
    np.testing.assert_array_equal(b, expected)
    b = np.empty(N, np.float32)
    k(values, b)  # an ml_dtypes array: the same relabelling, done by tilelang
    np.testing.assert_array_equal(b, expected)
    tb = torch.empty(N)
    k((torch.from_numpy(values.view(np.int16).copy()), "bfloat16"), tb)
    np.testing.assert_array_equal(tb.numpy(), expected)
    b = np.empty(N, np.float32)
    k(read_only(values), b)  # a read-only ml_dtypes array, for a parameter only read
    np.testing.assert_array_equal(b, expected)


@pytest.mark.parametrize("target", TARGETS)
def test_relabelling_to_a_dtype_of_another_size_is_refused(target):
    k = kernel(widen, target)
    b = np.empty(N, np.float32)
    cases = [
        (np.arange(N, dtype=np.uint8), 1, N),  # half the bytes the kernel reads
        (rand(N), 4, 4 * N),
        (torch.arange(N, dtype=torch.uint8), 1, N),
        (torch.rand(N), 4, 4 * N),
    ]
    for array, itemsize, nbytes in cases:
        with pytest.raises(
            tilelang.TileLangError,
            match=rf"argument 'A' \(parameter 0 of kernel 'widen'\) is a buffer of {itemsize}-byte "
            rf"elements \({nbytes} bytes\) relabelled as bfloat16, whose elements take 2 bytes: "
            rf"the kernel would touch {2 * N} bytes",
        ):
            k((array, "bfloat16"), b)


@pytest.mark.parametrize("target", TARGETS)
def test_relabelled_out_of_bounds_read_does_not_crash(target, tmp_path):
    # 1 MiB of bytes read as 1 Mi float64 would read 7 MiB past the buffer.
    out = run_isolated(
        tmp_path,
        f"""
        import numpy as np, tilelang, tilelang.language as T
        M = 1 << 20
        @T.prim_func
        def total(A: T.Tensor((M,), "float64"), B: T.Tensor((1,), "float64")):
            with T.Kernel(1, threads=1) as _:
                B[0] = 0.0
                for i in T.serial(M):
                    B[0] = B[0] + A[i]
        k = tilelang.compile(total, target={target!r})
        try:
            k((np.ones(M, np.uint8), "float64"), np.zeros(1))
        except tilelang.TileLangError as e:
            print("refused:", e)
        """,
    )
    assert "refused: argument 'A' (parameter 0 of kernel 'total') is a buffer of 1-byte" in out


# ---- alignment


def misaligned(values, offset=4):
    """A copy of float32 `values` whose data starts `offset` bytes past a 16-byte boundary."""
    raw = np.empty(values.nbytes + 32, np.uint8)
    start = (-raw.ctypes.data) % 16 + offset
    out = raw[start : start + values.nbytes].view(np.float32)
    out[:] = values
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_misaligned_data_is_refused_for_cuda_kernels(target):
    # CUDA lowering moves tensors in 16-byte vectors from offsets relative to their
    # start; on a GPU a misaligned vector access faults (the emulator refuses the same
    # calls the GPU would). The cpu target's code assumes nothing of the address.
    k = kernel(add, target)
    a, b = misaligned(rand(N)), rand(N)
    c = np.empty(N, np.float32)
    tc = torch.empty(N + 1)[1:]  # 4 bytes past torch's aligned storage
    if target == "cpu":
        k(a, b, c)
        np.testing.assert_allclose(c, a + b, rtol=1e-6)
        k(torch.from_numpy(a), torch.from_numpy(b), tc)
        np.testing.assert_allclose(tc.numpy(), a + b, rtol=1e-6)
        return
    with pytest.raises(
        tilelang.TileLangError,
        match=r"argument 'A' \(parameter 0 of kernel 'add'\) starts at address 0x[0-9a-f]+, not a "
        r"multiple of 16 bytes: the cuda -arch=sm_80 -emulate kernel may move it in vectors",
    ):
        k(a, b, c)
    with pytest.raises(tilelang.TileLangError, match=r"argument 'C' .* not a multiple of 16 bytes"):
        k(torch.from_numpy(rand(N)), torch.from_numpy(b), tc)
    assert "data 16-byte aligned" in k.get_host_source()


# ---- None


@pytest.mark.parametrize("target", TARGETS)
def test_none_is_refused_for_an_input(target):
    k = kernel(add, target)
    a, b, c = rand(N), rand(N), np.empty(N, np.float32)
    expected = (
        r"argument 'A' \(parameter 0 of kernel 'add'\) is None; expected a tensor of dtype float32 "
        r"\(only the outputs named by out_idx may be None or left out\)"
    )
    with pytest.raises(TypeError, match=expected):
        k(None, b, c)
    with pytest.raises(TypeError, match=expected):
        k.run([None, b, c])
    k_out = kernel(add, target, out_idx=[-1])
    with pytest.raises(TypeError, match=expected):
        k_out(None, b)
    with pytest.raises(TypeError, match=expected):
        k_out.run([None, b])
    # None where out_idx names an output still allocates it.
    np.testing.assert_allclose(k_out.run([a, b, None])[2], a + b, rtol=1e-6)
    np.testing.assert_allclose(k_out(a, b), a + b, rtol=1e-6)


# ---- integer scalars


@pytest.mark.parametrize("target", TARGETS)
def test_integer_scalars_in_range_are_exact(target):
    k = kernel(affine, target, out_idx=[-1])
    a = rand(N)
    for kv, uv in ((2**31 - 1, 0), (-(2**31), 2**32 - 1), (True, np.uint32(7)), (np.int64(-5), 3)):
        expected = (
            a.astype(np.float64) * 0.5 + float(np.float32(int(kv))) + float(np.float32(int(uv)))
        )
        np.testing.assert_allclose(k(a, kv, uv, 0.5), expected, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_integer_scalars_outside_their_dtype_are_refused(target):
    k = kernel(affine, target, out_idx=[-1])
    a = rand(N)
    cases = [
        (
            (2**31, 0),
            (
                "'k' \\(parameter 1 of kernel 'affine'\\) is 2147483648, outside the range "
                "\\[-2147483648, 2147483647\\] of its dtype int32; it would be truncated"
            ),
        ),
        ((-(2**31) - 1, 0), "'k' .* is -2147483649, outside the range"),
        ((np.int64(2**40), 0), "'k' .* is 1099511627776, outside the range"),
        (
            (0, -1),
            (
                "'u' \\(parameter 2 of kernel 'affine'\\) is -1, outside the range "
                "\\[0, 4294967295\\] of its dtype uint32"
            ),
        ),
        ((0, 2**32), "'u' .* is 4294967296, outside the range \\[0, 4294967295\\]"),
        ((0, 2**64 - 1), "'u' .* is 18446744073709551615, outside the range"),
        ((2**70, 0), "'k' .* is an integer wider than 64 bits, outside the range"),
        ((-(2**70), 0), "'k' .* is an integer wider than 64 bits"),
    ]
    for (kv, uv), message in cases:
        with pytest.raises(tilelang.TileLangError, match="argument " + message):
            k(a, kv, uv, 1.0)


@pytest.mark.parametrize("target", TARGETS)
def test_floats_are_refused_for_integer_scalars(target):
    k = kernel(affine, target, out_idx=[-1])
    a = rand(N)
    for value in (1.5, 2.0, np.float32(3.0), float("nan")):
        with pytest.raises(
            tilelang.TileLangError,
            match=r"argument 'k' \(parameter 1 of kernel 'affine'\) must be an integer \(int32\), "
            "got a float",
        ):
            k(a, value, 0, 1.0)
    with pytest.raises(tilelang.TileLangError, match=r"argument 's' .* wider than 64 bits"):
        k(a, 0, 0, 2**70)


# ---- symbolic dims and torch tensors


@pytest.mark.parametrize("target", TARGETS)
def test_symbolic_dim_outside_its_dtype_is_refused(target):
    k = kernel(copy_dyn, target)
    huge = 2**31  # elements: n (int32) would wrap to a negative count
    one = np.zeros(1, np.float32)
    view = np.lib.stride_tricks.as_strided(one, shape=(huge,), strides=(0,), writeable=False)
    message = (
        r"argument 'A' \(parameter 0 of kernel 'copy_dyn'\) has shape \(2147483648,\): dimension 0 "
        r"is 2147483648, outside the range \[-2147483648, 2147483647\] of 'n' \(int32\)"
    )
    with pytest.raises(tilelang.TileLangError, match=message):
        k(view, view)
    t = torch.zeros(1).expand(huge)
    with pytest.raises(tilelang.TileLangError, match=message):
        k(t, t)
    a = rand(37)
    b = np.empty(37, np.float32)
    k(a, b)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("target", TARGETS)
def test_torch_tensors_go_through_the_same_checks(target):
    k = kernel(add, target)
    ta, tb = torch.from_numpy(rand(N)), torch.from_numpy(rand(N))
    tc = torch.empty(N)
    k(ta, tb, tc)
    np.testing.assert_allclose(tc.numpy(), ta.numpy() + tb.numpy(), rtol=1e-6)
    with pytest.raises(tilelang.TileLangError, match=r"argument 'B' .* has dtype float64"):
        k(ta, tb.double(), tc)
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'C' .* has stride 2 in dimension 0"
    ):
        k(ta, tb, torch.empty(2 * N)[::2])
    with pytest.raises(TypeError, match=r"argument 'A' \(parameter 0 of kernel 'add'\) is None"):
        k(None, tb, tc)
    # What the readers refuse names the parameter too, keeping the exception's type.
    with pytest.raises(
        TypeError,
        match=r"argument 'B' \(parameter 1 of kernel 'add'\): unsupported tensor dtype \(DLPack "
        r"code 5, 64 bits\)",
    ):
        k(ta, torch.zeros(N, dtype=torch.complex64), tc)
    with pytest.raises(
        TypeError,
        match=r"argument 'C' \(parameter 2 of kernel 'add'\): kernel arguments must be tensors",
    ):
        k(ta, tb, "out")
    with pytest.raises(
        TypeError,
        match=r"argument 'A' \(parameter 0 of kernel 'add'\): kernel arguments must be tensors .* got "
        r"<class 'numpy.ndarray'> of dtype dtype\('>f4'\), whose elements the runtime cannot read",
    ):
        k(rand(N).astype(">f4"), tb, tc)
    with pytest.raises(RuntimeError, match=r"argument 'A' \(parameter 0 of kernel 'add'\): .*meta"):
        k(torch.zeros(N, device="meta"), tb, tc)
    k_out = kernel(affine, target, out_idx=[-1])
    with pytest.raises(tilelang.TileLangError, match=r"argument 'u' .* is -1, outside the range"):
        k_out(ta, 1, -1, 1.0)
