"""TileLang's `tilelang.jit.diagnostics.jit_phase` and TILELANG_JIT_DIAGNOSTICS: the
phases of a compile logged on `tilelang.jit.diagnostics`, and KernelCache.cached, which
compiles through the kernel cache as the phase "cache.compile"."""

import logging

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.cache.kernel_cache import KernelCache
from tilelang.env import env
from tilelang.jit.diagnostics import diagnostics_enabled, jit_phase


@pytest.fixture
def phases(caplog, monkeypatch):
    monkeypatch.setattr(logging.getLogger("tilelang"), "propagate", True)
    caplog.set_level(logging.INFO, logger="tilelang.jit.diagnostics")
    return caplog


def _messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "tilelang.jit.diagnostics"]


def add_one(n):
    @T.prim_func
    def add_one_kernel(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                B[i] = A[i] + 1.0

    return add_one_kernel


def test_phase_logs_start_done_and_context(phases):
    with jit_phase("unit.phase", enabled=True, kernel="k", target="cuda -arch=sm_90a"):
        pass
    start, done = _messages(phases)
    assert start == "TileLang JIT phase start: unit.phase kernel='k', target='cuda -arch=sm_90a'"
    assert done.startswith("TileLang JIT phase done: unit.phase elapsed=")
    assert done.endswith("s kernel='k', target='cuda -arch=sm_90a'")


def test_phase_logs_a_failure_and_reraises(phases):
    with pytest.raises(ValueError, match="boom"), jit_phase("unit.fail", enabled=True, backend="x"):
        raise ValueError("boom")
    failed = [r for r in phases.records if "failed" in r.getMessage()]
    assert failed[0].getMessage().startswith("TileLang JIT phase failed: unit.fail elapsed=")
    assert failed[0].exc_info[0] is ValueError and "backend='x'" in failed[0].getMessage()


def test_phases_are_off_by_default(phases, monkeypatch):
    monkeypatch.delenv("TILELANG_JIT_DIAGNOSTICS", raising=False)
    assert not diagnostics_enabled() and not env.is_jit_diagnostics_enabled()
    assert diagnostics_enabled(verbose=True)
    with jit_phase("unit.silent"):
        pass
    tilelang.disable_cache()
    try:
        tilelang.compile(add_one(8), out_idx=[1], target="cpu")
    finally:
        tilelang.enable_cache()
    assert _messages(phases) == []


def test_environment_switch_logs_each_compile(phases, monkeypatch):
    monkeypatch.setenv("TILELANG_JIT_DIAGNOSTICS", "1")
    assert env.is_jit_diagnostics_enabled()
    kernel = tilelang.compile(add_one(16), out_idx=[1], target="cpu")
    a = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a + 1.0, rtol=1e-6)
    messages = _messages(phases)
    context = "backend='native', kernel='add_one_kernel', target='cpu'"
    assert messages[0] == f"TileLang JIT phase start: compile {context}"
    assert messages[1].startswith("TileLang JIT phase done: compile elapsed=")
    assert messages[1].endswith(context)


def test_kernel_cache_cached_compiles_through_the_cache(phases, monkeypatch, tmp_path):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILELANG_JIT_DIAGNOSTICS", "1")
    kernel = KernelCache().cached(add_one(24), out_idx=[1], target="cpu", verbose=False)
    a = np.random.default_rng(1).standard_normal(24).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a + 1.0, rtol=1e-6)
    assert (KernelCache._get_cache_root() / kernel.cache_key).is_dir()  # stored on disk
    messages = _messages(phases)
    assert messages[0] == (
        "TileLang JIT phase start: cache.compile backend='auto', kernel='add_one_kernel', "
        "target='cpu'"
    )
    assert messages[1].startswith("TileLang JIT phase start: compile")
    assert messages[-1].startswith("TileLang JIT phase done: cache.compile")
    with pytest.raises(TypeError, match="takes func and out_idx positionally"):
        KernelCache().cached(add_one(24), [1], 3, target="cpu")


def test_a_failed_compile_is_logged_as_failed(phases, monkeypatch):
    monkeypatch.setenv("TILELANG_JIT_DIAGNOSTICS", "1")
    with pytest.raises(ValueError, match="unknown execution_backend 'bogus'"):
        KernelCache().cached(add_one(8), out_idx=[1], target="cpu", execution_backend="bogus")
    messages = _messages(phases)
    assert messages[-1].startswith("TileLang JIT phase failed: cache.compile")
    assert "backend='bogus'" in messages[-1]
