"""The CUDA backend checked without a GPU: every kernel that every Python example builds
is also compiled for sm_80 and sm_90. NVRTC builds each cubin (as the runtime does), and
nvcc must accept the same generated source, so the device headers and the generated code
do not lean on NVRTC-only leniencies. Meanwhile the example runs on the CPU and checks
its results as usual, which drives it through all of its kernels.

NVRTC and nvcc come from a CUDA toolkit or from NVIDIA's pip wheels
(tests/requirements-cuda.txt; .ci/run shows the loader path they need). Without them
the test is skipped, unless TILELANG_REQUIRE_CUDA_TOOLCHAIN=1 (CI sets it)."""

import concurrent.futures
import glob
import importlib
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess

import pytest
import tilelang
from tilelang import _native
from tilelang.utils.target import available_targets

EXAMPLES = sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.py"))
ARCHS = ("sm_80", "sm_90")
# Examples whose kernels cannot target CUDA yet, and the error they must fail with
# (issue 4) instead of being skipped.
NOT_ON_CUDA_YET = {}
# Examples written for one arch only (explicit Hopper control: T.ws, T.tma_copy,
# T.wgmma_gemm need sm_90a).
ARCHS_OF = {"gemm_ws_hopper": ("sm_90a",)}


def find_nvcc():
    """nvcc from this environment's nvidia-cuda-nvcc wheel, else on PATH, in CUDA_HOME or
    in /usr/local/cuda."""
    candidates = []
    wheels = importlib.util.find_spec("nvidia")
    for root in wheels.submodule_search_locations if wheels else []:
        candidates += sorted(glob.glob(os.path.join(root, "*", "bin", "nvcc")), reverse=True)
    candidates.append(shutil.which("nvcc"))
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "bin", "nvcc"))
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


@pytest.fixture(scope="module")
def nvcc():
    missing = []
    if "cuda" not in available_targets():
        missing.append("NVRTC (libnvrtc.so.13 or .so.12 on the loader path)")
    path = find_nvcc()
    if path is None:
        missing.append("nvcc (nvidia-cuda-nvcc wheel, PATH, CUDA_HOME/bin, /usr/local/cuda/bin)")
    if missing:
        message = (
            f"{' and '.join(missing)} not found: install a CUDA toolkit, or "
            "`pip install -r tests/requirements-cuda.txt` and put the wheel's lib directory "
            "on LD_LIBRARY_PATH as .ci/run does"
        )
        if os.environ.get("TILELANG_REQUIRE_CUDA_TOOLCHAIN") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def entry_names(source):
    """The __global__ functions a CUDA source defines."""
    source = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", source)
    return re.findall(r"__global__\s+void\s+(\w+)\s*\(", source)


def nvcc_compile(nvcc, source, arch, out_dir):
    """Compiles `source` to a cubin with nvcc; returns (cubin bytes, None) or (None, log)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cu = out_dir / "kernel.cu"
    cu.write_text(source)
    cubin = out_dir / "kernel.cubin"
    include = os.path.join(_native.load().device_include_dir(), "cuda")
    # Device code only (-cubin); the host compiler merely preprocesses it, so its version
    # does not matter for what this checks.
    cmd = [nvcc, f"-arch={arch}", "-cubin", "--std=c++17", "-allow-unsupported-compiler"]
    cmd += [f"-I{include}", "-o", str(cubin), str(cu)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        return None, f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}"
    return cubin.read_bytes(), None


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_kernels_compile_for_cuda(path, nvcc, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cpu")
    monkeypatch.syspath_prepend(str(path.parent))  # examples import their siblings by name
    jit_kernel = importlib.import_module("tilelang.jit.kernel")
    native_compile = jit_kernel.native_compile
    built, refused = [], []

    # Every kernel the example compiles (for the cpu, to run it) is first compiled for
    # each CUDA arch; a failure is recorded so that all of them are reported together.
    def compile_for_cuda_too(func, target, pass_configs, compile_flags):
        # A kernel the example itself builds for sm_90a (mla_decode_hopper) is Hopper-only.
        archs = ("sm_90a",) if "sm_90a" in target else ARCHS_OF.get(path.stem, ARCHS)
        for arch in archs:
            try:
                kernel = native_compile(func, f"cuda -arch={arch}", pass_configs, compile_flags)
                built.append((arch, kernel))
            except (tilelang.TileLangError, RuntimeError) as e:
                refused.append(f"kernel {func.name} for {arch}: {type(e).__name__}: {e}")
        return native_compile(func, target, pass_configs, compile_flags)

    monkeypatch.setattr(jit_kernel, "native_compile", compile_for_cuda_too)
    spec = importlib.util.spec_from_file_location(f"example_cuda_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    assert "match" in capsys.readouterr().out  # the example verified itself on the cpu

    expected_error = NOT_ON_CUDA_YET.get(path.stem)
    if expected_error:
        assert refused, f"{path.stem} now compiles for cuda: drop it from NOT_ON_CUDA_YET"
        for failure in refused:
            assert expected_error in failure, failure
        return
    assert not refused, "\n\n".join(refused)
    assert built, f"{path.stem} compiled no kernel"
    for arch, kernel in built:
        assert kernel.target == f"cuda -arch={arch}"

    # nvcc runs in parallel: one process per core.
    jobs = [(k.source, arch, tmp_path / f"{i}_{arch}") for i, (arch, k) in enumerate(built)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda job: nvcc_compile(nvcc, *job), jobs))
    rejected = [log for _, log in results if log]
    assert not rejected, "nvcc rejected the generated source:\n" + "\n\n".join(rejected)
    for (source, arch, _), (cubin, _) in zip(jobs, results):
        names = entry_names(source)
        assert names, f"no __global__ function in the source for {arch}:\n{source}"
        for name in names:
            assert name.encode() in cubin, f"nvcc's {arch} cubin lacks the entry {name}"
