"""T.Pipelined copies through TMA on sm_90: a producer copy from a tensor parameter
into a whole shared tile becomes tl::tma_load (one box, or one per column block of a
wide wgmma tile) issued by one thread, completing on an mbarrier per version of the
tile that the readers wait on; the map is a kernel parameter the runtime encodes at
every launch. Copies TMA cannot do stay on cp.async, and the pass config
tl.disable_tma_lower turns TMA off. The CUDA source runs in the emulator (TMA and
mbarrier twins, device/emu/tma_emu.h) against numpy; tests/gpu/test_tma_pipeline_gpu.py
runs the same kernels on the H200."""

import json
import math
import os
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_pipeline_schedule import FA_SCHEDULE, flash_attention, staged_sum
from test_wgmma_gemm import needs_nvrtc, operands, wgmma_gemm

SM90A = "cuda -arch=sm_90a -emulate"  # wgmma + TMA
SM90 = "cuda -arch=sm_90 -emulate"  # mma.sync + TMA
NP_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
rng = np.random.default_rng(908)


def tma_only(src):
    """The source loads its tiles with TMA and has no cp.async left."""
    return "tl::tma_load<" in src and "tl::mbarrier_wait(" in src and "tl::cp_async_gs" not in src


# (M, N, K, bM, bN, bK, dtype, trans_a, trans_b, threads, policy, stages): M, N, K do
# not divide the tiles (TMA fills the parts outside the tensors with zeros); every row
# stride is a multiple of 16 bytes, so both operands go through TMA.
WGMMA_CASES = {
    "f16_nn_tails_2": (100, 72, 80, 64, 64, 32, "float16", False, False, 128, 0, 2),
    "bf16_nt_tails_3": (130, 88, 72, 128, 64, 32, "bfloat16", False, True, 256, 0, 3),
    "f16_tn_4": (64, 128, 96, 64, 128, 64, "float16", True, False, 256, 0, 4),
    "bf16_tt_two_blocks_2": (128, 64, 48, 128, 32, 16, "bfloat16", True, True, 128, 0, 2),
    "bf16_wide_n_four_blocks_3": (64, 256, 40, 64, 256, 32, "bfloat16", False, False, 256, 2, 3),
}


@pytest.mark.parametrize("name", sorted(WGMMA_CASES))
def test_wgmma_gemm_with_tma_matches_numpy(name):
    M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, stages = WGMMA_CASES[name]
    kernel = tilelang.compile(
        wgmma_gemm(M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, stages), target=SM90A
    )
    src = kernel.get_kernel_source()
    assert "tl::wgmma_gemm_ss<" in src and tma_only(src), src
    assert "const __grid_constant__ tl::TensorMap tl_tma_map1" in src
    a, b, c0, ref = operands(M, N, K, dtype, ta, tb)
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def test_a_wgmma_tile_wider_than_its_swizzle_is_one_box_per_column_block():
    # B_s is 32 x 256 bfloat16: rows of 512 bytes, four 128-byte swizzle blocks.
    M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, stages = WGMMA_CASES[
        "bf16_wide_n_four_blocks_3"
    ]
    kernel = tilelang.compile(
        wgmma_gemm(M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, stages), target=SM90A
    )
    spec = [line for line in kernel.kernel.signature_text.splitlines() if line.startswith("tma 1")]
    assert spec == ["tma 1 bfloat16 2 64,32 128 0"]  # B: 64-column boxes, 128-byte swizzle
    src = kernel.get_kernel_source()
    for col in (64, 128, 192):
        assert f"(bx * 256) + {col})" in src, src


def mma_gemm(M, N, K, dtype, stages, order=None, stage=None):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 32), dtype)
            B_s = T.alloc_shared((32, 64), dtype)
            C_f = T.alloc_fragment((64, 64), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=stages, order=order, stage=stage):
                T.copy(A[by * 64, k * 32], A_s)
                T.copy(B[k * 32, bx * 64], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 64, bx * 64])

    return main


def run_mma_gemm(kernel, M, N, K, dtype):
    a = rng.standard_normal((M, K)).astype(NP_DTYPES[dtype])
    b = rng.standard_normal((K, N)).astype(NP_DTYPES[dtype])
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mma_sync_gemm_with_tma_matches_numpy(dtype, stages):
    # The mma.sync tiles keep their 64 and 128-byte-row swizzle: TMA's 64B and 128B modes.
    M, N, K = 96, 136, 200
    kernel = tilelang.compile(mma_gemm(M, N, K, dtype, stages), out_idx=[-1], target=SM90)
    src = kernel.get_kernel_source()
    assert "tl::gemm_ss<" in src and tma_only(src), src
    # (C's map, "tma 2", appears where the epilogue is staged through a dead stage.)
    maps = [
        x for x in kernel.kernel.signature_text.splitlines() if x.startswith(("tma 0", "tma 1"))
    ]
    assert maps == [f"tma 0 {dtype} 2 32,64 64 0", f"tma 1 {dtype} 2 64,32 128 0"]
    run_mma_gemm(kernel, M, N, K, dtype)


@pytest.mark.parametrize(
    "order, stage",
    [
        ([0, 1, 2], [0, 0, 1]),
        ([0, 1, 2], [0, 0, 3]),
        ([0, 1, 2], [1, 0, 2]),
        ([-1, -1, 0], [-1, -1, 0]),
    ],
)
def test_gemm_schedules_by_hand_with_tma_match_numpy(order, stage):
    # [1, 0, 2]: the copies sit in different stages, so each has its own mbarriers.
    M, N, K = 96, 128, 200
    kernel = tilelang.compile(
        mma_gemm(M, N, K, "float16", 3, order, stage), out_idx=[-1], target=SM90
    )
    src = kernel.get_kernel_source()
    assert tma_only(src), src
    run_mma_gemm(kernel, M, N, K, "float16")


@pytest.mark.parametrize("target", [SM90, SM90A])
def test_flash_attention_schedule_by_hand_with_tma_matches_numpy(target):
    seq_len, dim = 100, 32
    q, k, v = (rng.standard_normal((seq_len, dim)).astype(np.float16) for _ in range(3))
    kernel = tilelang.compile(
        flash_attention(seq_len, dim, 32, 32, FA_SCHEDULE), out_idx=[-1], target=target
    )
    src = kernel.get_kernel_source()
    # K and V through TMA in two versions each; Q is copied before the loop (not a producer).
    for tile in ("K_s", "V_s"):
        assert f"tl::tma_load<2>((&{tile}[" in src and f"tl::mbarrier_wait((&{tile}_full[" in src, (
            src
        )
    assert "tl::cp_async" not in src and "tl::mbarrier_init((&V_s_full[1]), 1)" in src
    logits = q.astype(np.float32) @ k.astype(np.float32).T / math.sqrt(dim)
    p = np.exp(logits - logits.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v.astype(np.float32)
    np.testing.assert_allclose(kernel(q, k, v).astype(np.float32), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("n", [1, 2, 7])
def test_a_later_stage_ordered_first_with_a_one_dim_tile(n):
    # A 1-d tile (one row of A, 128 bytes) read one step after its copy by one
    # statement and in the copy's own step by another.
    a = rng.standard_normal((n, 32)).astype(np.float32)
    kernel = tilelang.compile(staged_sum(n, 32, [0, 2, 1], [0, 0, 1]), out_idx=[-1], target=SM90)
    src = kernel.get_kernel_source()
    assert tma_only(src) and "tl::mbarrier_arrive_expect_tx((&S_full[" in src, src
    ref = ((a * np.arange(1, n + 1, dtype=np.float32)[:, None]) ** 2).sum(0)
    np.testing.assert_allclose(kernel(a), ref, rtol=1e-5)


def batched_gemm(batch, M, N, K, stages):
    @T.prim_func
    def main(
        A: T.Tensor((batch, M, K), "float16"),
        B: T.Tensor((batch, K, N), "float16"),
        C: T.Tensor((batch, M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), batch, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=stages):
                T.copy(A[bz, by * 64, k * 32], A_s)
                T.copy(B[bz, k * 32, bx * 64], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[bz, by * 64, bx * 64])

    return main


@pytest.mark.parametrize("target", [SM90, SM90A])
def test_a_batched_source_is_a_rank_3_map(target):
    batch, M, N, K = 3, 72, 64, 96
    kernel = tilelang.compile(batched_gemm(batch, M, N, K, 2), out_idx=[-1], target=target)
    src = kernel.get_kernel_source()
    assert "tl::tma_load<3>((&A_s[" in src and "tl::tma_load<3>((&B_s[" in src, src
    assert "tma 0 float16 3 32,64,1 64 0" in kernel.kernel.signature_text
    a = rng.standard_normal((batch, M, K)).astype(np.float16)
    b = rng.standard_normal((batch, K, N)).astype(np.float16)
    ref = np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-3)


def dynamic_gemm(dtype, stages, K=None, N=None):
    """A gemm over symbolic M (and N, K unless given)."""
    M = T.dynamic("M")
    K = K if K is not None else T.dynamic("K")
    N = N if N is not None else T.dynamic("N")

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 32), dtype)
            B_s = T.alloc_shared((32, 64), dtype)
            C_f = T.alloc_fragment((64, 64), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=stages):
                T.copy(A[by * 64, k * 32], A_s)
                T.copy(B[k * 32, bx * 64], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 64, bx * 64])

    return main


@pytest.mark.parametrize("target", [SM90, SM90A])
def test_dynamic_shapes_encode_the_map_per_launch(target):
    # M symbolic; the innermost extents (K = 96 of A, N = 136 of B) are known
    # multiples of 16 bytes, as TMA needs.
    kernel = tilelang.compile(dynamic_gemm("float16", 3, K=96, N=136), out_idx=[-1], target=target)
    assert tma_only(kernel.get_kernel_source())
    maps = [x for x in kernel.kernel.signature_text.splitlines() if x.startswith("tma ")]
    assert len(maps) == 2
    for M in (64, 100, 130, 7):
        run_mma_gemm(kernel, M, 136, 96, "float16")
    # The same shape with other tensors: the map follows the data pointer.
    run_mma_gemm(kernel, 100, 136, 96, "float16")


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("target", [SM90, SM90A])
def test_dynamic_trip_count_may_be_zero(target, stages):
    # K is symbolic and may be 0 (an empty tensor): the pipelined loop then runs no
    # iteration, so neither its prologue's TMA loads nor its last step may run. The
    # simplifier used to take symbolic sizes for >= 1 and drop those guards: the TMA
    # load of iteration 0 went through an empty map and the last step's gemm read a
    # stage nothing had loaded.
    kernel = tilelang.compile(dynamic_gemm("float16", stages, N=40), target=target)
    assert "tl::tma_load<" in kernel.get_kernel_source()
    for M, K in ((70, 0), (70, 1), (9, 33), (0, 5)):
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((K, 40)).astype(np.float16)
        c = rng.standard_normal((M, 40)).astype(np.float32)  # all of it is overwritten
        kernel(a, b, c)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3)


def test_symbolic_or_unaligned_innermost_extents_keep_cp_async():
    # The driver refuses maps whose innermost extent is not a whole number of 16-byte
    # units (a 300-element float16 vector on the H200), so when that extent is
    # symbolic or unaligned the copies stay on cp.async or element copies, which take
    # any shape.
    for kernel in (
        tilelang.compile(dynamic_gemm("float16", 2), out_idx=[-1], target=SM90),
        tilelang.compile(dynamic_gemm("float16", 2, K=50, N=50), out_idx=[-1], target=SM90),
    ):
        src = kernel.get_kernel_source()
        assert "tl::tma_load<" not in src
    a = rng.standard_normal((64, 50)).astype(np.float16)  # rows of 100 bytes
    b = rng.standard_normal((50, 50)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("target", [SM90, SM90A])
def test_disable_tma_lower_gives_cp_async(target):
    kernel = tilelang.compile(
        mma_gemm(96, 128, 200, "float16", 3),
        out_idx=[-1],
        target=target,
        pass_configs={"tl.disable_tma_lower": True},
    )
    src = kernel.get_kernel_source()
    assert (
        "tl::tma_load" not in src
        and "TensorMap" not in src
        and re.search(r"tl::cp_async_gs(?:_conditional)?<16>", src)
    )
    assert "prefetch_tensormap" not in src
    assert not [x for x in kernel.kernel.signature_text.splitlines() if x.startswith("tma ")]
    run_mma_gemm(kernel, 96, 128, 200, "float16")


def test_sm80_keeps_cp_async():
    src = tilelang.compile(
        mma_gemm(96, 128, 200, "float16", 3), target="cuda -arch=sm_80 -emulate"
    ).get_kernel_source()
    assert "tl::tma_load" not in src and re.search(r"tl::cp_async_gs(?:_conditional)?<16>", src)


def mixed_gemm(M, N, K, disable_b=False, pad_a=None):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.clear(C_f)
            if pad_a is not None:
                T.annotate_safe_value({A: pad_a})
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=3):
                T.copy(A[by * 64, k * 32], A_s)
                T.copy(B[k * 32, bx * 64], B_s, disable_tma=disable_b)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 64, bx * 64])

    return main


@pytest.mark.parametrize(
    "why, args, tma_tiles, cp_async_tiles",
    [
        ("A's rows are 100 bytes, not a multiple of 16", (100, 64, 50), ["B_s"], ["A_s"]),
        ("B's copy asks for disable_tma", (64, 64, 64, True), ["A_s"], ["B_s"]),
    ],
)
def test_copies_tma_cannot_do_stay_on_cp_async(why, args, tma_tiles, cp_async_tiles):
    M, N, K = args[:3]
    kernel = tilelang.compile(mixed_gemm(*args), out_idx=[-1], target=SM90)
    src = kernel.get_kernel_source()
    for tile in tma_tiles:
        assert f"tl::tma_load<2>((&{tile}[" in src, why
    for tile in cp_async_tiles:
        assert (
            "tl::cp_async_gs" in src
            and f"(&{tile}[" in src
            and f"tl::tma_load<2>((&{tile}[" not in src
        ), why
    assert "tl::cp_async_wait<" in src and "tl::mbarrier_wait(" in src
    run_mma_gemm(kernel, M, N, K, "float16")


def test_a_copy_padding_with_a_nonzero_value_stays_on_cp_async():
    M, N, K = 64, 64, 40  # the last K tile reads past A's end: the pad shows
    kernel = tilelang.compile(mixed_gemm(M, N, K, pad_a=1.0), out_idx=[-1], target=SM90)
    src = kernel.get_kernel_source()
    assert "tl::tma_load<2>((&B_s[" in src and "tl::tma_load<2>((&A_s[" not in src, src
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)  # B is zero-padded: A's pad adds nothing
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-3)


RELOAD = r"""
import json, sys
import numpy as np
import tilelang
sys.path.insert(0, sys.argv[1])
from test_tma_pipeline import mma_gemm
kernel = tilelang.compile(mma_gemm(96, 136, 200, "float16", 3), out_idx=[-1], target=sys.argv[2])
rng = np.random.default_rng(int(sys.argv[3]))
a = rng.standard_normal((96, 200)).astype(np.float16)
b = rng.standard_normal((200, 136)).astype(np.float16)
err = float(np.abs(kernel(a, b) - a.astype(np.float64) @ b.astype(np.float64)).max())
print(json.dumps({"builds": tilelang._C.compile_count(), "err": err,
                  "tma": "tl::tma_load" in kernel.get_kernel_source()}))
"""


@pytest.mark.parametrize("target", [SM90, SM90A])
def test_a_kernel_from_the_disk_cache_rebuilds_its_maps(tmp_path, target):
    env = dict(os.environ, TILELANG_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(tilelang.__file__))
    env.pop("TILELANG_DISABLE_CACHE", None)
    here = os.path.dirname(os.path.abspath(__file__))
    runs = []
    for seed in (1, 2):
        proc = subprocess.run(
            [sys.executable, "-c", RELOAD, here, target, str(seed)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert [r["builds"] for r in runs] == [1, 0]  # the second process loads the cache entry
    assert all(r["tma"] and r["err"] < 1e-2 for r in runs), runs


def test_an_exported_kernel_keeps_its_maps(tmp_path):
    kernel = tilelang.compile(mma_gemm(96, 136, 200, "bfloat16", 2), out_idx=[-1], target=SM90)
    path = tmp_path / "gemm.tlkernel"
    kernel.export_library(str(path))
    loaded = tilelang.jit.load_kernel(str(path))
    assert loaded.kernel.signature_text == kernel.kernel.signature_text
    assert "tma 0 bfloat16 2 32,64 64 0" in loaded.kernel.signature_text
    run_mma_gemm(loaded, 96, 136, 200, "bfloat16")


def test_the_host_source_lists_the_maps():
    kernel = tilelang.compile(mma_gemm(96, 136, 200, "float16", 2), out_idx=[-1], target=SM90)
    host = kernel.get_host_source()
    assert "tensor_map(A, box=(32, 64), swizzle=64)" in host, host
    assert "tensor_map(B, box=(64, 32), swizzle=128)" in host, host


@needs_nvrtc
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tma_pipelines_compile_with_nvrtc_for_sm90a_and_sm90(dtype):
    wgmma = tilelang.compile(
        wgmma_gemm(256, 256, 256, 128, 128, 64, dtype, False, True, 256, 0, stages=3),
        target="cuda -arch=sm_90a",
    )
    assert tma_only(wgmma.get_kernel_source())
    for arch in ("sm_90a", "sm_90"):
        mma = tilelang.compile(mma_gemm(256, 256, 256, dtype, 4), target=f"cuda -arch={arch}")
        assert tma_only(mma.get_kernel_source())
    fa = tilelang.compile(flash_attention(256, 64, 64, 64, FA_SCHEDULE), target="cuda -arch=sm_90a")
    assert "tl::tma_load<2>" in fa.get_kernel_source()


def dequant_gemm(M, N, K, stages):
    """C = A @ dequant(B)^T, B holding two 4-bit codes a byte (low nibble first, value
    code - 8): each thread unpacks its bytes in registers (T.alloc_local inside the
    pipelined loop, as a dequantizing macro called in the body allocates them) and
    writes the float16 values into a shared tile that the gemm reads."""
    bM, bN, bK, threads = 64, 64, 64, 128
    per_row = bK // 2

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((N, K // 2), "uint8"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(N // bN, M // bM, threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bN, per_row), "uint8")
            B_d = T.alloc_shared((bN, bK), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            tx = T.get_thread_binding()
            T.clear(C_f)
            for ko in T.Pipelined(K // bK, num_stages=stages):
                T.copy(A[by * bM, ko * bK], A_s)
                T.copy(B[bx * bN, ko * per_row], B_s)
                packed = T.alloc_local((4,), "uint8")
                vals = T.alloc_local((8,), "float16")
                for i in T.serial(bN * bK // threads // 8):
                    for v in T.vectorized(4):
                        idx = i * threads * 4 + tx * 4 + v
                        packed[v] = B_s[idx // per_row, idx % per_row]
                    for v in T.serial(8):
                        code = (packed[v // 2] >> ((v % 2) * 4)) & 15
                        vals[v] = T.cast(code, "float16") - T.float16(8)
                    for v in T.vectorized(8):
                        idx = i * threads * 8 + tx * 8 + v
                        B_d[idx // bK, idx % bK] = vals[v]
                T.gemm(A_s, B_d, C_f, transpose_B=True)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


@pytest.mark.parametrize("target", [SM90A, "cuda -arch=sm_80 -emulate"])
def test_registers_allocated_in_a_pipelined_body_keep_the_pipeline(target):
    # The local buffers move in front of the loop, and the copies run a step ahead:
    # through TMA on sm_90a, cp.async on sm_80 (the loop stayed unpipelined before, each
    # step loading its tiles with plain loads).
    M, N, K = 128, 128, 256
    kernel = tilelang.compile(dequant_gemm(M, N, K, 2), out_idx=[-1], target=target)
    src = kernel.get_kernel_source()
    loop = src.index("for (int32_t ko")
    assert -1 < src.index("uint8_t packed[4];") < loop, src
    if "sm_90a" in target:
        assert "tl::wgmma_gemm_ss<" in src and tma_only(src), src
    else:
        assert "tl::cp_async_gs" in src, src
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.integers(0, 256, (N, K // 2), dtype=np.uint8)
    codes = np.stack([b & 15, b >> 4], axis=-1).reshape(N, K).astype(np.float64) - 8
    ref = a.astype(np.float64) @ codes.T
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-2)
