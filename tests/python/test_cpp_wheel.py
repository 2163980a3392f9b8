"""The C++ package inside the Python wheel, used as a C++ project would use a pip
install: the wheel built from this checkout (scikit-build-core, as `pip install .`
builds it), installed into a private folder, `python -m tilelang --cmake-dir` asked
where its CMake package is, and examples/cpp configured against that alone, built and
run (the GEMM compiles with the wheel's device headers and exports its kernel; the
runtime-only program loads and runs it).

Building the wheel compiles the core once more (about 3 CPU-minutes, under two minutes
of CI's two cores); its build folder (build/<wheel tag>, as pyproject.toml sets it)
stays, so a later run rebuilds only what changed."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(cmd, returncode=0, timeout=300, **kw):
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, **kw)
    assert r.returncode == returncode, f"{cmd} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def _env(site=None, **extra):
    """The environment of a program that sees only the installed wheel (no build tree)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TILELANG_DEV_BUILD_DIR", "TILELANG_DEVICE_DIR")
    }
    env["PYTHONPATH"] = str(site) if site else ""
    env.update(extra)
    return env


def _cli(site, *args, returncode=0):
    return _run([sys.executable, "-m", "tilelang", *args], returncode=returncode, env=_env(site))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A folder holding the wheel's install (pip install --target)."""
    tmp = tmp_path_factory.mktemp("cpp_wheel")
    wheel_dir = tmp / "wheel"
    build = [sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation"]
    _run([*build, "-w", str(wheel_dir), "-q"], timeout=1800, cwd=tmp)
    wheels = list(wheel_dir.glob("tilelang_cpp-*.whl"))
    assert len(wheels) == 1, wheels
    site = tmp / "site"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(site),
            str(wheels[0]),
        ]
    )
    return site


def test_cmake_and_lib_dirs_point_into_the_installed_wheel(site):
    package = site / "tilelang"
    cmake_dir = _cli(site, "--cmake-dir").stdout.strip()
    assert cmake_dir == str(package / "lib" / "cmake" / "tilelang_cpp")
    lib_dir = _cli(site, "--lib-dir").stdout.strip()
    assert lib_dir == str(package / "lib")
    # One file per library, named by its SONAME (a wheel holds no symlinks), and no
    # static archives.
    assert sorted(os.listdir(lib_dir)) == [
        "cmake",
        "libtilelang_cpp.so.0.1",
        "libtilelang_cpp_runtime.so.0.1",
    ]
    assert (package / "include" / "tl" / "tl.h").is_file()
    assert (package / "include" / "tl" / "runtime.h").is_file()
    for f in os.listdir(cmake_dir):
        text = (package / "lib" / "cmake" / "tilelang_cpp" / f).read_text()
        assert ROOT not in text, f


def test_examples_build_and_run_against_the_wheel(site, tmp_path):
    cmake_dir = _cli(site, "--cmake-dir").stdout.strip()
    example_build = tmp_path / "example_build"
    configure = ["cmake", "-S", os.path.join(ROOT, "examples", "cpp"), "-B", str(example_build)]
    configure += [f"-Dtilelang_cpp_DIR={cmake_dir}", "-DCMAKE_BUILD_TYPE=Release"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    _run(configure)
    _run(["cmake", "--build", str(example_build), "--target", "gemm", "load_and_run"])

    env = _env(TILELANG_CACHE_DIR=str(tmp_path / "cache"))
    exported = tmp_path / "gemm_kernel"
    r = _run([str(example_build / "gemm"), "--export", str(exported)], env=env, cwd=tmp_path)
    assert f"device headers: {site / 'tilelang' / 'device'}\n" in r.stdout
    assert "gemm 300x200x100 on cpu: max abs error" in r.stdout
    assert r.stdout.rstrip().endswith("OK")
    r = _run([str(example_build / "load_and_run"), str(exported)], env=env, cwd=tmp_path)
    assert "loaded gemm 300x200x100: max abs error" in r.stdout
    assert r.stdout.rstrip().endswith("OK")


def test_cmake_dir_without_a_cxx_package_is_a_clear_error():
    """A development checkout's tilelang (python/tilelang) carries no C++ package."""
    r = _run(
        [sys.executable, "-m", "tilelang", "--cmake-dir"],
        returncode=1,
        env=_env(
            os.path.join(ROOT, "python"),
            TILELANG_DEV_BUILD_DIR=os.environ.get("TILELANG_DEV_BUILD_DIR", ""),
        ),
    )
    assert r.stdout == ""
    assert r.stderr == (
        f"python -m tilelang: this tilelang ({os.path.join(ROOT, 'python', 'tilelang')}) carries no "
        "C++ package: a wheel built by `pip install` carries one; from a source checkout, "
        "`cmake --install <build dir> --prefix <dir>` installs it (docs/cpp_api.md)\n"
    )


def test_wheel_ships_py_typed_and_its_annotations_reach_a_type_checker(site, tmp_path):
    """The wheel holds tilelang/py.typed (PEP 561), so mypy reads the installed package's
    annotations: a user's script sees tilelang.compile return a JITKernel and a wrong
    argument type is reported, where without the marker the package would be Any."""
    assert (site / "tilelang" / "py.typed").is_file()
    script = tmp_path / "user.py"
    script.write_text(
        "import tilelang\n"
        "from tilelang.cache import parse_size\n"
        "def build(f: object) -> None:\n"
        "    reveal_type(tilelang.compile)\n"
        "    reveal_type(tilelang.cdiv(7, 2))\n"
        "    parse_size(1.5)\n"
    )
    # torch (imported by some modules) is not analysed, as in pyproject.toml's check.
    config = tmp_path / "mypy.ini"
    config.write_text(
        "[mypy]\npython_version = 3.9\nignore_missing_imports = True\n"
        "follow_imports = silent\nincremental = False\n"
        "[mypy-torch.*,_pytest.*,pytest.*]\nfollow_imports = skip\n"
    )
    r = _run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), str(script)],
        returncode=1,
        env=_env(site, MYPYPATH=""),
        cwd=tmp_path,
    )
    out = r.stdout
    assert 'Revealed type is "def (func: tilelang.language.prim_func.PrimFunc' in out, out
    assert "-> tilelang.jit.kernel.JITKernel" in out, out
    assert 'Revealed type is "builtins.int"' in out, out
    assert 'Argument 1 to "parse_size" has incompatible type "float"' in out, out
    assert "py.typed" not in out and "missing library stubs" not in out, out
