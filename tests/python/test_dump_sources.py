"""tests/tools/dump_sources.py (`make dump-sources`), the check that a compiler change
leaves generated code as it was: what it writes for an example's kernel is that
kernel's source for each target, the same text tilelang.compile builds."""

import pathlib
import subprocess
import sys

import tilelang

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
from quickstart import matmul


def test_an_examples_kernel_is_dumped_as_its_source(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests/tools/dump_sources.py"), str(tmp_path),
         "--examples", "quickstart"],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    files = sorted(p.name for p in (tmp_path / "quickstart").iterdir())
    assert files == [f"001_gemm_relu.{t}.txt" for t in ("cpu", "metal", "metal4", "sm80", "sm90a")]
    dumped = (tmp_path / "quickstart" / "001_gemm_relu.cpu.txt").read_text()
    kernel = tilelang.compile(matmul.get_tir(512, 512, 512, 128, 128, 32), target="cpu")
    assert dumped == kernel.get_kernel_source()
    assert "tl_kernel_gemm_relu" in (tmp_path / "quickstart" / "001_gemm_relu.sm80.txt").read_text()
