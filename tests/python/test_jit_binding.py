"""How a `@tilelang.jit` call keys its kernel (tilelang/jit/binding.py), as in TileLang:
calls that bind to the same arguments share one kernel, `.func.parse_args` gives the
key, a repeated call form skips the binding, unhashable values are refused by name."""

import dataclasses

import numpy as np
import pytest
import tilelang
import tilelang.language as T


def scale_kernel(n, scale):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                B[i] = A[i] * scale

    return main


@tilelang.jit(out_idx=[1], target="cpu")
def scaled(n: int, scale: float = 2.0, opts=None):
    return scale_kernel(n, scale.item() if isinstance(scale, np.generic) else scale)


def _run(kernel, n, scale):
    a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a * np.float32(scale), rtol=1e-6)


def test_call_forms_that_bind_alike_share_one_kernel():
    k = scaled(16)
    assert scaled(16, 2.0) is k and scaled(n=16) is k and scaled(scale=2.0, n=16) is k
    assert scaled.func.parse_args(16) == (((16, (float, "2.0"), None), None), {})
    assert scaled.func.parse_args(n=16, scale=2.0)[0] == scaled.func.parse_args(16)[0]
    _run(k, 16, 2.0)
    other = scaled(16, 3.0)
    assert other is not k
    _run(other, 16, 3.0)


def test_int_and_float_values_are_different_kernels():
    assert scaled(8, 1) is not scaled(8, 1.0)
    assert scaled(8, 0.0) is not scaled(8, -0.0)
    _run(scaled(8, -0.0), 8, -0.0)
    assert scaled(8, np.float32(3.0)) is not scaled(8, np.float32(4.0))
    _run(scaled(8, np.float32(4.0)), 8, 4.0)


def test_lists_and_dicts_key_by_value():
    k = scaled(12, 2.0, opts=[1, 2])
    assert scaled(12, 2.0, opts=[1, 2]) is k
    assert scaled(12, 2.0, opts=(1, 2)) is not k  # a tuple is not a list
    assert scaled(12, opts={"b": 1, "a": [2]}) is scaled(12, opts={"a": [2], "b": 1})


def test_a_repeated_call_form_skips_binding(monkeypatch):
    k = scaled(20, 5.0)

    def no_binding(*args, **kwargs):
        raise AssertionError("bound again")

    monkeypatch.setattr(scaled.func, "parse_args", no_binding)
    assert scaled(20, 5.0) is k
    with pytest.raises(AssertionError, match="bound again"):  # a new form binds
        scaled(n=20, scale=5.0)
    monkeypatch.undo()
    scaled._call_form_cache.clear()
    assert scaled(n=20, scale=5.0) is k


def test_binding_errors_name_the_function():
    with pytest.raises(
        TypeError, match=r"scaled\(n: int, scale: float = 2.0, opts=None\): multiple values"
    ):
        scaled.func.parse_args(16, n=16)
    with pytest.raises(TypeError, match="missing a required argument: 'n'"):
        scaled(scale=1.0)


@dataclasses.dataclass
class Config:  # eq without frozen: unhashable
    axis: int


def test_an_unhashable_value_is_refused_by_name():
    with pytest.raises(
        TypeError,
        match=r"Unsupported unhashable JIT compile-time cache key value of type Config: "
        r"Config\(axis=0\) \(argument 'opts' of 'scaled'\)",
    ):
        scaled(8, opts=Config(0))


def test_func_calls_the_factory():
    assert scaled.func.__name__ == "scaled" and scaled.func.__code__ is scaled.factory.__code__
    assert scaled.func(8, 2.0).name == "main"
    with pytest.raises(ValueError, match="mode must be 'lazy' or 'eager'"):
        scaled.func.set_mode("fast")


@tilelang.jit(target="cpu")
def eager_scale(A, scale: float = 3.0, **meta):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(1, threads=1):
        for i in T.serial(N):
            B[i] = A[i] * scale
    return B


def test_eager_phase1_key_leaves_tensors_out():
    a = np.random.default_rng(3).standard_normal(10).astype(np.float32)
    key, tensors, values = eager_scale.func._parse_phase1_key(a, tag=[1])
    assert key == ((float, "3.0"), (("tag", (list, (1,))),))
    assert list(tensors) == ["A"] and tensors["A"] is a
    assert values == {"scale": 3.0, "tag": [1]}
    (key, tensor_key), tensors = eager_scale.func.parse_args(a)
    assert key == ((float, "3.0"),) and list(tensors) == ["A"]
    assert tensor_key == (("A", ("tensor", "float32", (10,))),)
    np.testing.assert_allclose(eager_scale(a), a * 3.0, rtol=1e-6)
