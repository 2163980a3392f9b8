"""None for a tensor parameter the kernel body never accesses (TileLang's jit/nullptr:
an unused Bias): passed as a null pointer on every target and in exported kernels; a
parameter the kernel accesses still refuses None, naming it."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

N = 256
NONE_MESSAGE = (
    "argument 'Bias' (parameter 2 of kernel 'main') is None; expected a tensor of dtype float32 "
    "(only the outputs named by out_idx may be None or left out)"
)
TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "metal -emulate"]


def scaled(with_bias):
    @T.prim_func
    def main(
        A: T.Tensor((N,), T.float32),
        C: T.Tensor((N,), T.float32),
        Bias: T.Tensor((N,), T.float32),
    ):
        with T.Kernel(N // 64, threads=64) as bx:
            for i in T.Parallel(64):
                C[bx * 64 + i] = A[bx * 64 + i] * 3.0
            if with_bias:
                for i in T.Parallel(64):
                    C[bx * 64 + i] += Bias[bx * 64 + i]

    return main


def inputs():
    rng = np.random.default_rng(36)
    return rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


@pytest.mark.parametrize("target", TARGETS)
def test_unused_tensor_takes_none(target):
    kernel = tilelang.compile(scaled(False), target=target)
    a, bias = inputs()
    c = np.full(N, 7.0, np.float32)
    kernel(a, c, None)
    np.testing.assert_allclose(c, a.astype(np.float64) * 3.0, rtol=1e-5, atol=1e-5)
    # A tensor is still accepted (and ignored) there, and the signature says so.
    c2 = np.full(N, 7.0, np.float32)
    kernel(a, c2, bias)
    np.testing.assert_allclose(c2, a.astype(np.float64) * 3.0, rtol=1e-5, atol=1e-5)
    assert "check Bias: " in kernel.get_host_source()
    assert "never accessed: None passes a null pointer" in kernel.get_host_source()


@pytest.mark.parametrize("target", TARGETS)
def test_accessed_tensor_refuses_none(target):
    kernel = tilelang.compile(scaled(True), target=target)
    a, bias = inputs()
    c = np.zeros(N, np.float32)
    with pytest.raises(TypeError) as e:
        kernel(a, c, None)
    assert NONE_MESSAGE in str(e.value)
    kernel(a, c, bias)
    np.testing.assert_allclose(c, a.astype(np.float64) * 3.0 + bias, rtol=1e-5, atol=1e-5)
    assert "never accessed" not in kernel.get_host_source()


def test_none_for_unused_tensor_with_out_idx_and_torch():
    torch = pytest.importorskip("torch")

    @tilelang.jit(out_idx=[1], target="cuda -arch=sm_80 -emulate")
    def factory(with_bias):
        return scaled(with_bias)

    a, _ = inputs()
    c = factory(False)(torch.from_numpy(a), None)
    np.testing.assert_allclose(c.numpy(), a.astype(np.float64) * 3.0, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError) as e:
        factory(True)(torch.from_numpy(a), None)
    assert NONE_MESSAGE in str(e.value)


def test_exported_kernel_keeps_the_record(tmp_path):
    for with_bias in (False, True):
        kernel = tilelang.compile(scaled(with_bias), target="cpu")
        path = str(tmp_path / f"k{int(with_bias)}")
        kernel.export_library(path)
        loaded = tilelang.jit.load_kernel(path)
        a, bias = inputs()
        c = np.zeros(N, np.float32)
        if with_bias:
            with pytest.raises(TypeError) as e:
                loaded(a, c, None)
            assert NONE_MESSAGE in str(e.value)
            loaded(a, c, bias)
            np.testing.assert_allclose(c, a.astype(np.float64) * 3.0 + bias, rtol=1e-5, atol=1e-5)
        else:
            loaded(a, c, None)
            np.testing.assert_allclose(c, a.astype(np.float64) * 3.0, rtol=1e-5, atol=1e-5)


def test_signature_records_unused_tensors_only():
    unused = tilelang.compile(scaled(False), target="cpu").kernel
    used = tilelang.compile(scaled(True), target="cpu").kernel

    def never_accessed(k):
        n = len(k.param_names)
        return {
            k.param_names[i]
            for i in range(n)
            if k.param_is_tensor(i) and not k.param_is_accessed(i)
        }

    assert never_accessed(unused) == {"Bias"}
    assert never_accessed(used) == set()
    assert "unused Bias" in unused.signature_text
