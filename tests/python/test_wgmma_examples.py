"""Every kernel the Python examples build, compiled for sm_90a (the target whose gemms use
wgmma): NVRTC builds each cubin as the runtime does, and nvcc must accept the same
source with -gencode=arch=compute_90a,code=sm_90a. As in test_examples_cuda_source.py,
the example meanwhile runs on the CPU and checks its own results. Skipped without
NVRTC and nvcc, unless TILELANG_REQUIRE_CUDA_TOOLCHAIN=1."""

import concurrent.futures
import importlib
import importlib.util
import os
import subprocess

import pytest
import tilelang
from test_examples_cuda_source import EXAMPLES, entry_names, nvcc  # noqa: F401 (a fixture)
from tilelang import _native

ARCH = "sm_90a"
# Examples with a T.gemm that the compiler gives to wgmma on sm_90a (the others use
# 32-row tiles, too small for wgmma's m64 blocks, and stay on mma.sync).
USES_WGMMA = {"dequant_gemm", "fp8_gemm", "gemm", "quickstart"}


def nvcc_compile_sm90a(nvcc_path, source, out_dir):
    """(cubin bytes, None) or (None, log) of compiling `source` for sm_90a with nvcc."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cu, cubin = out_dir / "kernel.cu", out_dir / "kernel.cubin"
    cu.write_text(source)
    include = os.path.join(_native.load().device_include_dir(), "cuda")
    cmd = [nvcc_path, "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "--std=c++17"]
    cmd += ["-allow-unsupported-compiler", f"-I{include}", "-o", str(cubin), str(cu)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        return None, f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}"
    return cubin.read_bytes(), None


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_kernels_compile_for_sm90a(path, nvcc, monkeypatch, capsys, tmp_path):  # noqa: F811
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cpu")
    jit_kernel = importlib.import_module("tilelang.jit.kernel")
    native_compile = jit_kernel.native_compile
    built, refused = [], []

    def compile_for_sm90a_too(func, target, pass_configs, compile_flags):
        try:
            built.append(native_compile(func, f"cuda -arch={ARCH}", pass_configs, compile_flags))
        except (tilelang.TileLangError, RuntimeError) as e:
            refused.append(f"kernel {func.name}: {type(e).__name__}: {e}")
        return native_compile(func, target, pass_configs, compile_flags)

    monkeypatch.setattr(jit_kernel, "native_compile", compile_for_sm90a_too)
    monkeypatch.syspath_prepend(
        str(path.parent)
    )  # examples import their neighbours (torch_attention)
    spec = importlib.util.spec_from_file_location(f"example_sm90a_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    assert "match" in capsys.readouterr().out  # the example verified itself on the cpu
    assert not refused, "\n\n".join(refused)
    assert built, f"{path.stem} compiled no kernel"
    sources = [k.source for k in built]
    if path.stem in USES_WGMMA:
        assert any("tl::wgmma_gemm_" in s for s in sources), f"{path.stem}: no kernel uses wgmma"

    jobs = [(s, tmp_path / str(i)) for i, s in enumerate(sources)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda job: nvcc_compile_sm90a(nvcc, *job), jobs))
    rejected = [log for _, log in results if log]
    assert not rejected, "nvcc rejected the generated source:\n" + "\n\n".join(rejected)
    for (source, _), (cubin, _) in zip(jobs, results):
        for name in entry_names(source):
            assert name.encode() in cubin, f"nvcc's sm_90a cubin lacks the entry {name}"
