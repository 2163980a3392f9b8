"""tilelang.carver: the devices (CUDA, METAL, CDNA, CPU) read their limits from the
core's Target and their part's numbers from the one arch table, and the roller
templates rank tile configs that fit the device and that @tilelang.autotune runs."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import _native
from tilelang.carver import (
    FlashAttentionTemplate,
    GEMVTemplate,
    GeneralReductionTemplate,
    MatmulTemplate,
)
from tilelang.carver.arch import CDNA, CPU, CUDA, METAL, auto_infer_current_arch, get_arch
from tilelang.carver.roller.rasterization import NoRasterization
from tilelang.tools.analyzer import ARCH_PEAKS
from tilelang.utils.target import has_cuda_device

no_gpu = pytest.mark.skipif(
    has_cuda_device(), reason="the table's numbers stand only without a GPU"
)


@no_gpu
@pytest.mark.parametrize(
    "target, key, cc, smem_per_block",
    [
        ("cuda -arch=sm_80", "sm_80", "80", 163 * 1024),
        ("cuda -arch=sm_90a", "sm_90", "90", 227 * 1024),
    ],
)
def test_cuda_device_fields_come_from_the_table_and_the_core(target, key, cc, smem_per_block):
    row = ARCH_PEAKS[key]
    import tvm

    for given in (target, tvm.target.Target(target)):
        arch = CUDA(given)
        assert arch.compute_capability == cc and arch.sm_version == int(cc)
        assert arch.sm_count == arch.compute_max_core == row.sm_count
        assert arch.smem_cap == arch.max_shared_memory_per_block == smem_per_block
        assert arch.max_smem_usage == row.shared_memory_per_sm
        assert arch.reg_cap == 65536 and arch.warp_size == 32
        assert arch.l2_cache_size_bytes == row.l2_cache_bytes
        assert arch.bandwidth_gbps == row.bandwidth_gbps and arch.peak_tflops == row.tflops
        assert arch.max_threads_per_block == 1024
        assert arch.get_avaliable_tensorintrin_shapes() == [[16, 16], [16, 16]]
    limits = _native.load().target_limits(target)
    assert limits["max_shared_memory_per_block"] == smem_per_block


def test_metal_cdna_and_cpu_devices():
    metal = METAL("metal")
    assert (metal.platform, metal.compute_capability, metal.warp_size) == ("Metal", "metal", 32)
    assert metal.smem_cap == 32 * 1024 and metal.sm_count == ARCH_PEAKS["metal"].sm_count
    assert metal.get_avaliable_tensorintrin_shapes() == [[8, 8]]
    cdna = CDNA("hip")
    assert (cdna.compute_capability, cdna.warp_size, cdna.sm_count) == ("gfx942", 64, 304)
    cpu = CPU("cpu")
    assert cpu.platform == "CPU" and cpu.warp_size == 1 and cpu.sm_count >= 1
    assert isinstance(get_arch("metal"), METAL) and isinstance(get_arch("llvm"), CPU)
    assert isinstance(get_arch("hip"), CDNA) and isinstance(get_arch("cuda -arch=sm_80"), CUDA)
    assert type(auto_infer_current_arch()) is type(
        get_arch(tilelang.utils.target.determine_target())
    )


def test_cuda_refuses_another_kind_of_target():
    with pytest.raises(
        ValueError, match="CUDA takes a cuda target such as 'cuda -arch=sm_80'; got 'metal'"
    ):
        CUDA("metal")


def _fp16_gemm(M, N, K):
    return MatmulTemplate(M=M, N=N, K=K, in_dtype=T.float16, out_dtype=T.float16,
                          accum_dtype=T.float32)  # fmt: skip


def _check_matmul_hint(h, arch):
    bm, bn = h.block
    (bk,) = h.rstep
    smem = h.pipeline_stage * (bm + bn) * bk * 2 + bm * bn * 2
    assert h.smem_bytes == smem <= arch.smem_cap
    assert h.threads <= arch.max_threads_per_block
    if h.use_tc:
        wm, wn = h.warp
        mma = arch.get_avaliable_tensorintrin_shapes()[0]
        assert bm % wm == 0 and bn % wn == 0 and wm % mma[0] == 0 and wn % mma[1] == 0
        assert h.threads == (bm // wm) * (bn // wn) * arch.warp_size


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", "cuda -arch=sm_90a", "metal"])
def test_matmul_hints_fit_the_device_and_rank_a_tensor_core_tile_first(target):
    arch = get_arch(target)
    hints = _fp16_gemm(4096, 4096, 4096).with_arch(arch).recommend_hints(topk=20)
    assert len(hints) == 20
    assert [h.est_time for h in hints] == sorted(h.est_time for h in hints)
    for h in hints:
        _check_matmul_hint(h, arch)
    top = hints[0]
    assert top.use_tc
    if arch.platform == "CUDA":
        assert min(top.block) >= 128 and top.warp == [64, 64] and top.threads in (128, 256)
        assert top.pipeline_stage >= 3 and top.use_async
        assert top.rasterization_plan is not NoRasterization
    else:  # Metal: 8x8 simdgroup matrices, no cp.async, 32 KB of threadgroup memory
        assert min(top.block) >= 32 and not top.use_async and top.smem_bytes <= 32 * 1024
    d = top.to_dict()
    assert d["block"] == top.block and d["warp"] == top.warp and d["rstep"] == top.rstep


def test_small_gemm_tiles_do_not_exceed_the_problem():
    arch = CUDA("cuda -arch=sm_80")
    for h in _fp16_gemm(64, 32, 48).with_arch(arch).recommend_hints(topk=50):
        assert h.block[0] <= 64 and h.block[1] <= 32 and h.rstep[0] <= 64


def test_roller_configs_run_under_autotune():
    """The GEMM autotune example's conversion of hints to configs, tuned on the cpu
    target and checked against numpy."""
    M = N = 128
    K = 64
    hints = _fp16_gemm(M, N, K).with_arch(CUDA("cuda -arch=sm_80")).recommend_hints(topk=3)
    configs = [
        {"block_M": h.block[0], "block_N": h.block[1], "block_K": h.rstep[0],
         "num_stages": h.pipeline_stage if h.pipeline_stage > 1 else 0,
         "thread_num": (h.block[0] // h.warp[0]) * (h.block[1] // h.warp[1]) * 32}
        for h in hints
    ]  # fmt: skip

    @tilelang.autotune(configs=configs, warmup=1, rep=2)
    @tilelang.jit(out_idx=[-1], target="cpu")
    def gemm(block_M=None, block_N=None, block_K=None, num_stages=None, thread_num=None):
        @T.prim_func
        def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"),
                 C: T.Tensor((M, N), "float16")):  # fmt: skip
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=thread_num) as (
                bx,
                by,
            ):
                A_s = T.alloc_shared((block_M, block_K), "float16")
                B_s = T.alloc_shared((block_N, block_K), "float16")
                C_l = T.alloc_fragment((block_M, block_N), "float32")
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[by * block_M, k * block_K], A_s)
                    T.copy(B[bx * block_N, k * block_K], B_s)
                    T.gemm(A_s, B_s, C_l, transpose_B=True)
                T.copy(C_l, C[by * block_M, bx * block_N])

        return main

    kernel = gemm()
    assert kernel.config in configs
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = kernel(a, b)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64).T,
                               rtol=2e-2, atol=2e-2)  # fmt: skip


def test_matmul_equivalent_function_computes_the_gemm():
    func = _fp16_gemm(128, 64, 96).equivalent_function()
    kernel = tilelang.compile(func, target="cpu")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 96)).astype(np.float16)
    b = rng.standard_normal((64, 96)).astype(np.float16)
    c = np.zeros((128, 64), np.float16)
    kernel(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", "cuda -arch=sm_90a", "metal"])
def test_gemv_reduce_and_attention_hints_fit_the_device(target):
    arch = get_arch(target)
    for h in GEMVTemplate(N=4096, K=4096).with_arch(arch).recommend_hints(topk=10):
        assert h.threads == h.block[1] * h.reduce_thread[0] <= arch.max_threads_per_block
        assert h.rstep[0] % (h.reduce_thread[0] * 8) == 0  # 16-byte loads of float16
    for structure, shape in [("SR", [1024, 4096]), ("SSR", [8, 512, 1024]), ("RS", [4096, 1024])]:
        hints = (
            GeneralReductionTemplate(structure=structure, shape=shape)
            .with_arch(arch)
            .recommend_hints(5)
        )
        assert len(hints) == 5
        for h in hints:
            assert len(h.block) == structure.count("S") and len(h.rstep) == structure.count("R")
            assert h.threads == h.block[-1] * h.reduce_thread[-1] <= arch.max_threads_per_block
    fa = FlashAttentionTemplate(batch_size=4, num_heads=16, head_dim=128, seq_length=2048,
                                seq_kv_length=2048, in_dtype="float16")  # fmt: skip
    hints = fa.with_arch(arch).recommend_hints(topk=10)
    assert hints and hints[0].use_tc
    for h in hints:
        bm, bn = h.block
        assert h.rstep == [128]
        assert (bm * 128 + h.pipeline_stage * 2 * bn * 128) * 2 == h.smem_bytes <= arch.smem_cap


def test_template_errors_name_the_argument():
    arch = CUDA("cuda -arch=sm_80")
    with pytest.raises(ValueError, match=r"MatmulTemplate: K must be a positive int, got 0"):
        MatmulTemplate(M=64, N=64, K=0).with_arch(arch).recommend_hints()
    with pytest.raises(ValueError, match=r"reduce structure must be a string of S and R, one per axis "
                       r"of shape \[4, 4\]; got 'SXR'"):  # fmt: skip
        GeneralReductionTemplate(structure="SXR", shape=[4, 4]).with_arch(arch).recommend_hints()
    with pytest.raises(ValueError, match="recommend_hints: topk must be at least 1, got 0"):
        GEMVTemplate(N=4, K=4).with_arch(arch).recommend_hints(topk=0)


def test_analyzer_places_a_kernel_on_a_carver_device_of_any_platform():
    from tilelang.tools import Analyzer

    func = _fp16_gemm(256, 256, 256).equivalent_function()
    for arch, key in [
        (METAL("metal"), "metal"),
        (CDNA("hip"), "gfx942"),
        (CUDA("cuda -arch=sm_80"), "sm_80"),
    ]:
        r = Analyzer.analysis(func, arch)
        row = ARCH_PEAKS[key]
        assert r.arch == key and r.part == row.part and r.total_flops == 2 * 256**3
        assert r.compute_time == pytest.approx(2 * 256**3 / (row.tflops["fp16"] * 1e12))
