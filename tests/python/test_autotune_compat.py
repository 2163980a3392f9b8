"""TileLang's autotuner API beyond tuning itself: the tuner's compile_args / profile_args
as CompileArgs / ProfileArgs, generate_cache_key (what keys the result cache, and that a
closure callback turns the cache off), manual_check_prog, `__return_kernel` and the
in-memory `_tuner_cache` of @autotune functions with do_not_specialize. Kernels run on
the cpu target with small sizes."""

import inspect
import os

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.autotuner import AutoTuner, set_autotune_inputs
from tilelang.autotuner.param import CompileArgs, ProfileArgs

CONFIGS = [{"block": 8, "scale": 2.0}, {"block": 16, "scale": 3.0}]


def offset_scale(N, block=8, scale=2.0):
    """B[i] = A[i] * scale + (i // block)."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=1) as bx:
            for i in T.serial(block):
                if bx * block + i < N:
                    B[bx * block + i] = A[bx * block + i] * scale + bx

    return main


def expected(a, block, scale):
    return a * scale + (np.arange(a.shape[0]) // block).astype(np.float32)


def ref_scale_two(A):
    """The reference of the configs with scale 2 (block 8)."""
    return expected(np.asarray(A, dtype=np.float32), 8, 2.0)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILELANG_AUTO_TUNING_DISABLE_CACHE", raising=False)
    return str(tmp_path)


def _key(compile_args=None, profile_args=None):
    tuner = AutoTuner(offset_scale, configs=CONFIGS)
    tuner.compile_args = compile_args or CompileArgs(out_idx=[1], target="cpu")
    tuner.profile_args = profile_args or ProfileArgs()
    return tuner.generate_cache_key(inspect.signature(offset_scale).parameters, {"N": 64})


def test_compile_and_profile_args_read_and_assign_as_dataclasses():
    tuner = AutoTuner(offset_scale, configs=CONFIGS)
    tuner.set_compile_args(out_idx=[1], target="cpu").set_profile_args(warmup=3, skip_check=True)
    assert isinstance(tuner.compile_args, CompileArgs) and tuner.compile_args.out_idx == [1]
    assert tuner.compile_args.target == "cpu" and tuner.compile_args.execution_backend == "auto"
    assert isinstance(tuner.profile_args, ProfileArgs)
    assert (tuner.profile_args.warmup, tuner.profile_args.skip_check) == (3, True)
    tuner.profile_args = ProfileArgs(rep=7)  # replaces every profile setting
    assert (tuner.profile_args.rep, tuner.profile_args.warmup) == (7, 25)
    assert tuner.profile_args.skip_check is False
    tuner.compile_args = CompileArgs(out_idx=-1, target="cpu")
    assert tuner.compile_args.out_idx == -1
    with pytest.raises(
        TypeError, match=r"set_profile_args\(\) got unknown argument\(s\) \['wramup'\]"
    ):
        tuner.profile_args = {"wramup": 3}


def test_cache_key_follows_outputs_checks_and_inputs():
    base = _key()
    assert base == _key() and len(base) == 64
    assert base != _key(compile_args=CompileArgs(out_idx=[0], target="cpu"))
    assert base != _key(profile_args=ProfileArgs(skip_check=True))
    assert base != _key(profile_args=ProfileArgs(cache_input_tensors=True))
    assert base != _key(profile_args=ProfileArgs(atol=0.5))
    # a module-level function without captured state is named by its source
    with_ref = _key(profile_args=ProfileArgs(ref_prog=ref_scale_two))
    assert with_ref is not None and with_ref != base


def test_cache_key_is_none_for_callbacks_without_identity():
    factor = 2.0

    def closure(A):
        return A * factor

    for field in ("ref_prog", "supply_prog", "manual_check_prog"):
        assert _key(profile_args=ProfileArgs(**{field: closure})) is None


def test_run_publishes_under_generate_cache_key(cache_dir):
    tuner = AutoTuner(offset_scale, configs=CONFIGS)
    tuner.set_compile_args(out_idx=[1], target="cpu")
    tuner.set_profile_args(warmup=1, rep=2, ref_prog=ref_scale_two)
    result = tuner.run(64)
    key = tuner.generate_cache_key(inspect.signature(offset_scale).parameters, {"N": 64})
    assert result.cache_path == os.path.join(cache_dir, "autotuner", f"{key}.json")
    assert os.path.exists(result.cache_path)
    assert result.config == CONFIGS[0]  # the scale-3 config fails the check
    a = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(result.kernel(a), expected(a, 8, 2.0), rtol=1e-6)


def test_a_closure_reference_tunes_without_the_disk_cache(cache_dir):
    seen = []

    def ref(A):
        seen.append(1)
        return ref_scale_two(A)

    tuner = AutoTuner(offset_scale, configs=CONFIGS)
    tuner.set_compile_args(out_idx=[1], target="cpu").set_profile_args(
        warmup=1, rep=2, ref_prog=ref
    )
    first = tuner.run(64)
    assert first.cache_path is None and not first.from_cache and first.config == CONFIGS[0]
    assert not os.path.exists(os.path.join(cache_dir, "autotuner"))
    calls = len(seen)
    second = tuner.run(64)  # tuned again: the reference ran again
    assert not second.from_cache and len(seen) > calls


def test_manual_check_prog_decides_which_configs_are_right(cache_dir):
    checked = []

    def check(outputs, ref_outputs):
        assert len(outputs) == len(ref_outputs) == 1
        got, want = np.asarray(outputs[0]), np.asarray(ref_outputs[0])
        checked.append(got.shape)
        assert np.allclose(got, want, atol=1e-5), "outputs differ"

    tuner = AutoTuner(offset_scale, configs=CONFIGS)
    tuner.set_compile_args(out_idx=[1], target="cpu")
    tuner.set_profile_args(warmup=1, rep=2, ref_prog=ref_scale_two, manual_check_prog=check)
    result = tuner.run(40)
    assert checked == [(40,), (40,)]
    assert result.config == CONFIGS[0]
    assert list(result.failures.values()) == ["wrong result: outputs differ"]


def test_manual_check_prog_must_be_callable():
    kernel = tilelang.compile(offset_scale(16), out_idx=[1], target="cpu")
    with pytest.raises(TypeError, match="manual_check_prog must be callable"):
        kernel.get_profiler().manual_assert_close(ref_scale_two, manual_check_prog=3)


@tilelang.autotune(configs=[{"block": 8}, {"block": 32}], warmup=1, rep=2)
@tilelang.jit(target="cpu")
def eager_offset(A, block=8):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=1) as bx:
        for i in T.serial(block):
            if bx * block + i < N:
                B[bx * block + i] = A[bx * block + i] * 2.0 + bx
    return B


def test_return_kernel_gives_the_best_jit_kernel_of_an_eager_function(cache_dir):
    a = np.random.default_rng(2).standard_normal(100).astype(np.float32)
    kernel = eager_offset(a, __return_kernel=True)
    assert isinstance(kernel, tilelang.JITKernel)
    block = eager_offset.last_result.config["block"]
    np.testing.assert_allclose(kernel(a), expected(a, block, 2.0), rtol=1e-6)
    np.testing.assert_allclose(eager_offset(a), expected(a, block, 2.0), rtol=1e-6)


@tilelang.autotune(configs=CONFIGS, warmup=1, rep=2, do_not_specialize=["N"])
@tilelang.jit(out_idx=[1], target="cpu")
def tuned_once(N, block=8, scale=2.0):
    return offset_scale(N, block, scale)


def test_tuner_cache_reuses_the_config_across_do_not_specialize_values(cache_dir, monkeypatch):
    tuned_once._tuner_cache.clear()
    first = tuned_once(64)
    assert len(tuned_once._tuner_cache) == 1
    ((kernel, config),) = tuned_once._tuner_cache.values()
    assert kernel is first and config in CONFIGS

    def no_tuning(*args, **kwargs):
        raise AssertionError("tuned again")

    monkeypatch.setattr(tuned_once.tuner, "run", no_tuning)
    second = tuned_once(N=96)  # N is not specialized on: the entry's config, built for 96
    assert len(tuned_once._tuner_cache) == 1
    a = np.random.default_rng(3).standard_normal(96).astype(np.float32)
    np.testing.assert_allclose(second(a), expected(a, config["block"], config["scale"]), rtol=1e-6)
    # a tuned value given in the call is another key
    with pytest.raises(AssertionError, match="tuned again"):
        tuned_once(64, block=16)
    monkeypatch.undo()
    tuned_once._tuner_cache.clear()
    tuned_once(64)  # cleared: goes to the tuner again
    assert len(tuned_once._tuner_cache) == 1


@tilelang.autotune(configs=[{"block": 8}, {"block": 16}], warmup=1, rep=2)
@tilelang.jit(target="cpu")
def add_scalar(N=64, block=8):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), s: T.float32):
        with T.Kernel(T.ceildiv(N, block), threads=1) as bx:
            for i in T.serial(block):
                A[bx * block + i] += s

    return main


def test_a_scalar_input_needs_set_autotune_inputs(cache_dir):
    with pytest.raises(
        ValueError,
        match=r"kernel 'main' takes the scalar 's' \(float32\), which the tuner cannot generate; "
        r"give the kernel's inputs with `with set_autotune_inputs\(...\)`",
    ):
        add_scalar()
    tune_a = np.random.default_rng(4).standard_normal(64).astype(np.float32)
    with set_autotune_inputs(tune_a.copy(), 0.5):
        kernel = add_scalar()
    a = np.random.default_rng(5).standard_normal(64).astype(np.float32)
    before = a.copy()
    kernel(a, 0.25)
    np.testing.assert_allclose(a, before + 0.25, rtol=1e-6)
