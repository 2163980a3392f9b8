"""Pass configuration keys accepted by `tilelang.compile(..., pass_configs=...)`, spelled as
upstream TileLang spells them so that existing kernels keep working. A key outside this
list is an error that lists the known keys (a misspelt key would otherwise be ignored).

Also TileLang's `simplify_prim_func` decorator and `apply_simplify`: the arithmetic
simplifier run on a traced kernel (the compile runs it anyway; these give a cleaner
`func.script()`)."""

from __future__ import annotations

import difflib
import functools
import numbers
import os
from enum import Enum
from typing import Any

import numpy as np

from tilelang import _native


class PassConfigKey(str, Enum):
    """Known pass-config keys; plain strings with the same values are accepted too."""

    TL_SIMPLIFY = "tl.Simplify"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    # Ours: in a kernel with thread block clusters (T.Kernel cluster_dims), the
    # warp-specialized pipeline multicasts tiles every block of a cluster loads alike
    # (TMA multicast); True keeps each block's own loads.
    TL_DISABLE_TMA_MULTICAST = "tl.disable_tma_multicast"
    # Ours: TMA stores for shared-tile epilogues on sm_90 (on by default; False turns
    # them off, as tl.disable_tma_lower does with the loads).
    TL_ENABLE_TMA_STORE = "tl.enable_tma_store"
    # Ours, on by default (False turns it off): `T.copy(C_local, C[...])` epilogues
    # staged through a shared tile (stored by TMA) that reuses a pipeline stage's bytes.
    TL_STAGE_FRAGMENT_STORES = "tl.stage_fragment_stores"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    # Ours, off by default: on sm_90a, T.gemm_sp runs on wgmma.mma_async.sp (the
    # sparse warpgroup MMA) instead of mma.sp where its tiles split into warpgroups.
    TL_GEMM_SP_WGMMA = "tl.gemm_sp_wgmma"
    TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS = "tl.debug_merge_shared_memory_allocations"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DISABLE_SHUFFLE_ELECT = "tl.disable_shuffle_elect"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_DISABLE_DYNAMIC_TAIL_SPLIT = "tl.disable_dynamic_tail_split"
    TL_DYNAMIC_ALIGNMENT = "tl.dynamic_alignment"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DISABLE_FAST_MATH = "tl.disable_fast_math"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_ENABLE_PTXAS_VERBOSE_OUTPUT = "tl.enable_ptxas_verbose_output"
    TL_DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_DUMP_IR_DIR = "tl.dump_ir_dir"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    TL_STORAGE_REWRITE_DETECT_INPLACE = "tl.storage_rewrite_detect_inplace"
    TL_FORCE_LET_INLINE = "tl.force_let_inline"
    TL_DISABLE_OUT_OF_BOUND_WARNING = "tl.disable_out_of_bound_warning"
    TIR_ENABLE_EQUIV_TERMS_IN_CSE = "tir.enable_equiv_terms_in_cse_tir"
    TIR_DISABLE_CSE = "tir.disable_cse_tir"
    TIR_SIMPLIFY = "tir.Simplify"
    TIR_DISABLE_STORAGE_REWRITE = "tir.disable_storage_rewrite"
    TIR_DISABLE_VECTORIZE = "tir.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tir.use_async_copy"
    TIR_ENABLE_DEBUG = "tir.enable_debug"
    TIR_MERGE_STATIC_SMEM = "tir.merge_static_smem"
    TIR_NOALIAS = "tir.noalias"
    CUDA_KERNELS_OUTPUT_DIR = "cuda.kernels_output_dir"
    # Keys of later TileLang releases.
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_PRELOWER_SEMANTIC_CHECK = "tl.disable_prelower_semantic_check"
    TL_ENABLE_AUTO_WARP_SPECIALIZATION = "tl.enable_auto_warp_specialization"
    TL_EMIT_LINE_DIRECTIVES = "tl.emit_line_directives"
    TL_ENABLE_REDUCER_PLAN_VERBOSE = "tl.enable_reducer_plan_verbose"
    TL_LAYOUT_COST_MODEL = "tl.layout_cost_model"
    TL_REDUCER_FORCE_BASELINE = "tl.reducer_force_baseline"
    TL_ENABLE_FP32X2_REDUCTION = "tl.enable_fp32x2_reduction"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_ENABLE_LOWER_LDGSTG = "tl.enable_lower_ldgstg"
    TL_ENABLE_LOWER_LDGSTG_PREDICATED = "tl.enable_lower_ldgstg_predicated"
    TL_ENABLE_VECTORIZE_PLANNER_VERBOSE = "tl.enable_vectorize_planner_verbose"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    TL_DISABLE_LOOP_UNSWITCHING = "tl.disable_loop_unswitching"
    TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE = "tl.loop_unswitching_allow_non_trivial_else"
    TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS = "tl.if_stmt_binding_inline_replayable_binds"
    TL_AST_PRINT_ENABLE = "tl.ast_print_enable"
    TL_DUMP_IR_PATH = "tl.dump_ir_path"
    TL_PASS_PROFILE = "tl.pass_profile"
    TL_PASS_PROFILE_THRESHOLD_MS = "tl.pass_profile_threshold_ms"
    TIR_ADD_LOWER_PASS = "tir.add_lower_pass"

    def __str__(self):
        return self.value


# The keys and the kind of value each takes come from the compiler core
# (src/transform/pass_config.cpp), which checks them again for C++ callers. Later
# TileLang releases spell the "tir." keys "tirx."; both are accepted.
_CORE_KEYS = {key: (kind, expected) for key, kind, expected, _ in _native.load().pass_config_keys()}
_CORE_KEYS.update(
    {k.replace("tir.", "tirx.", 1): v for k, v in _CORE_KEYS.items() if k.startswith("tir.")}
)
KNOWN_KEYS = frozenset(_CORE_KEYS)


def check_pass_config_key(key):
    """Raises ValueError for a key TileLang does not know, suggesting the closest one."""
    if key in KNOWN_KEYS:
        return
    close = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(
        f"unknown pass config key {key!r}{hint}; known keys: {', '.join(sorted(KNOWN_KEYS))}"
    )


def _value_fits(kind, value):
    is_int = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if kind == "switch":
        return isinstance(value, (bool, np.bool_)) or (is_int and value in (0, 1))
    if kind == "index bit width":
        return is_int and value in (32, 64)
    if kind == "int":
        return is_int
    if kind == "number":
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, (str, os.PathLike))
    if kind == "flags":
        return isinstance(value, str) or (
            isinstance(value, (list, tuple)) and all(isinstance(f, str) for f in value)
        )
    return True


def check_pass_config_value(key, value):
    """Raises TypeError when `value` is not of the kind `key` takes (a str such as "no"
    for a switch would otherwise read as true)."""
    kind, expected = _CORE_KEYS.get(key, ("switch", "a bool (True/False, or 1/0)"))
    if not _value_fits(kind, value):
        raise TypeError(
            f"pass config {key!r} must be {expected}, got {type(value).__name__} {value!r}"
        )


def normalize_pass_configs(pass_configs: dict[Any, Any] | None) -> dict[str, Any]:
    """Returns a dict keyed by plain strings, checking the key types and names."""
    if pass_configs is not None and not isinstance(pass_configs, dict):
        raise TypeError(
            "pass_configs must be a dict of {key: value}, got "
            f"{type(pass_configs).__name__} {pass_configs!r}"
        )
    out = {}
    for key, value in (pass_configs or {}).items():
        if isinstance(key, PassConfigKey):
            key = key.value
        elif not isinstance(key, str):
            raise TypeError(
                f"pass_configs keys must be str or PassConfigKey, got {type(key).__name__}"
            )
        check_pass_config_key(key)
        check_pass_config_value(key, value)
        out[key] = value
    return out


def apply_simplify(func, inline_let=False):
    """`func` (a T.prim_func) with its expressions simplified: constant folding,
    index arithmetic, and conditions its loop ranges and shapes prove; and, as
    TileLang's Simplify(simplify_arguments=True), without the tensor parameters its
    body never touches (a kernel built without its optional bias takes (A, B, C)).
    `inline_let` is accepted for TileLang's signature; let bindings stay."""
    from tilelang.language.prim_func import PrimFunc  # imported here: the jit imports this module

    del inline_let
    if not isinstance(func, PrimFunc):
        raise TypeError(
            f"apply_simplify: expected a T.prim_func, got {type(func).__name__} {func!r}"
        )
    simplified = func.core.simplified()
    core = simplified.without_unused_tensor_params()
    attrs = func.attrs
    if "tilelang_out_idx" in attrs:  # the outputs (T.empty), by their new positions
        outs = [func.core.param_names[i] for i in attrs["tilelang_out_idx"]]
        if not set(outs) <= set(core.param_names):
            return PrimFunc(simplified, func.func, attrs)
        attrs["tilelang_out_idx"] = [core.param_names.index(name) for name in outs]
    return PrimFunc(core, func.func, attrs)


def simplify_prim_func(factory):
    """Decorator: `factory(*args)` returns a T.prim_func; the wrapped factory returns
    it simplified (apply_simplify)."""

    @functools.wraps(factory)
    def wrapper(*args, **kwargs):
        return apply_simplify(factory(*args, **kwargs))

    return wrapper


def with_scoped_pass_configs(pass_configs: dict[Any, Any] | None) -> dict[str, Any]:
    """`pass_configs` (checked) over the configs of the enclosing PassContexts."""
    return {**scoped_pass_configs(), **normalize_pass_configs(pass_configs)}


def get_pass_context():
    """The current PassContext (TileLang's tilelang.transform.get_pass_context)."""
    return PassContext.current()


from .pass_context import PassContext, scoped_pass_configs

# TileLang's passes as Python objects: each wraps a TVM pass over TVM IR. Their names
# import; using one raises the out-of-scope error (the pass order here is fixed per
# target, src/transform/pipeline.cpp, and pass configs steer it).
_TILELANG_PASSES = (
    "PipelinePlanning", "LayoutInference", "LowerTileOp", "InjectSoftwarePipeline",
    "LegalizeNegativeIndex", "InjectAssumes", "VerifyParallelLoop", "VerifyBufferInit",
    "ThreadSync", "IfStmtBinding", "MergeIfStmt", "LoopUnswitching", "LegalizeVectorizedLoop",
    "LegalizeSafeMemoryAccess", "LowerAccessPtr", "MakePackedAPI", "MaterializeKernelLaunch",
    "AnnotateDeviceRegions", "SplitHostDevice", "AnnotateReadOnlyParams", "VectorizeLoop",
    "ConfigIndexBitwidth", "FlattenBuffer", "MergeSharedMemoryAllocations",
    "PlanAndUpdateBufferAllocationLocation", "HoistGlobalBufferAllocations",
    "HoistNonRestrictParams", "StorageRewrite", "LowerOpaqueBlock", "LowerThreadAllreduce",
    "LowerIntrin", "LowerDeviceKernelLaunch", "CanonicalizeLegacyReducer", "VerifyReducerEpoch",
    "ReducerPlanAndMaterialize", "VerifyReducerConsumed", "UnrollLoop", "Simplify", "LetInline",
    "AddWrapperForSingleBufStore", "HoistBroadcastValues", "DecoupleTypeCast",
)  # fmt: skip


def __getattr__(name):
    from tilelang._compat import forwarding_getattr

    return forwarding_getattr(
        __name__, internal=_TILELANG_PASSES,
        instead="tilelang.compile runs the passes in a fixed order per target; pass_configs "
        "steer them and func.script() / kernel.get_kernel_source() show the result",
    )(name)  # fmt: skip
