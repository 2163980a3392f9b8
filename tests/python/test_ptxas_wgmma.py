"""What ptxas makes of the sm_90a kernels that matter for speed: no wgmma
serialization (ptxas C7515: "wgmma.mma_async instructions are serialized", which
happened when a pipeline's tail step issued a gemm under a guard) and no register
spills. Compiled with nvcc -Xptxas -v; skipped where no nvcc is found (CI installs it)."""

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest
import tilelang
from tilelang import _native

sys.path.insert(0, os.path.dirname(__file__))
from test_examples_cuda_source import nvcc  # noqa: F401  (the fixture)

ROOT = pathlib.Path(__file__).parents[2]
SM90A = "cuda -arch=sm_90a"


def load(name):
    spec = importlib.util.spec_from_file_location(f"ptxas_{name}", ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ptxas_report(nvcc_path, source, tmp_path, fast_math=False):
    cu = tmp_path / "kernel.cu"
    cu.write_text(source)
    include = os.path.join(_native.load().device_include_dir(), "cuda")
    cmd = [nvcc_path, "-arch=sm_90a", "-cubin", "--std=c++17", "-allow-unsupported-compiler"]
    cmd += ["-use_fast_math"] if fast_math else []
    cmd += ["-Xptxas", "-v", f"-I{include}", "-o", str(tmp_path / "kernel.cubin"), str(cu)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return done.stderr


def flash_attention(causal, dim, overlap, block_M=128, threads=256):
    fa = load("flash_attention")
    func = fa.flash_attention.get_tir(
        8, 16, 4096, dim, causal, block_M, 128, threads, 2, "bfloat16", overlap
    )
    return tilelang.compile(func, out_idx=[3], target=SM90A)


def flash_attention_hopper(causal, dim, block_M):
    fa = load("flash_attention")
    func = fa.flash_attention_hopper.get_tir(
        8, 16, 4096, dim, causal, block_M, 128, 132, "bfloat16", True
    )
    return tilelang.compile(func, out_idx=[3], target=SM90A)


CASES = {
    "fa_d128_causal_overlap": lambda: flash_attention(True, 128, True),
    "fa_d128_overlap": lambda: flash_attention(False, 128, True),
    "fa_d64_causal_overlap": lambda: flash_attention(True, 64, True),
    "fa_d64_192x128": lambda: flash_attention(False, 64, False, block_M=192, threads=384),
    # P (64 x 128 per warpgroup, bfloat16) waits in registers for its gemm while the next
    # Q K^T runs: 32 registers as pairs (tl::cast_pair), 64 as 16-bit scalars, which
    # spilled 376 bytes at 160 registers.
    "fa_d64_causal_192x128_overlap": lambda: flash_attention(
        True, 64, True, block_M=192, threads=384
    ),
    # The persistent hand-written schedule with P V left in flight (192 rows on three
    # consumer warpgroups at 160 registers; 128 rows on two at 240).
    "fa_hopper_d64_causal_overlap": lambda: flash_attention_hopper(True, 64, 192),
    "fa_hopper_d128_overlap": lambda: flash_attention_hopper(False, 128, 128),
    "mla_decode": lambda: tilelang.compile(
        load("mla_decode").mla_decode.get_tir(64, 128, 8192, 512, 64, dtype="bfloat16"),
        out_idx=[-1],
        target=SM90A,
    ),
    # Two warpgroups without a producer: 256 threads may use up to 255 registers, and
    # each warpgroup's half of the output must not stay live in the other's region.
    "mla_decode_hopper": lambda: tilelang.compile(
        load("mla_decode").mla_decode_hopper.get_tir(64, 128, 8192, 512, 64, dtype="bfloat16"),
        out_idx=[-1],
        target=SM90A,
    ),
}


SPILL_BYTES = {"fa_hopper_d64_causal_overlap": 20}


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_wgmma_serialization_and_no_spills(name, nvcc, tmp_path):  # noqa: F811
    # The FlashAttention example compiles with tl.enable_fast_math (NVRTC's --use_fast_math).
    fast = name.startswith("fa_") or name == "mla_decode_hopper"
    report = ptxas_report(nvcc, CASES[name]().get_kernel_source(), tmp_path, fast_math=fast)
    assert "C7515" not in report and "serialized" not in report, report
    spills = [int(b) for b in re.findall(r"(\d+) bytes spill stores", report)]
    # (D128 causal with the overlap keeps 16 bytes in local memory: allowed, no more. The
    # persistent D64 causal kernel keeps 20: five values stored once before its tile loop
    # and loaded by each tile's epilogue, after the key loop (5 STL, 5 LDL in its SASS).)
    assert spills and max(spills) <= SPILL_BYTES.get(name, 16), report
