"""Setting the project up tells what it does: the README says the install compiles the
core and how to watch it, `make test` builds in the folder the install left (reusing its
core), pytest names the reason of every skip, and the core compiles without GCC 12's
false -Wrestrict warnings."""

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_says_the_install_compiles_the_core_and_how_to_watch_it():
    readme = (ROOT / "README.md").read_text()
    assert "pip install . && python examples/quickstart.py" in readme
    assert "`pip install .` compiles the C++ compiler core" in readme
    assert "2 to 5 minutes on a 2-core machine" in readme
    assert "`pip install -v .` shows each compile step" in readme
    blocks = readme.split("```bash\n")[1:]
    assert [b.split("```")[0].strip() for b in blocks[:2]] == [
        "pip install . && python examples/quickstart.py",
        "make test",
    ]


def _make_build_folder(tmp_path, folders):
    tmp_path.mkdir(exist_ok=True)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for folder in folders:
        (tmp_path / folder).mkdir(parents=True)
    out = subprocess.run(
        ["make", "-n", "build", "py-test", f"PYTHON={sys.executable}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_builds_in_the_folder_the_install_left(tmp_path):
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    out = _make_build_folder(tmp_path, [f"build/{tag}-{tag}-linux_x86_64", "build/cp20-cp20-x"])
    assert f"cmake -S . -B build/{tag}-{tag}-linux_x86_64 -G Ninja" in out
    assert f"cmake --build build/{tag}-{tag}-linux_x86_64" in out
    assert f"TILELANG_DEV_BUILD_DIR={tmp_path}/build/{tag}-{tag}-linux_x86_64" in out
    fresh = _make_build_folder(tmp_path / "fresh", [])
    assert "cmake -S . -B build/dev -G Ninja" in fresh
    assert " -m pytest tests/python -q -rs " in fresh


def test_pytest_reports_every_skip_with_its_reason(tmp_path):
    (tmp_path / "test_one.py").write_text(
        "import pytest\n\n@pytest.mark.skip(reason='needs a GPU of sm_90')\ndef test_a():\n    pass\n"
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "test_one.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "SKIPPED [1] test_one.py:3: needs a GPU of sm_90" in out.stdout, out.stdout


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("source", ["src/ir/dtype.cpp", "src/target/target.cpp"])
def test_the_core_compiles_without_false_restrict_warnings(source, tmp_path):
    """GCC 12 warned -Wrestrict (GCC bug 105651) on `"lit" + std::to_string(...)`; the
    sources append in two steps instead. Compiled as the build does (-O3 -Wall -Wextra)."""
    out = subprocess.run(
        ["g++", "-std=gnu++20", "-O3", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wrestrict",
         f"-I{ROOT / 'include'}", f"-I{ROOT / 'src'}", "-DTL_VERSION=\"0\"", "-c", str(ROOT / source),
         "-o", str(tmp_path / "x.o")],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "warning" not in out.stderr, out.stderr
