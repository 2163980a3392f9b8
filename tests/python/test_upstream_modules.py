"""TileLang's module layout beyond tilelang.language: tilelang.cuda (the intrinsics
emitters' new home), the autotuner's set_autotune_inputs and param, par_compile, the
fp8 / dtype helpers, tilelang.env.env, and the modules whose TVM-side internals are out
of scope (their names say so)."""

import importlib
import os

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.autotuner import AutoTuner


def test_cuda_intrinsics_are_tilelang_intrinsics():
    from tilelang import intrinsics
    from tilelang.cuda import language as cuda_T
    from tilelang.cuda.intrinsics import get_swizzle_layout, make_mma_swizzle_layout
    from tilelang.cuda.intrinsics.layout import mma_layout
    from tilelang.cuda.intrinsics.layout.utils import get_mma_micro_size
    from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter

    assert TensorCoreIntrinEmitter is intrinsics.TensorCoreIntrinEmitter
    assert get_swizzle_layout is intrinsics.get_swizzle_layout
    assert make_mma_swizzle_layout is intrinsics.make_mma_swizzle_layout
    assert mma_layout.get_swizzle_layout is get_swizzle_layout
    assert get_mma_micro_size("float16") == intrinsics.get_mma_micro_size("float16")
    assert cuda_T.__tilelang_dialect__ == "cuda" and cuda_T.gemm is T.gemm
    assert set(cuda_T.__all__) == set(T.__all__)
    assert T.__tilelang_dialect__ == "cuda"  # the default T is TileLang's CUDA facade


@pytest.mark.parametrize(
    "module, name, message",
    [
        (
            "tilelang.cuda.intrinsics.macro.wgmma_macro_generator",
            "WGMMATensorCoreIntrinEmitter",
            r"WGMMATensorCoreIntrinEmitter is a TileLang internal and out of scope.*write the GEMM",
        ),
        ("tilelang.cuda", "backend", r"tilelang.cuda.backend is a TileLang internal"),
        ("tilelang.jit.adapter.wrapper", "TLCPUSourceWrapper", "TLCPUSourceWrapper"),
        ("tilelang.tools", "lower_trace", r"tilelang.tools.lower_trace is a TileLang internal"),
        ("tilelang.profiler.bench", "_bench_with_cupti", r"do_bench"),
        ("tilelang._ffi_api", "get_tcgen5_instr_desc", "tilelang._C"),
        ("tilelang.language.eager.ast", "mutate", r"eager.ast.mutate"),
        (
            "tilelang.rocm.language",
            "mfma",
            r"tilelang.rocm.language.tir.tvm_mfma .*no ROCm \(HIP\)",
        ),
        # TVM's raw vendor builtins and sm_100's GEMMs, in T as in TileLang's CUDA dialect
        ("tilelang.language", "ptx_wgmma_ss", r"cuda.language.tir.ptx_wgmma_ss .*T.wgmma_gemm"),
        ("tilelang.language", "tcgen05_mma", r"tcgen05_gemm is an sm_100 instruction"),
        (
            "tilelang.metal.language",
            "simdgroup_load",
            r"metal.language.tir.simdgroup_load .*T.gemm",
        ),
        # Submodules with no file of their own: placeholders whose names say so.
        ("tilelang.cuda.pipeline", "CUDAPassPipelineBodyPrologue", r"tilelang.cuda.pipeline.CUDA"),
        ("tilelang.jit.adapter.nvrtc.include_paths", "discover", r"nvrtc.include_paths.discover"),
        ("tilelang.layout.cute", "Layout", r"tilelang.layout.cute.Layout is a TileLang internal"),
        ("tilelang.cuda.language.intrinsics", "WGMMATensorCoreIntrinEmitter", r"T.gemm covers"),
        # carver's templates beyond Matmul, GEMV, reduction and attention
        ("tilelang.carver.template", "ConvTemplate", r"tilelang.carver.template.ConvTemplate"),
        ("tilelang.carver.roller", "PrimFuncNode", r"tilelang.carver.roller.PrimFuncNode"),
    ],
)
def test_internal_names_say_they_are_out_of_scope(module, name, message):
    """The name imports (a file that imports it loads); calling it raises, naming it."""
    module = importlib.import_module(module)
    obj = getattr(module, name)
    assert isinstance(obj, tilelang.tvm.OutOfScopeName) and getattr(module, name) is obj
    with pytest.raises(tilelang.tvm.OutOfScopeError, match=message):
        obj()


def test_sparse_layout_facts_match_gemm_sp():
    import tilelang.language as T
    from tilelang.cuda.intrinsics.sparse_layout import (
        GROUP_CONFIG,
        get_e_factor,
        get_e_replicate_factor,
    )

    assert GROUP_CONFIG[T.float16] == (2, 4) and GROUP_CONFIG["float32"] == (1, 2)
    assert get_e_factor(T.float16, T.int16) == 16 and get_e_factor(T.int8, T.int32) == 32
    assert get_e_factor("float32", "uint8") == 4
    assert get_e_replicate_factor(T.float16) == 2 and get_e_replicate_factor(T.int8) == 1
    with pytest.raises(ValueError, match="metadata must have one of the dtypes"):
        get_e_factor(T.float16, T.float16)


def test_probing_for_an_optional_backend_takes_the_fallback():
    """`try: from <internal module> import name / except ImportError:` is how code checks
    for an optional backend; the out-of-scope error must reach that fallback."""
    try:
        from tilelang.jit.adapter.cutedsl.checks import check_cutedsl_available

        available = check_cutedsl_available()
    except ImportError as err:
        available = str(err)
    assert "check_cutedsl_available is a TileLang internal and out of scope" in available


def test_unknown_modules_outside_internal_packages_stay_missing():
    with pytest.raises(ModuleNotFoundError, match="No module named 'tilelang.no_such_module'"):
        importlib.import_module("tilelang.no_such_module")
    from tilelang.cuda.language.intrinsics import TensorCoreIntrinEmitter

    assert TensorCoreIntrinEmitter is tilelang.intrinsics.TensorCoreIntrinEmitter


def test_all_dtypes_are_t_dtypes():
    from tilelang.language.dtypes import _all_dtypes

    assert {"float16", "half", "int8x4", "float32x64", "bfloat16x2"} <= set(_all_dtypes)
    for name in _all_dtypes:
        assert isinstance(getattr(T, name), tilelang.tvm.DataType), name
    assert T.int8x4.lanes == 4 and T.half == T.float16


def test_unknown_names_stay_attribute_errors():
    import tilelang.cuda.intrinsics as cuda_intrinsics

    with pytest.raises(AttributeError, match="has no attribute 'no_such_emitter'"):
        _ = cuda_intrinsics.no_such_emitter


@tilelang.jit(out_idx=[1], target="cpu")
def add_constant(n, value):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(n):
                B[i] = A[i] + value

    return main


def test_par_compile_builds_every_config_and_fills_the_jit_cache():
    configs = [(32, 1.0), {"n": 64, "value": 2.5}, (16, -3.0)]
    kernels = add_constant.par_compile(configs, num_workers=2)
    assert [k.params[0].shape for k in kernels] == [[32], [64], [16]]
    assert add_constant(32, 1.0) is kernels[0] and add_constant(n=64, value=2.5) is kernels[1]
    for (n, value), kernel in zip([(32, 1.0), (64, 2.5), (16, -3.0)], kernels):
        a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        np.testing.assert_allclose(kernel(a), a + value, rtol=1e-6)
    assert add_constant.func(8, 1.0).name == "main"
    assert "kernel 'main' for the cpu target" in add_constant.get_kernel_source(8, 2.0)
    with pytest.raises(TypeError, match="each config must be a tuple of arguments or a dict"):
        add_constant.par_compile([[32, 1.0]])


def test_tilelang_par_compile_and_ignore_error():
    from tvm.transform import PassContext

    funcs = [add_constant.func(16, 1.0), add_constant.func(24, 2.0)]
    with PassContext(config={"tl.disable_vectorize_256": True}):
        k16, k24 = tilelang.par_compile(funcs, out_idx=[1], target="cpu")
    assert k16.pass_configs == {"tl.disable_vectorize_256": True}
    a = np.random.default_rng(9).standard_normal(24).astype(np.float32)
    np.testing.assert_allclose(k24(a), a + 2.0, rtol=1e-6)

    @T.prim_func
    def one_param(A: T.Tensor((8,), "float32")):  # out_idx=[1] does not fit it
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(8):
                A[i] = A[i] * 2.0

    got = tilelang.par_compile([one_param, funcs[0]], out_idx=[1], target="cpu", ignore_error=True)
    assert got[0] is None and got[1] is not None
    with pytest.raises(ValueError, match="out_idx entry 1 is out of range for 1 parameter"):
        tilelang.par_compile([one_param], out_idx=[1], target="cpu")


@tilelang.jit(target="cpu")
def eager_scale(A, factor=2.0):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(1, threads=1) as _:
        for i in T.serial(N):
            B[i] = A[i] * factor
    return B


def test_eager_get_kernel_source():
    a = np.random.default_rng(3).standard_normal(16).astype(np.float32)
    by_call = eager_scale.get_kernel_source(a)
    by_consts = eager_scale.get_kernel_source(N=16)
    assert "kernel 'eager_scale' for the cpu target" in by_call and by_call == by_consts
    np.testing.assert_allclose(eager_scale(a), a * 2.0, rtol=1e-6)


def test_set_autotune_inputs_feeds_the_given_tensors(monkeypatch, tmp_path):
    from tilelang.autotuner import get_autotune_inputs, set_autotune_inputs

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILELANG_AUTO_TUNING_DISABLE_CACHE", "1")
    a = np.random.default_rng(4).standard_normal(32).astype(np.float32)
    seen = []

    def reference(x):
        seen.append(x)
        return x + 1.5

    def kernel(value=1.5, n=32):
        return add_constant.func(n, value)

    tuner = (
        AutoTuner.from_kernel(kernel, configs=[{"value": 1.5}, {"value": 1.5 + 1e-7}])
        .set_compile_args(out_idx=[1], target="cpu")
        .set_profile_args(warmup=1, rep=2, ref_prog=reference, timeout=60)
    )
    assert get_autotune_inputs() is None
    with set_autotune_inputs([a]):
        assert get_autotune_inputs() == [a]
        with set_autotune_inputs(a, a):
            assert len(get_autotune_inputs()) == 2
        result = tuner.run()
    assert get_autotune_inputs() is None
    assert seen and all(x is a for x in seen)  # the reference saw exactly the given tensor
    np.testing.assert_allclose(result.kernel(a), a + 1.5, rtol=1e-6, atol=1e-6)


def test_autotune_param_values():
    from tilelang.autotuner.param import AutotuneResult, CompileArgs, ProfileArgs
    from tilelang.autotuner.tuner import AutotuneResult as TunerResult

    assert AutotuneResult is TunerResult
    args = CompileArgs(out_idx=[1], target="cpu")
    assert hash(args) == hash(CompileArgs(out_idx=[1], target="cpu"))
    assert hash(args) != hash(
        CompileArgs(out_idx=[1], target="cpu", pass_configs={"tl.Simplify": 1})
    )
    kernel = args.compile_program(add_constant.func(8, 0.5))
    a = np.random.default_rng(1).standard_normal(8).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a + 0.5, rtol=1e-6)
    assert ProfileArgs().warmup == 25 and hash(ProfileArgs(rep=3)) != hash(ProfileArgs())


def test_autotune_result_is_made_as_tileangs_and_its_disk_format_is_refused():
    """TileLang's AutotuneResult(latency, config, ref_latency, libcode, func, kernel), every
    field optional; its on-disk result (save_to_disk, _save_kernel_to_disk ...) is
    TileLang's Python cache layer, refused by name as out of scope."""
    from tilelang.autotuner.param import AutotuneResult
    from tilelang.tvm import OutOfScopeError

    def f():
        return None

    r = AutotuneResult(
        latency=1.0, config={"threads": 128}, ref_latency=2.0, libcode="// c", func=f
    )
    assert (r.latency, r.config, r.ref_latency, r.libcode, r.func, r.kernel) == (
        1.0, {"threads": 128}, 2.0, "// c", f, None,
    )  # fmt: skip
    assert AutotuneResult().config is None and AutotuneResult(3.0).latency == 3.0
    for use in (
        lambda: r.save_to_disk("somewhere"),
        lambda: AutotuneResult.load_from_disk("somewhere", None),
        lambda: AutotuneResult._save_kernel_to_disk,
        lambda: r._safe_write_file,
    ):
        with pytest.raises(OutOfScopeError, match="AutotuneResult.* is a TileLang internal"):
            use()
    with pytest.raises(AttributeError):
        _ = r._repr_html_  # other names stay plain attribute errors (IPython probes these)


def test_prim_func_with_attr_renames_and_records():
    from tilelang.tvm import OutOfScopeError

    f = add_constant.func(8, 0.5)
    g = f.with_attr("global_symbol", "renamed_kernel")
    assert (g.name, g.attrs["global_symbol"], f.name) == (
        "renamed_kernel",
        "renamed_kernel",
        f.name,
    )
    kernel = tilelang.compile(g, target="cpu")
    assert "renamed_kernel" in kernel.get_kernel_source()
    a, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    kernel(a, out)
    np.testing.assert_allclose(out, a + 0.5)
    h = f.with_attr({"tilelang_out_idx": [1], "note": "kept"})
    assert h.attrs["note"] == "kept"
    np.testing.assert_allclose(tilelang.compile(h, target="cpu")(a), a + 0.5)
    with pytest.raises(
        ValueError, match="global_symbol names the kernel and must be a C identifier, got 'a b'"
    ):
        f.with_attr("global_symbol", "a b")
    with pytest.raises(OutOfScopeError, match="PrimFunc.body"):
        bool(f.body)


def test_a_kernels_adapter_is_an_out_of_scope_stand_in():
    """TileLang's JITKernel.adapter (its TVM-runtime execution backend): a stand-in whose
    use names it, where an AttributeError said nothing."""
    from tilelang.tvm import OutOfScopeError

    kernel = tilelang.compile(add_constant.func(8, 0.5), target="cpu")
    with pytest.raises(
        OutOfScopeError, match=r"JITKernel.adapter.get_exportable_executable is a TileLang internal"
    ):
        kernel.adapter.get_exportable_executable().jit()
    with pytest.raises(OutOfScopeError, match="get_kernel_source"):
        bool(kernel.adapter.prim_func)


def test_kernel_cache_internals_of_tilelangs_python_cache_are_refused():
    from tilelang.cache.kernel_cache import KernelCache
    from tilelang.tvm import OutOfScopeError

    cache = KernelCache()
    for use in (
        lambda: cache._get_cache_path("key"),
        lambda: cache.device_kernel_path,
        lambda: KernelCache._safe_write_executable,
    ):
        with pytest.raises(OutOfScopeError, match="KernelCache.* is a TileLang internal"):
            use()
    with pytest.raises(AttributeError):
        _ = cache._repr_html_
    assert not hasattr(KernelCache, "no_such_name")


def test_fp8_and_torch_dtype_helpers():
    torch = pytest.importorskip("torch")
    from tilelang.language.dtypes import _TORCH_DTYPE_TO_STR, resolve_torch_storage_dtype
    from tilelang.language.fp8 import determine_fp8_type, determine_torch_fp8_type

    assert determine_fp8_type() == T.float8_e4m3fn and determine_fp8_type("e5m2") == T.float8_e5m2
    assert determine_torch_fp8_type("e5m2") is torch.float8_e5m2
    with pytest.raises(ValueError, match="unsupported FP8 format 'e3m4'"):
        determine_fp8_type("e3m4")
    assert _TORCH_DTYPE_TO_STR[torch.float16] == "float16"
    assert _TORCH_DTYPE_TO_STR[torch.int8] == "int8"  # not int4, which torch stores as int8
    assert _TORCH_DTYPE_TO_STR[torch.float] == "float32"
    assert resolve_torch_storage_dtype(T.float16) == T.float16
    assert resolve_torch_storage_dtype(T.int4) == T.int8


def test_gemm_fragment_8x8_layouts():
    from tilelang.layout import make_gemm_fragment_8x8, make_gemm_fragment_8x8_transposed

    plain, trans = make_gemm_fragment_8x8(), make_gemm_fragment_8x8_transposed()
    for i in range(8):
        for j in range(8):
            assert plain.map_forward_thread([i, j]) == 4 * i + j // 2
            assert trans.map_forward_thread([i, j]) == 4 * j + i // 2
            assert trans.map_forward_index([i, j]) == [i % 2]
    assert trans.get_thread_size() == 32


def test_env_object_reads_and_sets_the_settings(monkeypatch, tmp_path):
    from tilelang.cache.kernel_cache import KernelCache
    from tilelang.env import env

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    assert str(tmp_path) == env.TILELANG_CACHE_DIR
    assert os.path.join(str(tmp_path), "tmp") == env.TILELANG_TMP_DIR
    assert KernelCache._get_cache_root() == tmp_path / "kernels"
    assert KernelCache() is KernelCache.get_instance()
    monkeypatch.setattr(env, "TILELANG_CACHE_DIR", str(tmp_path / "other"))
    assert os.environ["TILELANG_CACHE_DIR"] == str(tmp_path / "other")
    assert tilelang.env.cache_dir() == str(tmp_path / "other")
    with pytest.raises(AttributeError, match="no setting 'CACHE'"):
        _ = env.CACHE


def test_lower_and_simplify_module_names():
    from tilelang.engine.lower import lower
    from tilelang.transform.simplify import apply_simplify

    assert tilelang.lower is not None and lower is tilelang.engine.lower
    func = add_constant.func(8, 1.0)
    assert apply_simplify(func).script() == func.core.simplified().script()
    artifact = tilelang.lower(func, target="cpu")
    assert "tl_block_main" in artifact.kernel_source
    from tilelang.tvm import OutOfScopeError

    with pytest.raises(OutOfScopeError, match="CompiledArtifact.device_mod"):
        artifact.device_mod.functions.items()
    from tilelang.language.tir import op

    assert op.exp2 is T.exp2 and op.const(3, "int8").dtype.name == "int8"
    from tilelang.backend.target import determine_target

    assert determine_target("llvm") == "cpu"
    from tilelang.metal.target import check_metal4_availability

    assert check_metal4_availability() in (True, False)
    assert not check_metal4_availability() or tilelang.utils.target.has_mps_device()


# Names that TileLang's test files import at their top; each file stopped at its import.
IMPORTED_INTERNALS = [
    ("tilelang.language.eager.ast", "BaseBuilder"),
    ("tilelang.utils.language", "to_buffer_region"),
    ("tilelang.transform", "LowerAccessPtr"),
    ("tilelang.transform", "MergeIfStmt"),
    ("tilelang.jit.adapter.tvm_ffi", "TVMFFIKernelAdapter"),
    ("tilelang.jit.adapter.nvrtc.adapter", "NVRTCKernelAdapter"),
    ("tilelang.cache.cuda_binary_cache", "CUDABinaryCache"),
    ("tilelang.cache", "_dispatch_map"),
    ("tilelang.backend", "create_backend_context"),
    ("tilelang.autotuner.param", "BEST_CONFIG_PATH"),
    ("tilelang.autotuner.param", "KERNEL_PY_PATH"),
    ("tilelang.tileop.gemm.registry", "resolve_gemm_impl"),
    ("tilelang.cuda.op.gemm.gemm_mma_sm75", "GemmMMASm75"),
    ("tilelang.cuda.intrinsics.layout.mma_sm100_layout", "TCGEN05TmemAllocMode"),
    ("tilelang.metal.intrinsics.metal_macro_generator", "MPSIntrinEmitter"),
    ("tilelang.profiler.bench", "_bench_with_cupti"),
    ("tilelang.ir", "get_buffer_span"),
]


@pytest.mark.parametrize("module, name", IMPORTED_INTERNALS)
def test_internal_names_import_and_refuse_their_use(module, name):
    obj = getattr(importlib.import_module(module), name)
    with pytest.raises(tilelang.tvm.OutOfScopeError, match=rf"{name} is a TileLang internal"):
        obj()


def test_out_of_scope_names_refuse_every_use():
    import pickle

    from tilelang.cuda.intrinsics.layout.mma_sm100_layout import TCGEN05TmemAllocMode
    from tilelang.jit.adapter.tvm_ffi import TVMFFIKernelAdapter

    what = "tilelang.jit.adapter.tvm_ffi.TVMFFIKernelAdapter"
    message = rf"{what} is a TileLang internal and out of scope.*'Out of scope'"
    uses = [
        lambda: TVMFFIKernelAdapter(1),
        lambda: bool(TVMFFIKernelAdapter),
        lambda: TVMFFIKernelAdapter == 1,
        lambda: TVMFFIKernelAdapter + 1,
        lambda: str(TVMFFIKernelAdapter),
        lambda: list(TVMFFIKernelAdapter),
        lambda: TVMFFIKernelAdapter[0],
        lambda: isinstance(1, TVMFFIKernelAdapter),
        lambda: TVMFFIKernelAdapter.__new__(TVMFFIKernelAdapter),
        lambda: "/tmp" / __import__("pathlib").Path(TVMFFIKernelAdapter),
    ]
    for use in uses:
        with pytest.raises(tilelang.tvm.OutOfScopeError, match=message):
            use()
    # An attribute's use or an assignment names the attribute.
    with pytest.raises(tilelang.tvm.OutOfScopeError, match=rf"{what}._process is a TileLang"):
        TVMFFIKernelAdapter._process()
    with pytest.raises(tilelang.tvm.OutOfScopeError, match=rf"{what}.x is a TileLang"):
        TVMFFIKernelAdapter.x = 1
    # A public attribute (an enum member in a test's parameter list) is one too, refused
    # when used; dunder probes are AttributeErrors, as for an object without them.
    member = TCGEN05TmemAllocMode.INTERLEAVED
    assert member is TCGEN05TmemAllocMode.INTERLEAVED
    with pytest.raises(tilelang.tvm.OutOfScopeError, match=r"TCGEN05TmemAllocMode.INTERLEAVED is"):
        _ = member == 1
    assert not hasattr(TVMFFIKernelAdapter, "__wrapped__")
    assert TVMFFIKernelAdapter.__name__ == "TVMFFIKernelAdapter"
    assert TVMFFIKernelAdapter.__module__ == "tilelang.jit.adapter.tvm_ffi"
    assert "out of scope" in repr(TVMFFIKernelAdapter)
    assert pickle.loads(pickle.dumps(TVMFFIKernelAdapter)) is TVMFFIKernelAdapter


def test_a_class_derived_from_an_out_of_scope_name_refuses_instances():
    """`class _TestBuilder(BaseBuilder):` at a test file's top runs; making one raises."""
    from tilelang.language.eager.ast import BaseBuilder

    class Builder(BaseBuilder):
        def own(self):
            return 1

    assert Builder.own is Builder.__dict__["own"]
    with pytest.raises(tilelang.tvm.OutOfScopeError, match=r"eager.ast.BaseBuilder is a TileLang"):
        Builder()
    with pytest.raises(tilelang.tvm.OutOfScopeError, match=r"BaseBuilder.override is a TileLang"):
        _ = Builder.override


def test_nvrtc_adapter_is_not_available():
    """TileLang's NVRTC adapter (cuda-python) is absent: False, as in TileLang without
    cuda-python, and its check raises an ImportError (tilelang's core compiles with NVRTC)."""
    from tilelang.jit.adapter.nvrtc import check_nvrtc_available, is_nvrtc_available

    assert is_nvrtc_available is False
    with pytest.raises(ImportError, match=r"TileLang's NVRTC adapter.*out of scope"):
        check_nvrtc_available()


def test_swizzle_mode():
    from tilelang.layout import SwizzleMode

    facts = {  # byte size, atom size, WGMMA layout_type, tcgen05 field, smem alignment
        SwizzleMode.NONE: (1, 1, 0, 0, 128),
        SwizzleMode.SWIZZLE_32B: (32, 2, 3, 6, 256),
        SwizzleMode.SWIZZLE_64B: (64, 4, 2, 4, 512),
        SwizzleMode.SWIZZLE_128B: (128, 8, 1, 2, 1024),
    }
    for ordinal, (mode, expected) in enumerate(facts.items()):
        got = (mode.swizzle_byte_size(), mode.swizzle_atom_size(), mode.wgmma_layout_type(),
               mode.tcgen05_layout_type(), mode.smem_alignment())  # fmt: skip
        assert got == expected, mode
        assert SwizzleMode.from_ordinal(ordinal) is mode
        assert SwizzleMode.from_ordinal(np.int64(ordinal)) is mode
        checks = [mode.is_none(), mode.is_swizzle_32b(), mode.is_swizzle_64b(),
                  mode.is_swizzle_128b()]  # fmt: skip
        assert checks == [i == ordinal for i in range(4)]
    with pytest.raises(ValueError, match=r"ordinal must be an int in 0..3 .*got 4"):
        SwizzleMode.from_ordinal(4)


def test_tileop_gemm_warp_policy_is_t_gemm_warp_policy():
    from tilelang.tileop import GemmWarpPolicy

    assert GemmWarpPolicy is T.GemmWarpPolicy
    with pytest.raises(tilelang.tvm.OutOfScopeError, match=r"tilelang.tileop.Gemm is a TileLang"):
        from tilelang.tileop import Gemm

        Gemm()


def test_enrich_error_appends_the_marked_source_line(tmp_path):
    from tilelang.errors import _MARKER_RE, enrich_error

    src = tmp_path / "dir with spaces" / "kernel.py"
    src.parent.mkdir()
    src.write_text("line one\nline two\nline three\n")
    exc = ValueError(f"boom\n  --> {src}:2:3")
    assert enrich_error(exc) is exc
    assert str(exc).endswith("2 | line two\n  |   ^")
    m = _MARKER_RE.search("\n  --> C:\\work\\kernel.py:21:1")
    assert (m.group("file"), m.group("line"), m.group("col")) == ("C:\\work\\kernel.py", "21", "1")
    plain = ValueError("no marker")
    assert enrich_error(plain) is plain and str(plain) == "no marker"
    missing = ValueError("x\n  --> /no/such/file.py:1:1")
    assert str(enrich_error(missing)) == "x\n  --> /no/such/file.py:1:1"


def test_tilelangs_nvcc_driver_is_refused_by_name():
    """TileLang's nvcc subprocess driver (compile_cuda, its timeout and gencode helpers):
    kernels compile with NVRTC here, so the names import and refuse their use."""
    from tilelang.contrib import nvcc
    from tilelang.contrib.nvcc import compile_cuda, get_target_code_list
    from tilelang.tvm import OutOfScopeError

    for use in (
        lambda: compile_cuda("__global__ void k() {}", target_format="ptx"),
        lambda: get_target_code_list(["sm_100a"]),
        lambda: setattr(nvcc.env, "TILELANG_CLEANUP_TEMP_FILES", "0"),
    ):
        with pytest.raises(OutOfScopeError, match="tilelang.contrib.nvcc.* is a TileLang internal"):
            use()
    assert nvcc.get_target_compute_version("cuda -arch=sm_90a") == "9.0"
    with pytest.raises(AttributeError):
        _ = nvcc.no_such_name
