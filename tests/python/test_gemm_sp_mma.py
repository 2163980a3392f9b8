"""T.gemm_sp on the sparse tensor cores (mma.sp m16n8k32 for 16-bit operands, m16n8k64
for int8 / uint8 on sm_80+ and fp8 on sm_89): the emulator's twins of the instructions
(device/emu/mma_emu.h) and tl::gemm_sp_ss (device/cuda/gemm_sp_sm80.cuh) against numpy for
float16, bfloat16, int8 and uint8 (exact), e4m3 and e5m2, every transpose, ragged M / N /
K; the rule that keeps the decoded path (logged at debug level); NVRTC and nvcc accept the
sources, ptxas spills nothing for the example's default config (and the 8-bit kernels) and
the SASS runs HMMA.SP (IMMA.SP, QMMA.SP)."""

import glob
import importlib.util
import logging
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import _native
from tilelang.utils.sparse import compress
from tilelang.utils.target import available_targets

sys.path.insert(0, os.path.dirname(__file__))
from test_examples_cuda_source import nvcc  # noqa: F401  (the fixture)
from test_gemm_sp import operands, semi_sparse, sparse_gemm

ROOT = pathlib.Path(__file__).parents[2]
SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"
SP_CALL = "tl::gemm_sp_ss<"
# sm_90a runs T.gemm_sp on wgmma.sp by default; this keeps it on mma.sp.
MMA_SP_ONLY = {"tl.gemm_sp_wgmma": False}


def compile_sp(
    target, M, N, K, bM, bN, bK, dtype, trans_A=False, trans_B=False, trans_E=False, meta="int16"
):
    func = sparse_gemm(M, N, K, bM, bN, bK, dtype, meta, trans_A, trans_B, trans_E=trans_E)
    return tilelang.compile(func, out_idx=[3], target=target)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_A", [False, True])
@pytest.mark.parametrize("trans_B", [False, True])
def test_mma_sp_matches_numpy_every_transpose(dtype, trans_A, trans_B):
    # M, N and K that the tiles do not divide: the tails' copies read zeros, and E's
    # zero codes are read as positions 0 and 1 (a valid code with zero products).
    M, N, K = 72, 56, 208
    kernel = compile_sp(SM80, M, N, K, 64, 32, 64, dtype, trans_A, trans_B)
    source = kernel.get_kernel_source()
    assert (
        f"{SP_CALL}64, 32, 64, 2, 2, {str(trans_A).lower()}, {str(trans_B).lower()}, false>"
        in source
    )
    assert "sp_code" not in source  # no decoding left
    a_sparse, e, b, ref = operands(M, N, K, dtype, trans_A=trans_A, trans_B=trans_B)
    got = np.asarray(kernel(a_sparse, e, b)).astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "dtype,meta,trans_E",
    [("bfloat16", "uint8", False), ("float16", "int32", False), ("float16", "int16", True)],
)
def test_mma_sp_metadata_widths_and_transposed_metadata(dtype, meta, trans_E):
    # One metadata element describes 8 (uint8), 16 (int16) or 32 (int32) elements of K.
    M, N, K = 64, 64, 256
    kernel = compile_sp(SM80, M, N, K, 64, 64, 128, dtype, meta=meta, trans_E=trans_E)
    assert SP_CALL in kernel.get_kernel_source()
    a_sparse, e, b, ref = operands(M, N, K, dtype, meta, trans_E=trans_E, seed=4)
    got = np.asarray(kernel(a_sparse, e, b)).astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


SM89 = "cuda -arch=sm_89 -emulate"
# (target, dtype, metadata, transpose_A, transpose_B, transpose_E): the 8-bit forms,
# mma.sp m16n8k64 (s8 / u8 into s32 on sm_80+, e4m3 / e5m2 into f32 on sm_89).
EIGHT_BIT = [
    (SM80, "int8", "int32", False, False, False),
    (SM80, "int8", "int32", True, False, False),
    (SM80, "int8", "int16", False, True, False),
    (SM90A, "int8", "uint8", True, True, False),
    (SM80, "int8", "int16", False, False, True),
    (SM80, "uint8", "int32", False, True, False),
    (SM89, "float8_e4m3", "int16", False, True, False),
    (SM89, "float8_e4m3", "int32", True, False, False),
    (SM89, "float8_e5m2", "uint8", False, False, False),
]


@pytest.mark.parametrize(
    "target,dtype,meta,trans_A,trans_B,trans_E",
    EIGHT_BIT,
    ids=[f"{t[13:18]}-{d}-{m}-{'nt'[a]}{'nt'[b]}{'nt'[e]}" for t, d, m, a, b, e in EIGHT_BIT],
)
def test_mma_sp_8bit_matches_numpy(
    caplog, fresh_compiles, target, dtype, meta, trans_A, trans_B, trans_E
):
    # M, N, K the tiles do not divide (K a whole number of metadata elements): the
    # tails read zeros and zero codes.
    M, N, K = 72, 40, 320
    accum = "int32" if dtype.endswith("int8") else "float32"
    func = sparse_gemm(
        M, N, K, 64, 32, 64, dtype, meta, trans_A, trans_B, accum=accum, trans_E=trans_E
    )
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(func, out_idx=[3], target=target)
    assert "T.gemm_sp runs on the sparse tensor cores (mma.sp m16n8k64)" in caplog.text
    source = kernel.get_kernel_source()
    assert (
        f"{SP_CALL}64, 32, 64, 2, 2, {str(trans_A).lower()}, {str(trans_B).lower()}, {str(trans_E).lower()}>"
        in source
    )
    assert "sp_code" not in source
    a_sparse, e, b, ref = operands(
        M, N, K, dtype, meta, trans_A, trans_B, trans_E, seed=len(meta) + trans_A
    )
    got = np.asarray(kernel(a_sparse, e, b))
    if accum == "int32":
        np.testing.assert_array_equal(got, ref.astype(np.int64))
    else:
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=1e-6, atol=1e-6)


def test_mma_sp_8bit_reports_invalid_metadata():
    """A code naming one position twice fails the launch in emulation for m16n8k64 too."""
    M, N, K = 32, 32, 128
    kernel = tilelang.compile(
        sparse_gemm(M, N, K, 32, 32, 128, "int8", "int32", accum="int32"), out_idx=[3], target=SM80
    )
    a_sparse, e, b, _ = operands(M, N, K, "int8", "int32")
    e = e.copy()
    e[9, 1] = np.int32(0x44444A44)  # row 9, K elements 32 + 4 * 2 .. + 3: code 0b1010
    with pytest.raises(
        tilelang.TileLangError,
        match=r"mma.sp: the metadata of row 9, K elements 40-43 names position 2 twice \(code 10\)",
    ):
        kernel(a_sparse, e, b)


def dense_gemm(M, N, K, dtype):
    """A dense T.gemm of a whole M x K by K x N tile: mma.sync m16n8k16 on sm_80."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), dtype)
            B_s = T.alloc_shared((K, N), dtype)
            C_f = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_f)
            T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C)

    return main


def test_mma_sp_accumulates_in_float32_like_the_instruction():
    """Values whose sum needs float32 (2^-12 steps on top of 2^8): the twin adds the 16
    kept products of each instruction in float, in K order, as the dense m16n8k16 pair
    on the decoded A does, so both agree bit for bit here, on sm_80 and sm_90a."""
    M, N, K = 32, 32, 64
    rng = np.random.default_rng(7)
    a = semi_sparse(M, K, "float16", seed=7).astype(np.float32) * 64
    b = (rng.integers(-64, 65, size=(K, N)) / 1024).astype(np.float16)
    a = a.astype(np.float16)
    a_sparse, e = compress(a)
    dense = tilelang.compile(dense_gemm(M, N, K, "float16"), out_idx=[2], target=SM80)
    want = np.asarray(dense(a, b))
    for target in (SM80, SM90A):
        sparse = compile_sp(target, M, N, K, 32, 32, 64, "float16")
        assert SP_CALL in sparse.get_kernel_source()
        got = np.asarray(sparse(a_sparse, e, b))
        np.testing.assert_allclose(
            got, a.astype(np.float64) @ b.astype(np.float64), rtol=2e-6, atol=1e-5
        )
        np.testing.assert_array_equal(got, want)


def test_invalid_metadata_is_reported_by_the_emulator():
    """A code naming one position twice (0b0101), which compress never writes and for
    which the PTX ISA leaves mma.sp undefined, fails the launch in emulation."""
    M, N, K = 32, 32, 64
    kernel = compile_sp(SM80, M, N, K, 32, 32, 64, "float16")
    a_sparse, e, b, _ = operands(M, N, K, "float16")
    e = e.copy()
    e[3, 1] = np.int16(0b0101_0100_0100_0100)
    with pytest.raises(
        tilelang.TileLangError,
        match=r"mma.sp: the metadata of row 3, K elements 28-31 names position 1 twice \(code 5\)",
    ):
        kernel(a_sparse, e, b)


FP8_SM = "mma.sp of fp8 operands is emitted for sm_89 only (sm_80 has no fp8 tensor cores, sm_90 runs the fp8 mma.sp as f16 instructions), not sm_"


@pytest.mark.parametrize(
    "target,dtype,meta,why",
    [
        (
            SM80,
            "float32",
            "int16",
            (
                "mma.sp is emitted for float16 or bfloat16 (m16n8k32), int8 or uint8 and fp8 "
                "(m16n8k64) A and B, not float32 x float32"
            ),
        ),
        (SM80, "float8_e4m3", "int16", FP8_SM + "80"),
        (SM90A, "float8_e4m3", "int16", FP8_SM + "90"),
        ("cpu", "float16", "int16", "the target has no mma.sp (sm_80 and later)"),
    ],
)
def test_other_gemms_keep_the_decoded_tile_and_say_why(
    caplog, fresh_compiles, target, dtype, meta, why
):
    M, N, K = 64, 32, 128
    accum = "int32" if dtype == "int8" else "float32"
    func = sparse_gemm(M, N, K, 64, 32, 64, dtype, meta, False, True, accum=accum)
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(func, out_idx=[3], target=target)
    assert f"T.gemm_sp decodes A into a dense tile and runs T.gemm: {why}" in caplog.text
    assert SP_CALL not in kernel.get_kernel_source()


@pytest.mark.parametrize(
    "target,configs",
    [
        ("cuda -arch=sm_86 -emulate", {}),
        # sm_90a takes mma.sp whether its gemms take wgmma or not (select_gemm_sp.h).
        (SM90A, {}),
        (SM90A, {"tl.disable_wgmma": True}),
    ],
)
def test_the_choice_of_mma_sp_is_logged(caplog, fresh_compiles, target, configs):
    M, N, K = 64, 64, 128
    func = sparse_gemm(M, N, K, 64, 64, 64, "bfloat16", "int16")
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(func, out_idx=[3], target=target, pass_configs=configs)
    assert "T.gemm_sp runs on the sparse tensor cores (mma.sp m16n8k32)" in caplog.text
    a_sparse, e, b, ref = operands(M, N, K, "bfloat16", seed=9)
    np.testing.assert_allclose(
        np.asarray(kernel(a_sparse, e, b)).astype(np.float64), ref, rtol=1e-6, atol=1e-6
    )


def test_slices_keep_the_decoded_tile():
    """Two T.gemm_sp over the two halves of K of staged tiles (slices, not whole tiles)
    are not mma.sp's: the decoded path runs them, and the sum is right."""

    @T.prim_func
    def main(
        A: T.Tensor((32, 64), "float16"),
        E: T.Tensor((32, 8), "int16"),
        B: T.Tensor((128, 32), "float16"),
        C: T.Tensor((32, 32), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((32, 64), "float16")
            E_s = T.alloc_shared((32, 8), "int16")
            B_s = T.alloc_shared((128, 32), "float16")
            C_f = T.alloc_fragment((32, 32), "float32")
            T.copy(A, A_s)
            T.copy(E, E_s)
            T.copy(B, B_s)
            T.clear(C_f)
            T.gemm_sp(A_s[:, 0:32], E_s[:, 0:4], B_s[0:64, :], C_f)
            T.gemm_sp(A_s[:, 32:64], E_s[:, 4:8], B_s[64:128, :], C_f)
            T.copy(C_f, C)

    a_sparse, e, b, ref = operands(32, 32, 128, "float16", seed=5)
    kernel = tilelang.compile(main, out_idx=[3], target=SM80)
    assert SP_CALL not in kernel.get_kernel_source()
    np.testing.assert_allclose(np.asarray(kernel(a_sparse, e, b)), ref, rtol=1e-6, atol=1e-6)


def example_kernel(target):
    spec = importlib.util.spec_from_file_location(
        "example_gemm_sp", ROOT / "examples" / "gemm_sp.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    func = mod.gemm_sp.get_tir(4096, 4096, 4096)  # the example's default tile config
    # mma.sp on every arch: on sm_90a wgmma.sp is the default (test_gemm_sp_wgmma.py).
    return tilelang.compile(func, out_idx=[-1], target=target, pass_configs=MMA_SP_ONLY)


needs_nvrtc = pytest.mark.skipif(
    "cuda" not in available_targets(), reason="NVRTC is not on this machine"
)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90a"])
def test_nvrtc_accepts_the_mma_sp_source(arch):
    source = example_kernel(f"cuda -arch={arch}").get_kernel_source()
    assert f"{SP_CALL}128, 128, 64, 2, 2, false, false, false>" in source
    # T.Pipelined keeps its cp.async stages: the gemm reads E, it does not write it.
    assert "tl::cp_async_wait<" in source and source.count("tl::cp_async_gs") >= 6
    if arch == "sm_90a":  # A's tiles come through TMA, the gemm stays mma.sp
        assert "tl::tma_load<" in source and "wgmma" not in source


def cuobjdump():
    """The CUDA toolkit's cuobjdump, or one from a pip wheel (nvidia-cuda-cuobjdump, or
    the copy the triton wheel carries)."""
    found = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if not found and home and os.path.exists(os.path.join(home, "bin", "cuobjdump")):
            found = os.path.join(home, "bin", "cuobjdump")
    for site in sys.path:
        if not found:
            hits = glob.glob(os.path.join(site, "nvidia", "cu*", "bin", "cuobjdump"))
            hits += glob.glob(
                os.path.join(site, "triton", "backends", "nvidia", "bin", "cuobjdump")
            )
            found = hits[0] if hits else None
    return found


def require_cuobjdump():
    """cuobjdump's path for a SASS check; without one the test skips, or fails where the
    CUDA toolchain is required (TILELANG_REQUIRE_CUDA_TOOLCHAIN=1: CI, which has the
    triton wheel's copy)."""
    tool = cuobjdump()
    if tool is None:
        message = "cuobjdump not found (CUDA toolkit, nvidia-cuda-cuobjdump or triton wheel)"
        if os.environ.get("TILELANG_REQUIRE_CUDA_TOOLCHAIN") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return tool


def cubin_with_report(nvcc, source, arch, tmp):  # noqa: F811
    """`source` through nvcc -cubin -Xptxas -v for `arch`: (cubin path, ptxas report)."""
    cu, cubin = tmp / "kernel.cu", tmp / "kernel.cubin"
    cu.write_text(source)
    include = os.path.join(_native.load().device_include_dir(), "cuda")
    cmd = [nvcc, f"-arch={arch}", "-cubin", "--std=c++17", "-allow-unsupported-compiler"]
    cmd += ["-Xptxas", "-v", f"-I{include}", "-o", str(cubin), str(cu)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return cubin, done.stderr


def spill_bytes(report):
    """The spill stores and loads ptxas reports (an empty list: no report)."""
    return [int(b) for b in re.findall(r"(\d+) bytes spill (?:stores|loads)", report)]


@pytest.fixture(scope="module", params=["sm_80", "sm_90a"])
def example_cubin(request, nvcc, tmp_path_factory):  # noqa: F811
    """The example's default config for sm_80 and sm_90a (mma.sp on both), through nvcc
    -Xptxas -v: (cubin path, ptxas report)."""
    arch = request.param
    source = example_kernel(f"cuda -arch={arch}").get_kernel_source()
    return cubin_with_report(nvcc, source, arch, tmp_path_factory.mktemp(f"gemm_sp_{arch}"))


@needs_nvrtc
def test_ptxas_spills_nothing_for_the_examples_default_config(example_cubin):
    report = example_cubin[1]
    spills = spill_bytes(report)
    assert spills and max(spills) == 0, report


@needs_nvrtc
def test_the_sass_runs_hmma_sp(example_cubin):
    tool = require_cuobjdump()
    sass = subprocess.run(
        [tool, "-sass", str(example_cubin[0])], capture_output=True, text=True, check=True
    ).stdout
    # 2 x 2 warps over 128 x 128: each warp's 64 x 64 tile is 4 x 8 m16n8k32 per k-step,
    # two k-steps per 64-wide K tile.
    assert len(re.findall(r"\bHMMA\.SP\.16832\.F32\b", sass)) >= 64, sass[:4000]
    assert not re.search(r"\bHMMA\.16816\b", sass), "dense mma.sync left in the SASS"
    assert "HGMMA" not in sass, "dense wgmma left in the SASS"


def test_an_accumulator_left_in_shared_memory_reads_the_kept_values():
    """An accumulator that layout inference keeps in shared memory (here: T.fill of part
    of it) after select_gemm_sp chose mma.sp: the gemm becomes a parallel nest of dot
    products that read A through its metadata (lower_gemm_loops), still right."""

    @T.prim_func
    def main(
        A: T.Tensor((32, 32), "float16"),
        E: T.Tensor((32, 4), "int16"),
        B: T.Tensor((64, 32), "float16"),
        C: T.Tensor((32, 32), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((32, 32), "float16")
            E_s = T.alloc_shared((32, 4), "int16")
            B_s = T.alloc_shared((64, 32), "float16")
            C_f = T.alloc_fragment((32, 32), "float32")
            T.copy(A, A_s)
            T.copy(E, E_s)
            T.copy(B, B_s)
            T.clear(C_f)
            T.fill(C_f[0:16, :], 1)
            T.gemm_sp(A_s, E_s, B_s, C_f)
            T.copy(C_f, C)

    a_sparse, e, b, ref = operands(32, 32, 64, "float16", seed=12)
    ref[:16] += 1
    kernel = tilelang.compile(main, out_idx=[3], target=SM80)
    source = kernel.get_kernel_source()
    assert SP_CALL not in source and "sp_code" not in source
    np.testing.assert_allclose(np.asarray(kernel(a_sparse, e, b)), ref, rtol=1e-6, atol=1e-6)


def test_sm90a_runs_mma_sp_beside_a_dense_wgmma(caplog, fresh_compiles):
    """On sm_90a a kernel's dense T.gemm takes wgmma while its T.gemm_sp takes mma.sp
    (tl.gemm_sp_wgmma=False; select_gemm_sp.h): D = (A @ B) @ W, A 2:4 sparse, the
    first product rounded to float16 in shared memory."""
    M, N, K, P = 64, 64, 128, 64

    @T.prim_func
    def main(
        A: T.Tensor((M, K // 2), "float16"),
        E: T.Tensor((M, K // 16), "int16"),
        B: T.Tensor((K, N), "float16"),
        W: T.Tensor((N, P), "float16"),
        D: T.Tensor((M, P), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K // 2), "float16")
            E_s = T.alloc_shared((M, K // 16), "int16")
            B_s = T.alloc_shared((K, N), "float16")
            W_s = T.alloc_shared((N, P), "float16")
            C_s = T.alloc_shared((M, N), "float16")
            C_f = T.alloc_fragment((M, N), "float32")
            D_f = T.alloc_fragment((M, P), "float32")
            T.copy(A, A_s)
            T.copy(E, E_s)
            T.copy(B, B_s)
            T.copy(W, W_s)
            T.clear(C_f)
            T.gemm_sp(A_s, E_s, B_s, C_f)
            T.copy(C_f, C_s)
            T.clear(D_f)
            T.gemm(C_s, W_s, D_f)
            T.copy(D_f, D)

    a_sparse, e, b, ref = operands(M, N, K, "float16", seed=11)
    w = (np.random.default_rng(12).integers(-4, 5, size=(N, P)) / 4).astype(np.float16)
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(main, out_idx=[4], target=SM90A, pass_configs=MMA_SP_ONLY)
    assert "T.gemm_sp runs on the sparse tensor cores (mma.sp m16n8k32)" in caplog.text
    source = kernel.get_kernel_source()
    assert SP_CALL in source and "tl::wgmma_gemm_ss<" in source
    c = ref.astype(np.float16).astype(np.float64)  # exact: small integers over 16
    np.testing.assert_allclose(
        np.asarray(kernel(a_sparse, e, b, w)), c @ w.astype(np.float64), rtol=1e-6, atol=1e-6
    )
    if "cuda" in available_targets():  # NVRTC accepts the mixed source
        tilelang.compile(main, out_idx=[4], target="cuda -arch=sm_90a", pass_configs=MMA_SP_ONLY)


# (arch, dtype, metadata, the SASS instruction): the 8-bit forms at a 128 x 128 x 128
# tile of 4 warps, B stored [N][K].
EIGHT_BIT_SASS = [
    ("sm_80", "int8", "int32", "IMMA.SP.16864.S8.S8"),
    ("sm_90a", "uint8", "int32", "IMMA.SP.16864.U8.U8"),
    ("sm_89", "float8_e4m3", "int16", "QMMA.SP.16864.F32.E4M3.E4M3"),
]


@needs_nvrtc
@pytest.mark.parametrize(
    "arch,dtype,meta,sass_op", EIGHT_BIT_SASS, ids=[c[0] + "-" + c[1] for c in EIGHT_BIT_SASS]
)
def test_8bit_mma_sp_compiles_without_spills_and_runs_the_sparse_mma(
    nvcc,  # noqa: F811
    tmp_path,
    arch,
    dtype,
    meta,
    sass_op,
):
    accum = "int32" if dtype.endswith("int8") else "float32"
    func = sparse_gemm(
        4096, 4096, 4096, 128, 128, 128, dtype, meta, False, True, stages=3, accum=accum
    )
    source = tilelang.compile(
        func, out_idx=[3], target=f"cuda -arch={arch}"
    ).get_kernel_source()  # NVRTC
    assert f"{SP_CALL}128, 128, 128, 2, 2, false, true, false>" in source
    cubin, report = cubin_with_report(nvcc, source, arch, tmp_path)
    spills = spill_bytes(report)
    assert spills and max(spills) == 0, report
    tool = require_cuobjdump()
    sass = subprocess.run(
        [tool, "-sass", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    mmas = set(re.findall(r"\b[A-Z]MMA\.[\w.]+", sass))
    assert mmas == {sass_op}, sorted(mmas)
    # 2 x 2 warps over 128 x 128: 4 x 8 m16n8k64 per k-step and warp, two k-steps per K tile.
    assert sass.count(sass_op) >= 64
