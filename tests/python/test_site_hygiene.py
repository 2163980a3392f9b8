"""The package as a neighbour in a Python environment: the TVM facade's .pth finder
never shadows a real TVM and costs little at interpreter start, and a folder where
TileLang's own `tilelang` distribution was installed over this one (or this one over
it) is refused at import with both distributions named."""

import os
import pathlib
import re
import subprocess
import sys

SRC = pathlib.Path(__file__).resolve().parents[2] / "python"  # tilelang/, tilelang-tvm.pth


def run_python(code, pythonpath, *flags):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    return subprocess.run(
        [sys.executable, *flags, "-c", code],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def fake_site(tmp_path, *dist_infos):
    """A site folder holding this package (a link to the checkout's) and dist-info
    folders {name: RECORD lines}."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "tilelang").symlink_to(SRC / "tilelang", target_is_directory=True)
    for name, record in dist_infos:
        (site / name).mkdir()
        (site / name / "RECORD").write_text("".join(f"{line},,\n" for line in record))
    return site


def test_files_of_tilelang_mixed_into_the_folder_are_refused(tmp_path):
    site = fake_site(
        tmp_path,
        ("tilelang_cpp-0.1.0.dist-info", ["tilelang/__init__.py", "tilelang/_C.so"]),
        (
            "tilelang-0.1.15.dist-info",
            ["tilelang/__init__.py", "tilelang/carver/roller/bestfit.py"],
        ),
    )
    out = run_python("import tilelang", [site])
    assert out.returncode == 1
    assert (
        f"ImportError: {site / 'tilelang'} holds the files of two distributions of the package "
        "'tilelang': tilelang-cpp 0.1.0 (this package, a C++ core) and tilelang 0.1.15 "
        "(TileLang's, on TVM), installed one over the other. Remove both (pip uninstall -y "
        "tilelang tilelang-cpp) and install the one you want, or keep them in separate "
        "virtual environments"
    ) in out.stderr


def test_other_distributions_in_the_folder_are_fine(tmp_path):
    site = fake_site(
        tmp_path,
        ("tilelang_cpp-0.1.0.dist-info", ["tilelang/__init__.py"]),
        ("tilelang_extras-2.0.dist-info", ["tilelang_extras/__init__.py"]),
        ("tilelang-0.1.15.dist-info", ["tilelangx/__init__.py"]),  # none of tilelang/
    )
    out = run_python("import tilelang, numpy as np; print(tilelang.cdiv(7, 2))", [site])
    assert out.returncode == 0 and out.stdout.split() == ["4"], out.stderr


def test_a_real_tvm_from_a_later_finder_is_not_shadowed(tmp_path):
    """A finder appended after the facade's (as an editable install's may be) that
    provides `tvm` wins, and tilelang is not imported for it."""
    code = (
        f"import site; site.addsitedir({str(SRC)!r})\n"
        "import importlib.util, sys, types\n"
        "class Loader:\n"
        "    def create_module(self, spec): return types.ModuleType('tvm')\n"
        "    def exec_module(self, m): m.REAL = True\n"
        "class Real:\n"
        "    @staticmethod\n"
        "    def find_spec(name, path=None, target=None):\n"
        "        return importlib.util.spec_from_loader(name, Loader()) if name == 'tvm' else None\n"
        "sys.meta_path.append(Real)\n"
        "import tvm\n"
        "print(getattr(tvm, 'REAL', False), 'tilelang' in sys.modules)\n"
    )
    out = run_python(code, [])
    assert out.returncode == 0 and out.stdout.split() == ["True", "False"], out.stderr


def _importtime_us(code):
    out = run_python(code, [], "-X", "importtime")
    assert out.returncode == 0, out.stderr
    m = re.search(r"import time:\s+\d+ \|\s+(\d+) \| _tilelang_tvm\n", out.stderr)
    assert m, out.stderr
    return int(m.group(1))


def test_the_pth_file_costs_under_5_ms_at_start():
    """`python -X importtime` with the .pth processed: what its module costs (the best
    of three runs, as the machine may be busy)."""
    code = f"import site; site.addsitedir({str(SRC)!r})"
    assert min(_importtime_us(code) for _ in range(3)) < 5000
