"""compile_flags written for nvcc, as upstream TileLang's examples pass them, on every
backend (docs/design/compile_flags.md): NVRTC gets their NVRTC spelling, the host
compiler (cpu, the CUDA emulator) its own, Metal #define lines; flags that mean nothing
for a compiler are dropped (the debug log names them), and a flag no one knows is the
user's error, naming the flag, the target and what the compiler said."""

import logging
import os

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_wgmma_gemm import needs_nvrtc

SM90A = "cuda -arch=sm_90a"

# deepseek_v32/sparse_mla_fwd_pipelined.py's list, then the others' flags.
UPSTREAM = [
    "-O3",
    "-Wno-deprecated-declarations",
    "-U__CUDA_NO_HALF_OPERATORS__",
    "-U__CUDA_NO_HALF_CONVERSIONS__",
    "-U__CUDA_NO_HALF2_OPERATORS__",
    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "--expt-relaxed-constexpr",
    "--expt-extended-lambda",
    "--ptxas-options=-v,--register-usage-level=10",
    "-DNDEBUG",
]
OTHERS = ["--use_fast_math", "-lineinfo", "-Xptxas=-v", "--fast-math"]

# The kernel's own code sees the macros: TL_CF_SCALE from -D, and __USE_FAST_MATH__,
# which nvcc and NVRTC define under --use_fast_math (the host compiler gets it too).
SCALE = """
#ifndef TL_CF_SCALE
#define TL_CF_SCALE 1
#endif
#ifdef __USE_FAST_MATH__
#define TL_CF_FAST 10
#else
#define TL_CF_FAST 0
#endif
#if defined(__CUDACC__) && !defined(TL_EMULATE)
__device__
#endif
inline float tl_cf_scale() { return float(TL_CF_SCALE + TL_CF_FAST); }
"""


@T.prim_func
def scaled(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128) as _:
        T.import_source(SCALE)
        for i in T.Parallel(128):
            B[i] = A[i] * T.call_extern("float32", "tl_cf_scale")


@T.prim_func
def exp_log(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128) as _:
        for i in T.Parallel(128):
            B[i] = T.exp(A[i]) / A[i] + T.log(A[i])


def cubin(kernel):
    with open(os.path.join(kernel.kernel.artifact_dir, "kernel.cubin"), "rb") as f:
        return f.read()


@pytest.fixture
def emulated():
    tilelang.set_emulation(True)
    yield
    tilelang.set_emulation(False)


@pytest.fixture
def no_disk_cache():
    # Each new flag set builds a new prelude entry of the host compiler (the
    # emulator's takes about 20 s at -O3 on two cores); against the headers alone an
    # emulated kernel takes about 6 s, a cpu one under 1 s.
    tilelang.disable_cache()
    yield
    tilelang.enable_cache()


@needs_nvrtc
@pytest.mark.usefixtures("no_disk_cache")  # ptxas reports only when it runs
def test_nvrtc_takes_the_upstream_flags(caplog):
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(scaled, target=SM90A, compile_flags=UPSTREAM + OTHERS)
    assert cubin(kernel)
    text = caplog.text
    # -Xptxas=-v and --ptxas-options=-v,... reach ptxas: its report is logged.
    assert "ptxas info    : Used" in text and "registers" in text
    # What NVRTC has no use for is named in the debug log, with the reason.
    for dropped in [
        "-O3",
        "-Wno-deprecated-declarations",
        "--expt-relaxed-constexpr",
        "--expt-extended-lambda",
    ]:
        assert f"'{dropped}' (" in text
    assert "NVRTC gets none of" in text and "'-lineinfo'" not in text.split("NVRTC gets none of")[1]


@needs_nvrtc
def test_nvrtc_flags_change_the_binary():
    plain = cubin(tilelang.compile(scaled, target=SM90A))
    defined = tilelang.compile(scaled, target=SM90A, compile_flags=["-DTL_CF_SCALE=3"])
    assert cubin(defined) != plain
    # Spelled as two words, -D gives the same binary.
    assert cubin(
        tilelang.compile(scaled, target=SM90A, compile_flags=["-D", "TL_CF_SCALE=3"])
    ) == cubin(defined)
    accurate = cubin(tilelang.compile(exp_log, target=SM90A))
    for spelling in (["--use_fast_math"], ["-use_fast_math"], ["--fast-math"]):
        fast = cubin(tilelang.compile(exp_log, target=SM90A, compile_flags=spelling))
        assert len(fast) < len(accurate)  # the approximate exp and log are shorter
    # -lineinfo adds the line table.
    assert len(cubin(tilelang.compile(exp_log, target=SM90A, compile_flags=["-lineinfo"]))) > len(
        accurate
    )


def run_scaled(target, flags):
    kernel = tilelang.compile(scaled, out_idx=[1], target=target, compile_flags=flags)
    return kernel(np.arange(128, dtype=np.float32))


@pytest.mark.usefixtures("emulated", "no_disk_cache")
def test_the_emulator_runs_with_the_upstream_flags(caplog):
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        b = run_scaled(SM90A, UPSTREAM + OTHERS + ["-DTL_CF_SCALE=3"])
    # -D reaches the kernel's code, --use_fast_math defines __USE_FAST_MATH__.
    np.testing.assert_array_equal(b, 13 * np.arange(128, dtype=np.float32))
    for dropped in ["--ptxas-options=-v,--register-usage-level=10", "-lineinfo", "-Xptxas=-v"]:
        assert f"'{dropped}' (" in caplog.text


@pytest.mark.usefixtures("no_disk_cache")
def test_the_cpu_target_runs_with_the_upstream_flags():
    np.testing.assert_array_equal(
        run_scaled("cpu", UPSTREAM + OTHERS), 11 * np.arange(128, dtype=np.float32)
    )
    np.testing.assert_array_equal(
        run_scaled("cpu", ["-D", "TL_CF_SCALE=4"]), 4 * np.arange(128, dtype=np.float32)
    )
    np.testing.assert_array_equal(run_scaled("cpu", []), np.arange(128, dtype=np.float32))
    # The host compiler's own options pass (nvcc's -Xcompiler hands them on too).
    np.testing.assert_array_equal(
        run_scaled("cpu", ["-Xcompiler", "-DTL_CF_SCALE=5,-fno-strict-aliasing"]),
        5 * np.arange(128, dtype=np.float32),
    )


def test_the_flags_as_given_are_in_the_cache_key():
    a = tilelang.compile(scaled, target="cpu", compile_flags=["-lineinfo"])
    b = tilelang.compile(scaled, target="cpu")
    assert a.cache_key != b.cache_key
    assert a.compile_flags == ["-lineinfo"]


@pytest.mark.parametrize(
    "target, flag",
    [
        pytest.param(SM90A, "--tl-bogus-flag", marks=needs_nvrtc),
        pytest.param(SM90A, "-Xptxas=--tl-bogus-ptxas", marks=needs_nvrtc),  # ptxas refuses it
        (SM90A + " -emulate", "--tl-bogus-flag"),  # refused before the emulator's prelude is built
        ("cpu", "--tl-bogus-flag"),
    ],
)
def test_an_unknown_flag_is_the_users_error(target, flag):
    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(scaled, target=target, compile_flags=["-O3", flag])
    text = str(err.value)
    assert f"compile flag '{flag}' (target {target})" in text
    assert "internal compiler error" not in text
    # What the compiler said: NVRTC and ptxas, or g++ / clang.
    assert "tl-bogus" in text.split("said:")[1]


def test_flag_errors_of_our_own():
    with pytest.raises(
        tilelang.TileLangError,
        match=r"'-arch=sm_80' \(target cuda -arch=sm_90a -emulate\): asks for sm_80",
    ):
        tilelang.compile(scaled, target=SM90A + " -emulate", compile_flags=["-arch=sm_80"])
    with pytest.raises(tilelang.TileLangError, match=r"'-Xptxas' \(target cpu\): needs a value"):
        tilelang.compile(scaled, target="cpu", compile_flags=["-Xptxas"])


def test_metal_turns_macros_into_source_lines():
    kernel = tilelang.compile(
        exp_log, target="metal", compile_flags=UPSTREAM + OTHERS + ["-DTL_CF_SCALE=3", "-DTL_CF_ON"]
    )
    source = kernel.get_kernel_source(kernel_only=False)
    assert source.startswith(
        "#undef __CUDA_NO_HALF_OPERATORS__\n#undef __CUDA_NO_HALF_CONVERSIONS__\n"
        "#undef __CUDA_NO_HALF2_OPERATORS__\n#undef __CUDA_NO_BFLOAT16_CONVERSIONS__\n"
        "#define NDEBUG 1\n#define TL_CF_SCALE 3\n#define TL_CF_ON 1\n"
    )
    with pytest.raises(
        tilelang.TileLangError, match=r"'--tl-bogus-flag' \(target metal\): not supported"
    ):
        tilelang.compile(exp_log, target="metal", compile_flags=["--tl-bogus-flag"])
