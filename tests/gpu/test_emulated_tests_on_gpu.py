"""Tests of tests/python that check a CUDA code path in the emulator, run unchanged on a
real GPU: `tilelang.compile` is wrapped so that an emulated CUDA target
("cuda -arch=sm_80 -emulate") compiles for the GPU ("cuda -arch=sm_80"), and the
kernel it returns takes the tests' numpy arrays and torch CPU tensors, runs on CUDA
tensors holding the same values and copies every argument back (outputs come back as
numpy arrays, or torch CPU tensors when the inputs were torch). What the
emulator was trusted for (the e8m0 round-up, T.round's halves, named-barrier
hand-offs, fragments updated outside T.Parallel, tuple assignments, reductions and
scans of views, T.assume's promises and checks, the fast-math intrinsics' error within
CUDA's documented bounds, T.atomic_addx2 / x4's previous values, the batched and
the staged lane reductions, reducer epochs' register partials, TileLang's named-barrier
helpers in a source kernel, cp.async from T.ptx_cp_async and T.async_copy, barriers in
a branch on a block-wide fragment, arrivals on another block's mbarrier, the inline-PTX
statements the emulator translates, the legacy PTX barrier spellings' hand-off) is then
what the hardware does."""

import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest
import tilelang

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))
import test_assume
import test_ast_rewrite
import test_async_copy
import test_atomic_runs
import test_copy_cluster
import test_dialects
import test_e8m0_rounding
import test_fast_math_intrinsics as fast_math
import test_float4
import test_inline_ptx
import test_math
import test_reduce
import test_reducer_epochs
import test_reshape_view
import test_source_kernel
import test_thread_level_semantics as tls

SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"

# numpy dtypes torch cannot take directly: (numpy dtype, same-width integer, torch dtype)
VIEWED = [
    (np.dtype(ml_dtypes.bfloat16), np.uint16, torch.bfloat16),
    (np.dtype(ml_dtypes.float8_e8m0fnu), np.uint8, torch.float8_e8m0fnu),
    (np.dtype(ml_dtypes.float8_e4m3fn), np.uint8, torch.float8_e4m3fn),
    (np.dtype(ml_dtypes.float8_e5m2), np.uint8, torch.float8_e5m2),
]


def to_gpu(a):
    for np_dtype, bits, torch_dtype in VIEWED:
        if a.dtype == np_dtype:
            return torch.from_numpy(np.ascontiguousarray(a).view(bits)).view(torch_dtype).cuda()
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def to_numpy(t):
    t = t.cpu()
    for np_dtype, bits, torch_dtype in VIEWED:
        if t.dtype == torch_dtype:
            return t.view(getattr(torch, np.dtype(bits).name)).numpy().view(np_dtype)
    return t.numpy()


class OnGpu:
    """A compiled kernel that takes numpy arrays and runs them on the GPU."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getattr__(self, name):
        return getattr(self.kernel, name)

    def __call__(self, *args):
        def on_host(a):
            return isinstance(a, torch.Tensor) and a.device.type == "cpu"

        moved = [
            to_gpu(a) if isinstance(a, np.ndarray) else a.cuda() if on_host(a) else a for a in args
        ]
        out = self.kernel(*moved)
        torch.cuda.synchronize()
        for a, t in zip(args, moved):
            if isinstance(a, np.ndarray):
                a[...] = to_numpy(t)
            elif on_host(a):
                a.copy_(t.cpu())
        # Outputs come back as the tests' inputs were: torch CPU tensors for torch inputs.
        torch_in = any(on_host(a) for a in args)

        def back(o):
            return o.cpu() if torch_in else to_numpy(o)

        if isinstance(out, torch.Tensor):
            return back(out)
        if isinstance(out, (list, tuple)):
            return type(out)(back(o) if isinstance(o, torch.Tensor) else o for o in out)
        return out


@pytest.fixture(autouse=True)
def on_the_gpu(monkeypatch):
    compile_ = tilelang.compile

    def compile_for_the_gpu(func, *args, target=None, **kwargs):
        if isinstance(target, str) and target.startswith("cuda") and "-emulate" in target:
            real = " ".join(w for w in target.split() if w != "-emulate")
            return OnGpu(compile_(func, *args, target=real, **kwargs))
        return compile_(func, *args, target=target, **kwargs)

    monkeypatch.setattr(tilelang, "compile", compile_for_the_gpu)
    test_e8m0_rounding.convert_kernel.cache_clear()
    yield
    test_e8m0_rounding.convert_kernel.cache_clear()


@pytest.mark.parametrize("target", [SM80, SM90A])
@pytest.mark.parametrize("src", ["float16", "bfloat16"])
def test_e8m0_every_16_bit_value(target, src):
    test_e8m0_rounding.test_every_16_bit_value_rounds_up(target, src)


@pytest.mark.parametrize("target", [SM80, SM90A])
def test_e8m0_float32_around_every_power_of_two(target):
    test_e8m0_rounding.test_float32_around_every_power_of_two(target)
    test_e8m0_rounding.test_the_rules_spelled_out(target)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_round_and_nearbyint_halves(dtype):
    test_math.test_round_and_nearbyint_agree_on_every_target(SM90A, dtype)


@pytest.mark.parametrize("target", [SM80, SM90A])
def test_named_barrier_arrive(target):
    tls.test_named_barrier_arrive_signals_without_waiting(target)


@pytest.mark.parametrize("target", [SM80, SM90A])
def test_fragments_updated_outside_parallel_loops(target):
    tls.test_a_fragment_updated_outside_parallel_loops_in_a_thread_index_kernel(target)
    tls.test_an_online_softmax_state_in_fragments(target)


def test_tuple_assignment():
    test_ast_rewrite.test_tuple_assignment_reads_every_value_before_assigning(SM90A)


@pytest.mark.parametrize(("kind", "reverse"), [("sum", False), ("sum", True), ("max", False)])
def test_scan_of_a_view(kind, reverse):
    test_reshape_view.test_scan_of_a_view_of_shared_memory(SM90A, kind, reverse)


def test_reduce_of_a_one_row_view():
    test_reshape_view.test_reduce_of_a_one_row_view_runs_once(SM90A)


def test_assume_promises_and_checks():
    test_assume.test_a_kept_promise_gives_the_same_result(SM80)
    test_assume.test_a_promise_over_sizes_is_checked_at_every_call(SM80)


def test_fast_math_within_cudas_bounds():
    fast_math.test_exp_within_cudas_bound()
    for case in (
        ("__log", np.log, 2**-21.41, 3),
        ("__log2", np.log2, 2**-22, 2),
        ("__log10", np.log10, 2**-24, 3),
    ):
        fast_math.test_logarithms_within_cudas_bound(*case)
    fast_math.test_sin_cos_tan_within_cudas_bound()
    fast_math.test_fast_rcp_within_one_ulp()
    for dtype in ("float16", "bfloat16"):
        fast_math.test_16_bit_is_the_float_intrinsic_rounded(dtype)


@pytest.mark.parametrize("target", [SM80, SM90A])
def test_float4_conversions_every_code(target):
    for out in ("float32", "float16", "bfloat16"):
        test_float4.test_every_code_to_float(target, out)
    for src in ("float32", "float16", "bfloat16", "float64"):
        test_float4.test_every_code_from_float(target, src)


@pytest.mark.parametrize("target", [SM80, SM90A])
def test_float4_packed_memory_and_gemm(target):
    for n in (1, 7, 33):
        test_float4.test_odd_counts_through_shared_and_registers(target, n)
    test_float4.test_tiles_of_packed_rows(target)
    test_float4.test_gemm_of_fp4_tiles(target)


def test_int4_round_trip():
    test_float4.test_int4_round_trip(SM80)


@pytest.mark.parametrize("target", [SM80, SM90A])
@pytest.mark.parametrize("width", [2, 4])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("start", [0, 1, 6])
def test_atomic_addx_return_prev(target, width, dtype, start):
    # sm_90a: the vector atoms (atom.global.v2 / v4.f32.add); sm_80: .f16x2 and elements.
    test_atomic_runs.test_addx_return_prev_is_one_call_and_every_previous_value(
        target, width, dtype, start
    )


@pytest.mark.parametrize("target", [SM80, SM90A])
def test_atomic_addx_return_prev_into_shared_memory(target):
    test_atomic_runs.test_addx_return_prev_into_shared_memory_is_element_atomics(target)


@pytest.mark.parametrize("M, N, threads, batch, kind, dtype, lanes", test_reduce.BATCH_CASES)
def test_batched_lane_reductions(M, N, threads, batch, kind, dtype, lanes):
    test_reduce.test_a_batch_of_rows_is_one_lane_reduction_with_the_same_bits(
        M, N, threads, batch, kind, dtype, lanes
    )


@pytest.mark.parametrize("M, N, threads, kind, dtype, batch", test_reduce.SHARED_CASES)
def test_shared_tiles_reduced_from_registers(M, N, threads, kind, dtype, batch):
    test_reduce.test_a_shared_tile_is_reduced_from_registers(M, N, threads, kind, dtype, batch)
    test_reduce.test_a_shared_tile_reduced_into_a_tied_row_vector_is_not_staged()


@pytest.mark.parametrize("target", [SM80, SM90A])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("pipelined", [False, True])
def test_reducer_epoch_partials_in_registers(target, shared, pipelined):
    # No atomics: the same bits as the older fragment form on the hardware too.
    test_reducer_epochs.test_epoch_partials_are_registers(target, shared, pipelined)


@pytest.mark.parametrize("target", [SM80, SM90A])
def test_reducer_epoch_seed_and_rows(target):
    test_reducer_epochs.test_epoch_seed_is_read_at_init(target)
    test_reducer_epochs.test_scalar_sum_counts_each_iteration_once(target)
    for op, dtype, seed in [
        ("sum", "float32", None),
        ("max", "float32", None),
        ("bitxor", "int32", 5),
    ]:
        test_reducer_epochs.test_row_reduce(target, op, dtype, seed)


def test_tilelang_named_barrier_helpers_in_a_source_kernel():
    test_source_kernel.test_tilelang_named_barrier_helpers_in_a_source_kernel()


@pytest.mark.parametrize("nbytes", [4, 8, 16])
@pytest.mark.parametrize("with_pred", [False, True])
def test_cp_async_groups_and_waits(nbytes, with_pred):
    test_async_copy.test_cp_async_copies_groups_and_waits(SM80, nbytes, with_pred)


@pytest.mark.parametrize(("dtype", "lanes", "nbytes"), [("float16", 4, 8), ("float32", 4, 16)])
def test_cp_async_in_a_vectorized_loop(dtype, lanes, nbytes):
    test_async_copy.test_one_element_cp_async_in_a_vectorized_loop_is_one_wide_copy(
        SM80, dtype, lanes, nbytes
    )


def test_async_copy_issues_and_commits():
    test_async_copy.test_async_copy_of_a_tile(SM80)
    test_async_copy.test_async_copy_issues_and_commits_without_a_wait()


@pytest.mark.parametrize("target", [SM80, SM90A])
def test_async_copy_in_a_pipeline(target):
    test_async_copy.test_waits_after_async_copies_in_a_pipeline_wait_for_nothing(target)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_branch_on_a_block_wide_fragment(arch):
    tls.test_a_branch_on_a_block_wide_fragment_gets_barriers_inside(arch)


def test_arrivals_on_another_blocks_barrier():
    # One phase of 512 arrivals (the count of 256, two phases raced by block 0's wait,
    # is the emulator's scheduling case: on the GPU it depends on timing).
    test_copy_cluster.test_arrive_on_another_blocks_barrier(512)


def test_inline_ptx_statements():
    # sm_90a: mul.bf16x2 is among the statements.
    test_inline_ptx.test_inline_ptx_runs_bit_exact_in_the_emulator(SM90A)


def test_legacy_barrier_spellings_hand_off():
    # T.ptx_cp_async_barrier / T.ptx_arrive_barrier order cp.async copies before a
    # consumer warpgroup's reads (sm_90a).
    test_dialects.test_legacy_barrier_spellings_order_a_handoff()
