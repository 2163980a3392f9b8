"""What each test file of tests/python checks, as pytest markers (`pytest -m emulator`,
`-m "not examples"`): the table below gives every file its kinds, conftest.py marks its
tests with them, and the test here fails when a file is missing from the table (a new
file gets its kinds when it is added).

    frontend     what the language accepts, refuses and how it traces (errors, names, IR)
    lowering     the passes, through the printed IR or by running what they produce
    cuda_source  the generated CUDA text, or its build by NVRTC and ptxas
    emulator     the CUDA and Metal emulators and the device headers run in them
    runtime      JIT, cache, argument checks, launch, autotuner, packaging, tools
    examples     this repository's examples and TileLang's, run whole
"""

import os

KINDS = {
    "test_affine_dims": "frontend runtime",
    "test_alloc_global": "lowering runtime",
    "test_arg_reduce": "lowering",
    "test_arg_safety": "runtime",
    "test_args_and_bounds": "runtime lowering",
    "test_assume": "frontend lowering",
    "test_ast_rewrite": "frontend",
    "test_async_copy": "lowering emulator",
    "test_atomic": "lowering",
    "test_autotune_explicit": "runtime",
    "test_autotuner": "runtime",
    "test_cache": "runtime",
    "test_clusters": "lowering cuda_source emulator",
    "test_compile_flags": "runtime cuda_source",
    "test_contrib_nvcc": "runtime",
    "test_control_flow": "frontend lowering",
    "test_copy": "lowering",
    "test_copy_mismatched_regions": "lowering",
    "test_cpp_package": "runtime",
    "test_cpu_kernels": "lowering",
    "test_cuda_codegen": "cuda_source",
    "test_cuda_mma": "emulator cuda_source",
    "test_cuda_prelude_names": "cuda_source",
    "test_cuda_vectorize": "lowering cuda_source",
    "test_debug": "runtime frontend",
    "test_device_sm80": "emulator",
    "test_diagnostics": "runtime",
    "test_docs_pass_list": "runtime",
    "test_doctor": "runtime",
    "test_dtype_conversions": "lowering emulator",
    "test_dtypes": "frontend",
    "test_e8m0_rounding": "emulator",
    "test_eager_get_tir": "frontend",
    "test_eager_strides": "frontend",
    "test_emulator": "emulator",
    "test_emulator_debugger": "emulator",
    "test_engine_callback": "cuda_source runtime",
    "test_errors": "frontend",
    "test_examples": "examples",
    "test_examples_cuda_source": "examples cuda_source",
    "test_examples_hopper": "examples emulator",
    "test_explicit_hopper": "lowering emulator",
    "test_fast_math": "cuda_source",
    "test_fast_math_intrinsics": "cuda_source emulator",
    "test_float4": "emulator runtime frontend",
    "test_fp8_saturation": "emulator",
    "test_fragment_inference_bugs": "lowering emulator",
    "test_fuzz_seeds": "lowering emulator",
    "test_gemm_f16_accum": "lowering emulator",
    "test_gemm_sp": "lowering frontend",
    "test_gemm_sp_mma": "emulator lowering cuda_source",
    "test_global_layouts": "lowering",
    "test_ieee_rounding": "emulator",
    "test_integer_division": "frontend lowering",
    "test_intrinsics_mma": "frontend emulator",
    "test_jit": "runtime",
    "test_jit_cuda_export": "runtime cuda_source",
    "test_jit_runtime": "runtime",
    "test_kinds": "runtime",
    "test_lane_vectors": "frontend lowering",
    "test_language_names": "frontend",
    "test_large_tensors": "lowering runtime",
    "test_launch_limits": "frontend runtime",
    "test_logging_progress": "runtime",
    "test_loops": "frontend lowering",
    "test_macro": "frontend",
    "test_math": "lowering",
    "test_metal_codegen": "lowering",
    "test_metal_emu": "emulator",
    "test_metal_emulated": "emulator lowering",
    "test_metal_host": "runtime",
    "test_metal_macos": "runtime",
    "test_minmax_nan": "lowering",
    "test_mla_decode": "examples emulator",
    "test_multi_kernel": "runtime lowering",
    "test_persistent": "frontend lowering",
    "test_pipeline_schedule": "lowering",
    "test_prim_func_body_decls": "frontend",
    "test_ptxas_wgmma": "cuda_source",
    "test_quantize_intrin": "frontend lowering",
    "test_reduce": "lowering",
    "test_reducer_epochs": "lowering",
    "test_reducer_partials": "lowering",
    "test_reshape_view": "frontend lowering",
    "test_rng": "lowering emulator",
    "test_sblock": "frontend",
    "test_scalar_literals_let": "frontend",
    "test_shapes": "frontend runtime",
    "test_shared_layouts": "lowering",
    "test_shared_memory_plan": "lowering",
    "test_simplify_prim_func": "frontend",
    "test_skinny_gemm": "examples",
    "test_sparse_cutlass_metadata": "frontend emulator",
    "test_split_parallel_at_barriers": "lowering",
    "test_sync_grid": "lowering emulator",
    "test_thread_allreduce": "frontend lowering",
    "test_thread_level_semantics": "lowering emulator",
    "test_threads": "lowering",
    "test_tile_schedule": "frontend lowering",
    "test_tma_device": "emulator",
    "test_tma_pipeline": "lowering cuda_source",
    "test_tma_store": "lowering cuda_source",
    "test_torch_ops": "runtime examples",
    "test_transpose_im2col": "lowering",
    "test_tvm_facade": "frontend",
    "test_upstream_idioms": "frontend lowering",
    "test_upstream_modules": "frontend runtime",
    "test_upstream_results": "lowering",
    "test_upstream_runner": "runtime",
    "test_view_width": "lowering",
    "test_views_layouts": "lowering frontend",
    "test_warp": "lowering emulator",
    "test_warp_specialize": "lowering cuda_source",
    "test_wgmma_device": "emulator",
    "test_wgmma_examples": "examples cuda_source",
    "test_wgmma_gemm": "lowering cuda_source",
    "test_wgmma_overlap": "lowering cuda_source",
    "test_wgmma_types": "lowering cuda_source",
    "test_wide_access": "lowering emulator",
}
NAMES = ("frontend", "lowering", "cuda_source", "emulator", "runtime", "examples")


def test_every_test_file_has_its_kinds():
    here = os.path.dirname(os.path.abspath(__file__))
    files = sorted(f[:-3] for f in os.listdir(here) if f.startswith("test_") and f.endswith(".py"))
    missing = [f for f in files if f not in KINDS]
    assert not missing, f"add these files to KINDS in tests/python/test_kinds.py: {missing}"
    stale = sorted(set(KINDS) - set(files))
    assert not stale, f"KINDS names files that are gone: {stale}"
    for name, kinds in KINDS.items():
        unknown = set(kinds.split()) - set(NAMES)
        assert not unknown, f"{name}: unknown kinds {unknown}; the kinds are {NAMES}"
