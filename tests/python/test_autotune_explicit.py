"""A call of an @autotune kernel that gives tuned parameters (keys of the configs) is not
tuned, as in TileLang: the call is compiled as given, with the function's defaults for the
tuned parameters it leaves out. Nothing is benchmarked and the result cache is neither read
nor written. Tuning is made impossible here (the tuner's compile and timing steps and the
result cache raise), so a test that passes proves no benchmarking happened."""

import logging
import os

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.autotuner import AutoTuner, result_cache
from tilelang.utils.target import available_targets

CONFIGS = [{"block": 8, "scale": 2}, {"block": 16, "scale": 3}]


def offset_scale(N, block=8, scale=2):
    """B[i] = A[i] * scale + (i // block): the output shows both tuned values."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=1) as bx:
            for i in T.serial(block):
                B[bx * block + i] = A[bx * block + i] * scale + bx

    return main


def expected(a, block, scale):
    return a * scale + (np.arange(a.shape[0]) // block).astype(np.float32)


tuned = tilelang.autotune(configs=CONFIGS, warmup=1, rep=2)(
    tilelang.jit(out_idx=[1], target="cpu")(offset_scale)
)


@tilelang.autotune(configs=CONFIGS, warmup=1, rep=2)
@tilelang.jit(out_idx=[1], target="cpu")
def no_default_block(N, block, scale=2):
    return offset_scale(N, block, scale)


def eager_configs(A):  # takes fewer parameters than the kernel: only the call's tensor
    return [{"block": 16}, {"block": 64}]


@tilelang.autotune(configs=eager_configs, warmup=1, rep=2)
@tilelang.jit(target="cpu")
def eager_scale(A, factor=3.0, block=16):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=1) as bx:
        for i in T.serial(block):
            if bx * block + i < N:
                B[bx * block + i] = A[bx * block + i] * factor + bx
    return B


@tilelang.autotune(configs=[{"block": 8}, {"block": 32}], warmup=1, rep=2)
@tilelang.jit(target="cpu")
def eager_row_sums(a, block=8, scale=1.0):
    """o[i] = scale * sum(a[i, :]) + (i // block): sized only by T.const, as TileLang's
    gemv example's kernel that it compiles with `.compile(M=..., N=..., block_M=...)`."""
    M, N = T.const("M, N")
    a: T.Tensor((M, N), T.float32)
    o = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block), threads=1) as bx:
        for i in T.serial(block):
            if bx * block + i < M:
                o[bx * block + i] = bx
                for j in T.serial(N):
                    o[bx * block + i] += a[bx * block + i, j] * scale
    return o


def row_sums(a, block, scale=1.0):
    rows = np.arange(a.shape[0]) // block
    return scale * a.astype(np.float64).sum(axis=1) + rows


# A fresh disk cache for this module, as test_autotuner.py makes one (autouse).
from test_autotuner import cache_dir  # noqa: F401


@pytest.fixture
def no_tuning(monkeypatch):
    """Any compile of the config list, timing or result-cache access fails the test."""

    def forbidden(what):
        def fail(*args, **kwargs):
            raise AssertionError(f"{what} was called")

        return fail

    monkeypatch.setattr(AutoTuner, "_compile_configs", forbidden("compiling the configs"))
    monkeypatch.setattr(AutoTuner, "_tune", forbidden("tuning"))
    monkeypatch.setattr(result_cache, "load", forbidden("reading the result cache"))
    monkeypatch.setattr(result_cache, "store", forbidden("writing the result cache"))


def _entries(cache_dir):  # noqa: F811
    path = os.path.join(cache_dir, "autotuner")
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


A = np.random.default_rng(0).standard_normal(64).astype(np.float32)


def test_all_tuned_parameters_by_keyword_or_position_compile_that_config(no_tuning, cache_dir):  # noqa: F811
    before = _entries(cache_dir)
    kernel = tuned(64, block=32, scale=5)  # values outside the configs are fine
    assert isinstance(kernel, tilelang.JITKernel)
    np.testing.assert_allclose(kernel(A), expected(A, 32, 5), rtol=1e-6)
    result = tuned.last_result
    assert result.kernel is kernel and not result.tuned
    assert result.config == kernel.config == {"block": 32, "scale": 5}
    assert result.latency is None and result.cache_path is None and not result.from_cache
    assert "not tuned" in repr(result)
    # the same values positionally
    np.testing.assert_allclose(tuned(64, 32, 5)(A), expected(A, 32, 5), rtol=1e-6)
    assert tuned.last_result.config == {"block": 32, "scale": 5}
    # a config of the list, given in full, is compiled alone too
    np.testing.assert_allclose(tuned(64, block=16, scale=3)(A), expected(A, 16, 3), rtol=1e-6)
    assert _entries(cache_dir) == before


def test_a_partial_set_takes_the_defaults_for_the_rest(no_tuning, caplog):
    with caplog.at_level(logging.INFO, logger="tilelang"):
        kernel = tuned(64, scale=7)
    np.testing.assert_allclose(kernel(A), expected(A, 8, 7), rtol=1e-6)  # block's default: 8
    assert tuned.last_result.config == {"block": 8, "scale": 7}
    assert "the call gives scale=7; compiling config {'block': 8, 'scale': 7}" in caplog.text
    assert "(block: the function's defaults)" in caplog.text
    # the imperative API follows the same rule; a positional tuned value counts as given
    result = AutoTuner.from_kernel(offset_scale, CONFIGS).set_compile_args(target="cpu").run(64, 16)
    assert not result.tuned and result.config == {"block": 16, "scale": 2}
    out = np.zeros_like(A)
    result.kernel(A, out)
    np.testing.assert_allclose(out, expected(A, 16, 2), rtol=1e-6)


def test_an_eager_kernel_runs_the_given_config(no_tuning):
    a = np.random.default_rng(1).standard_normal(100).astype(np.float32)
    out = eager_scale(a, block=32)  # the configs callable only takes A
    np.testing.assert_allclose(out, a * 3.0 + (np.arange(100) // 32).astype(np.float32), rtol=1e-6)
    assert eager_scale.last_result.config == {"block": 32}
    assert not eager_scale.last_result.tuned


def test_t_const_values_and_a_config_compile_that_config(no_tuning):
    kernel = eager_row_sums.compile(M=40, N=24, block=32, scale=0.5)
    assert isinstance(kernel, tilelang.JITKernel)
    assert kernel.config == {"block": 32} and not eager_row_sums.last_result.tuned
    a = np.random.default_rng(1).standard_normal((40, 24)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), row_sums(a, 32, 0.5), rtol=1e-5, atol=1e-5)


def test_t_const_values_alone_tune_for_those_sizes(cache_dir):  # noqa: F811
    kernel = eager_row_sums.compile(M=72, N=16)
    result = eager_row_sums.last_result
    assert result.tuned and result.config in ({"block": 8}, {"block": 32})
    a = np.random.default_rng(2).standard_normal((72, 16)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), row_sums(a, result.config["block"]), rtol=1e-5, atol=1e-5)
    # the same sizes again: the decision is remembered, nothing is tuned twice
    assert eager_row_sums.compile(M=72, N=16).config == result.config
    # a kernel for other sizes is a different kernel
    b = a[:40, :8].copy()
    other = eager_row_sums.compile(M=40, N=8)
    np.testing.assert_allclose(other(b), row_sums(b, other.config["block"]), rtol=1e-5, atol=1e-5)


def test_t_const_values_with_tensors_or_without_compile_are_clear_errors(no_tuning):
    a = np.ones((8, 8), np.float32)
    with pytest.raises(TypeError, match=r"got T.const values \['N'\] beside 1 positional"):
        eager_row_sums.compile(a, N=8, block=8)
    with pytest.raises(TypeError, match=r"eager_row_sums\(\) was given T.const values instead of "):
        eager_row_sums(M=8, N=8, block=8)
    with pytest.raises(TypeError, match=r"lacks T.const values \['N'\]"):
        eager_row_sums.compile(M=8, block=8)


def test_inconsistent_calls_are_clear_errors(no_tuning):
    with pytest.raises(
        TypeError,
        match=r"the call gives scale=3, so tuning is skipped and every tuned parameter needs a "
        r"value, but 'block' has no default: expected a value for 'block' \(the configs try "
        r"8, 16\), given none",
    ):
        no_default_block(64, scale=3)
    with pytest.raises(TypeError, match=r"offset_scale\(N, block=8, scale=2\): multiple values "):
        tuned(64, 32, block=32)
    with pytest.raises(TypeError, match=r"offset_scale\(N, block=8, scale=2\): missing a required"):
        tuned(block=32, scale=5)


def test_the_result_cache_neither_overrides_nor_records_given_values(cache_dir):  # noqa: F811
    # Tune for real (N = 48, a size no other test uses): one entry is written.
    before = _entries(cache_dir)
    best = tuned(48).config
    assert tuned.last_result.tuned and not tuned.last_result.from_cache
    written = sorted(set(_entries(cache_dir)) - set(before))
    assert len(written) == 1
    path = os.path.join(cache_dir, "autotuner", written[0])
    with open(path) as f:
        text = f.read()
    # Giving the other config: compiled as given, the cached best is not used, the entry
    # is untouched and no entry is added.
    other = next(c for c in CONFIGS if c != best)
    a = A[:48]
    kernel = tuned(48, **other)
    np.testing.assert_allclose(kernel(a), expected(a, other["block"], other["scale"]), rtol=1e-6)
    assert tuned.last_result.config == other and not tuned.last_result.tuned
    assert sorted(set(_entries(cache_dir)) - set(before)) == written
    with open(path) as f:
        assert f.read() == text
    # A call that gives nothing tuned still finds the tuned result.
    assert tuned(48).config == best


@pytest.mark.skipif(
    "cuda" not in available_targets(), reason="needs NVRTC (libnvrtc.so) for the cuda target"
)
def test_a_cuda_target_without_a_gpu_compiles_the_given_config(no_tuning):
    # TileLang's examples call their tuned kernels with every tuned value on the path that
    # does not tune; that must not need a GPU to benchmark on.
    @tilelang.autotune(configs=[{"block": 64}, {"block": 128}], warmup=1, rep=2)
    @tilelang.jit(out_idx=[1], target="cuda -arch=sm_90a")
    def double(N, block=64):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
                for i in T.Parallel(block):
                    B[bx * block + i] = A[bx * block + i] * 2

        return main

    kernel = double(1024, block=128)
    assert kernel.config == {"block": 128}
    assert "(bx * 128)" in kernel.get_kernel_source()
    # the same function called without the tuned value would tune (here: forbidden)
    with pytest.raises(AssertionError, match="reading the result cache was called"):
        double(1024)
