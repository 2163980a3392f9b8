"""The JIT layer's Python contract: argument counts, out_idx, outputs allocated like the
inputs, caching of specializations, targets, backends, pass configs and cache switches."""

import importlib

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.utils.target import determine_target


def copy_kernel(n=16, dtype="float32"):
    @T.prim_func
    def copy_twice(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                B[i] = A[i]
                C[i] = A[i] * 2

    return copy_twice


@pytest.fixture(scope="module")
def kernel():
    return tilelang.compile(copy_kernel(), out_idx=[-2, -1], target="cpu")


def test_kernel_attributes(kernel):
    assert kernel.out_idx == [1, 2]
    assert [p.name for p in kernel.params] == ["A", "B", "C"]
    assert kernel.params[0].shape == [16] and kernel.params[0].dtype == "float32"
    assert kernel.target == "cpu" and kernel.execution_backend == "native"
    assert "copy_twice" in kernel.get_kernel_source()
    assert isinstance(kernel.get_host_source(), str)
    assert "def copy_twice" in kernel.prim_func.script()


def test_several_outputs_come_back_as_a_list(kernel):
    a = np.random.default_rng(1).standard_normal(16).astype(np.float32)
    b, c = kernel(a)
    assert isinstance(b, np.ndarray) and b.dtype == np.float32
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(c, a * 2)


def test_all_arguments_may_be_passed(kernel):
    a = np.random.default_rng(2).standard_normal(16).astype(np.float32)
    b, c = np.empty_like(a), np.empty_like(a)
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a * 2)


def test_wrong_argument_count(kernel):
    with pytest.raises(TypeError, match=r"kernel 'copy_twice' takes 1 argument\(s\) \(A\), got 2"):
        kernel(np.zeros(16, np.float32), np.zeros(16, np.float32))


def test_wrong_dtype_and_shape_name_the_parameter(kernel):
    with pytest.raises(tilelang.TileLangError, match="'A'.*float64.*float32"):
        kernel(np.zeros(16, np.float64))
    with pytest.raises(tilelang.TileLangError, match="'A'"):
        kernel(np.zeros(15, np.float32))


def test_no_output_returns_none():
    k = tilelang.compile(copy_kernel(4), target="cpu")
    a = np.arange(4, dtype=np.float32)
    b, c = np.zeros(4, np.float32), np.zeros(4, np.float32)
    assert k(a, b, c) is None
    np.testing.assert_array_equal(c, a * 2)


def test_lazy_jit_caches_per_arguments():
    calls = []

    @tilelang.jit(out_idx=-1, target="cpu")
    def factory(n):
        calls.append(n)
        return copy_kernel(n)

    assert factory(8) is factory(8)
    assert factory(8) is not factory(4)
    assert calls == [8, 4]


def test_lazy_jit_must_return_a_prim_func():
    @tilelang.jit
    def factory(n):
        return n

    with pytest.raises(TypeError, match="returned int; a factory must return a @T.prim_func"):
        factory(3)


@tilelang.jit(target="cpu")
def eager_scale(A, factor=2.0):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(1, threads=1):
        for i in T.serial(N):
            B[i] = A[i] * factor
    return B


def test_eager_compile_and_call():
    kernel = eager_scale.compile(N=8)
    assert isinstance(kernel, tilelang.JITKernel) and kernel.out_idx == [1]
    a = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), a * 2)
    np.testing.assert_array_equal(eager_scale(a), a * 2)
    assert len(eager_scale._kernels) == 1  # the call reused the compiled specialization
    np.testing.assert_array_equal(eager_scale(a, factor=3.0), a * 3)
    assert len(eager_scale._kernels) == 2


def test_eager_compile_checks_const_names():
    with pytest.raises(TypeError, match=r"unknown names \['Q'\] and lacks T.const values \['N'\]"):
        eager_scale.compile(Q=3)


def test_eager_tensor_must_be_declared():
    @tilelang.jit
    def forgot(A, B):
        A: T.Tensor((4,), T.float32)
        with T.Kernel(1, threads=1):
            A[0] = 1.0

    with pytest.raises(tilelang.TileLangError, match="argument 'B' .* never declares it"):
        forgot(np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_determine_target(monkeypatch):
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cpu")
    assert determine_target("auto") == "cpu"
    assert determine_target("c") == "cpu" and determine_target("llvm") == "cpu"
    assert determine_target({"kind": "cuda", "arch": "sm_90"}) == "cuda -arch=sm_90"
    with pytest.raises(ValueError, match="unknown target 'vulkan'"):
        determine_target("vulkan")


def test_emulated_arch(monkeypatch):
    """TILELANG_EMULATE_ARCH picks the arch a CUDA target without -arch is emulated as;
    an explicit -arch wins, and the emulated kernel reports the arch it was built for."""
    monkeypatch.delenv("TILELANG_DEFAULT_TARGET", raising=False)
    monkeypatch.setenv("TILELANG_EMULATE_ARCH", "sm_90a")
    tilelang.set_emulation(True)
    try:
        assert determine_target("cuda") == "cuda -arch=sm_90a -emulate"
        assert determine_target("auto") == "cuda -arch=sm_90a -emulate"
        assert determine_target("cuda -arch=sm_80") == "cuda -arch=sm_80 -emulate"
        kernel = tilelang.compile(copy_kernel(), target="cuda")
        assert "sm_90a" in str(kernel.target)
        a = np.random.randn(16).astype(np.float32)
        b, c = np.zeros_like(a), np.zeros_like(a)
        kernel(a, b, c)
        np.testing.assert_array_equal(b, a)
        np.testing.assert_array_equal(c, a * 2)
    finally:
        tilelang.set_emulation(False)


def test_unsupported_target_and_backend():
    assert tilelang.compile(copy_kernel(), target="metal").execution_backend == "torch"
    with pytest.raises(ValueError, match="unknown execution_backend 'fast'"):
        tilelang.compile(copy_kernel(), target="cpu", execution_backend="fast")
    with pytest.raises(ValueError, match="'nvrtc' is not available for target 'cpu'"):
        tilelang.compile(copy_kernel(), target="cpu", execution_backend="nvrtc")


def test_pass_configs_and_cache_switches():
    key = tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED
    assert key == "tl.disable_warp_specialized"
    assert tilelang.PassConfigKey.TL_ENABLE_FAST_MATH == "tl.enable_fast_math"
    k = tilelang.compile(copy_kernel(), target="cpu", pass_configs={key: True})
    assert k.pass_configs == {"tl.disable_warp_specialized": True}
    assert tilelang.is_cache_enabled()
    tilelang.disable_cache()
    try:
        assert not tilelang.is_cache_enabled()
        tilelang.compile(copy_kernel(), target="cpu")
    finally:
        tilelang.enable_cache()
    assert tilelang.is_cache_enabled()


def test_torch_tensors_give_torch_outputs(kernel):
    torch = pytest.importorskip("torch")
    a = torch.randn(16)
    b, c = kernel(a)
    assert isinstance(b, torch.Tensor) and torch.equal(c, a * 2)


# ---- the in-process memo of tilelang.compile


def test_compiling_the_same_prim_func_again_returns_the_same_kernel(monkeypatch):
    func = copy_kernel(8)
    first = tilelang.compile(func, out_idx=[-2, -1], target="cpu")
    builds = tilelang._C.compile_count()

    def no_compile(*args):
        raise AssertionError("a repeat compile of the same PrimFunc reached the compiler")

    monkeypatch.setattr(
        importlib.import_module("tilelang.jit.kernel"), "native_compile", no_compile
    )
    again = tilelang.compile(func, out_idx=[-2, -1], target="cpu")
    assert again is first and tilelang._C.compile_count() == builds
    a = np.random.default_rng(5).standard_normal(8).astype(np.float32)
    b, c = again(a)
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(c, a * 2)


def test_a_different_function_or_setting_is_a_new_kernel(monkeypatch):
    func = copy_kernel(8)
    outs = [-2, -1]
    base = tilelang.compile(func, out_idx=outs, target="cpu")
    # The same source traced again is another PrimFunc: a new JITKernel (the core's
    # memory cache still shares the binary).
    retraced = tilelang.compile(copy_kernel(8), out_idx=outs, target="cpu")
    assert retraced is not base and retraced.kernel is base.kernel
    variants = {
        "out_idx": tilelang.compile(func, out_idx=-1, target="cpu"),
        "backend": tilelang.compile(func, out_idx=outs, target="cpu", execution_backend="ctypes"),
        "pass_configs": tilelang.compile(
            func, out_idx=outs, target="cpu", pass_configs={"tl.disable_safe_memory_legalize": 1}
        ),
        "flags": tilelang.compile(func, out_idx=outs, target="cpu", compile_flags=["-O1"]),
    }
    assert all(k is not base for k in variants.values())
    assert len({id(k) for k in variants.values()}) == len(variants)
    assert variants["out_idx"].out_idx == [2]
    assert variants["backend"].execution_backend == "ctypes"
    assert variants["pass_configs"].pass_configs == {"tl.disable_safe_memory_legalize": 1}
    assert variants["flags"].compile_flags == ["-O1"]
    assert variants["flags"].kernel is not base.kernel  # other flags, other binary
    # Each of them is memoized under its own settings.
    assert (
        tilelang.compile(func, out_idx=outs, target="cpu", compile_flags="-O1") is variants["flags"]
    )
    # target="auto" follows TILELANG_DEFAULT_TARGET at each call.
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cpu")
    auto = tilelang.compile(func, out_idx=outs)
    assert auto.target == "cpu" and tilelang.compile(func, out_idx=outs) is auto
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cpu -mcpu=native")
    assert tilelang.compile(func, out_idx=outs) is not auto
    a = np.random.default_rng(6).standard_normal(8).astype(np.float32)
    for k in (base, retraced, variants["backend"], variants["flags"], variants["pass_configs"]):
        b, c = k(a)
        np.testing.assert_array_equal(b, a)
        np.testing.assert_array_equal(c, a * 2)
    b = np.zeros(8, np.float32)
    np.testing.assert_array_equal(variants["out_idx"](a, b), a * 2)
    np.testing.assert_array_equal(b, a)


def test_a_prim_func_whose_core_was_replaced_compiles_the_new_one():
    func = copy_kernel(8)
    old = tilelang.compile(func, out_idx=[1, 2], target="cpu")
    func.core = copy_kernel(4).core
    new = tilelang.compile(func, out_idx=[1, 2], target="cpu")
    assert new is not old and new.params[0].shape == [4]
    a = np.random.default_rng(7).standard_normal(4).astype(np.float32)
    np.testing.assert_array_equal(new(a)[1], a * 2)


def test_no_memo_while_the_cache_is_off():
    func = copy_kernel(8)
    first = tilelang.compile(func, target="cpu")
    tilelang.disable_cache()
    try:
        assert tilelang.compile(func, target="cpu") is not first
    finally:
        tilelang.enable_cache()
    assert tilelang.compile(func, target="cpu") is first


def test_jit_factory_builds_anew_when_the_default_target_changes(monkeypatch):
    import tilelang
    import tilelang.language as T

    @tilelang.jit
    def double(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(n):
                    B[i] = A[i] * 2

        return main

    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cpu")
    first = double(64)
    assert double(64) is first  # a hit
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cuda -arch=sm_80 -emulate")
    second = double(64)
    assert second is not first and "emulate" in str(second.target)
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cpu")
    assert double(64) is first
