"""The installed C++ package, used as an outside project would: `cmake --install` of the
test build into a prefix, the prefix copied elsewhere and the original deleted, then
examples/cpp built as a separate CMake project with find_package(tilelang_cpp) and run
with TILELANG_DEVICE_DIR unset. The GEMM checks itself against a reference loop; the
device headers must come from the moved prefix, and a missing device directory must be
a DeviceDirError the program catches, never an abort or a fall back to the source tree."""

import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _build_dir():
    build = os.environ.get("TILELANG_DEV_BUILD_DIR")
    if not build:
        pytest.fail(
            "the C++ package test installs from the CMake build tree: run it through `make test` "
            "(or set TILELANG_DEV_BUILD_DIR to a build configured with -DTL_INSTALL_CXX_PACKAGE=ON)"
        )
    assert os.path.isfile(os.path.join(build, "cmake_install.cmake")), build
    libs = [n for n in os.listdir(build) if n.startswith("libtilelang_cpp.so")]
    assert libs, f"{build} has no libtilelang_cpp: configure it with -DTL_INSTALL_CXX_PACKAGE=ON"
    return build


def _cache_value(build, name):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return ""


def _run(cmd, returncode=0, **kw):
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == returncode, f"{cmd} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(prefix, gemm executable): the package installed, moved, and the example built."""
    build = _build_dir()
    tmp = tmp_path_factory.mktemp("cpp_package")
    first = tmp / "first_prefix"
    _run(["cmake", "--install", build, "--prefix", str(first)])
    prefix = tmp / "moved_prefix"
    shutil.copytree(first, prefix, symlinks=True)
    shutil.rmtree(first)

    example_build = tmp / "example_build"
    configure = ["cmake", "-S", os.path.join(ROOT, "examples", "cpp"), "-B", str(example_build)]
    configure += [f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    cxx = _cache_value(build, "CMAKE_CXX_COMPILER")
    if cxx:
        configure.append(f"-DCMAKE_CXX_COMPILER={cxx}")
    _run(configure)
    _run(["cmake", "--build", str(example_build)])
    return prefix, str(example_build / "gemm"), str(first)


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k != "TILELANG_DEVICE_DIR"}
    env["TILELANG_CACHE_DIR"] = str(tmp_path / "cache")
    env.update(extra)
    return env


def test_installed_layout_is_relocatable(installed):
    prefix, _, first = installed
    assert (prefix / "include" / "tl" / "tl.h").is_file()
    assert (prefix / "include" / "tl" / "types.h").is_file()
    assert (prefix / "share" / "tilelang_cpp" / "device" / "cpu" / "tl_cpu.h").is_file()
    cmake_dir = prefix / "lib" / "cmake" / "tilelang_cpp"
    assert (cmake_dir / "tilelang_cppConfigVersion.cmake").is_file()
    # Nothing the consumer reads names the prefix it was installed to or the source tree.
    for f in [*cmake_dir.iterdir(), prefix / "lib" / "pkgconfig" / "tilelang_cpp.pc"]:
        text = f.read_text()
        assert first not in text and ROOT not in text, f
    pc = (prefix / "lib" / "pkgconfig" / "tilelang_cpp.pc").read_text()
    pcvars = dict(re.findall(r"^(\w+)=(.*)$", pc, re.MULTILINE))
    pcvars["pcfiledir"] = str(prefix / "lib" / "pkgconfig")

    def expand(v):
        return re.sub(r"\$\{(\w+)\}", lambda m: expand(pcvars[m.group(1)]), v)

    assert os.path.isfile(os.path.join(expand(pcvars["includedir"]), "tl", "tl.h"))
    assert os.path.isfile(os.path.join(expand(pcvars["libdir"]), "libtilelang_cpp.so"))
    assert os.path.isfile(os.path.join(expand(pcvars["devicedir"]), "cpu", "tl_cpu.h"))


def test_example_runs_against_moved_prefix(installed, tmp_path):
    prefix, gemm, _ = installed
    r = _run([gemm], env=_env(tmp_path), cwd=tmp_path)
    device = prefix / "share" / "tilelang_cpp" / "device"
    assert f"device headers: {device}\n" in r.stdout
    err = re.search(r"gemm 300x200x100 on cpu: max abs error (\S+)", r.stdout)
    assert err and float(err.group(1)) <= 1e-3, r.stdout
    assert r.stdout.rstrip().endswith("OK")


def test_bad_device_dir_env_is_a_caught_error(installed, tmp_path):
    _, gemm, _ = installed
    missing = tmp_path / "no_device_headers"
    r = _run([gemm], returncode=1, env=_env(tmp_path, TILELANG_DEVICE_DIR=str(missing)))
    assert (
        f"gemm: TILELANG_DEVICE_DIR={missing} does not hold the tilelang device headers "
        "(no cpu/tl_cpu.h there)" in r.stderr
    )


def test_missing_installed_device_dir_is_a_caught_error(installed, tmp_path):
    prefix, gemm, _ = installed
    device = prefix / "share" / "tilelang_cpp" / "device"
    aside = prefix / "share" / "tilelang_cpp" / "device_aside"
    device.rename(aside)
    try:
        r = _run([gemm], returncode=1, env=_env(tmp_path))
    finally:
        aside.rename(device)
    # An installed library never falls back to the source tree it was built from.
    assert (
        f"gemm: tilelang device headers not found (looked for cpu/tl_cpu.h in {device}); "
        "set TILELANG_DEVICE_DIR" in r.stderr
    )
