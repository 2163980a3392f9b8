"""The installed C++ package, used as an outside project would: `cmake --install` of the
test build into a prefix, the prefix copied elsewhere and the original deleted, then
examples/cpp built as a separate CMake project with find_package(tilelang_cpp) and run
with TILELANG_DEVICE_DIR unset. The GEMM checks itself against a reference loop; the
device headers must come from the moved prefix, and a missing device directory must be
a DeviceDirError the program catches, never an abort or a fall back to the source tree.
The GEMM's exported kernel is loaded and run by load_and_run, which links only the
runtime library; that library must hold none of the compiler."""

import json
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
    """Runs `cmd`; its exit status must be `returncode` (None: any)."""
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300, **kw)
    assert returncode is None or r.returncode == returncode, (
        f"{cmd} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    )
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

    # The examples are copied out of the checkout, so nothing in their project can
    # reach the source tree; the compile commands and binaries are checked for it below.
    example_src = tmp / "example_src"
    shutil.copytree(os.path.join(ROOT, "examples", "cpp"), example_src)
    example_build = tmp / "example_build"
    configure = ["cmake", "-S", str(example_src), "-B", str(example_build)]
    configure += [f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"]
    configure.append("-DCMAKE_EXPORT_COMPILE_COMMANDS=ON")
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    cxx = _cache_value(build, "CMAKE_CXX_COMPILER")
    if cxx:
        configure.append(f"-DCMAKE_CXX_COMPILER={cxx}")
    _run(configure)
    _run(["cmake", "--build", str(example_build)])
    return prefix, str(example_build / "gemm"), str(first), str(example_build / "load_and_run")


def _checkout_paths():
    """The paths a hidden dependency on the checkout or its build would show."""
    build = os.path.realpath(_build_dir())
    return {
        ROOT,
        os.path.realpath(ROOT),
        build,
        os.path.join(ROOT, "include"),
        os.path.join(ROOT, "src"),
    }


def test_examples_build_without_the_source_tree(installed):
    prefix, gemm, first, load_and_run = installed
    example_build = os.path.dirname(gemm)
    with open(os.path.join(example_build, "compile_commands.json")) as f:
        commands = json.load(f)
    assert {os.path.basename(c["file"]) for c in commands} >= {"gemm.cpp", "load_and_run.cpp"}
    for c in commands:
        command = c.get("command") or " ".join(c["arguments"])
        assert f"{prefix}/include" in command, command
        for path in (*_checkout_paths(), first):
            assert path not in command, (path, command)
    cuda_launch = os.path.join(example_build, "cuda_launch")
    for binary in (gemm, load_and_run, cuda_launch):
        dynamic = _run(["readelf", "-d", binary]).stdout
        paths = re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library r(?:un)?path: \[(.*)\]", dynamic)
        assert paths and all(p.startswith(str(prefix)) for p in ":".join(paths).split(":")), paths
        strings = _run(["strings", "-a", binary]).stdout
        for path in _checkout_paths():
            assert path not in strings, (binary, path)


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k != "TILELANG_DEVICE_DIR"}
    env["TILELANG_CACHE_DIR"] = str(tmp_path / "cache")
    env.update(extra)
    return env


def test_installed_layout_is_relocatable(installed):
    prefix, _, first, _ = installed
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
    prefix, gemm, _, _ = installed
    r = _run([gemm], env=_env(tmp_path), cwd=tmp_path)
    device = prefix / "share" / "tilelang_cpp" / "device"
    assert f"device headers: {device}\n" in r.stdout
    err = re.search(r"gemm 300x200x100 on cpu: max abs error (\S+)", r.stdout)
    assert err and float(err.group(1)) <= 1e-3, r.stdout
    assert r.stdout.rstrip().endswith("OK")


def test_bad_device_dir_env_is_a_caught_error(installed, tmp_path):
    _, gemm, _, _ = installed
    missing = tmp_path / "no_device_headers"
    r = _run([gemm], returncode=1, env=_env(tmp_path, TILELANG_DEVICE_DIR=str(missing)))
    assert (
        f"gemm: TILELANG_DEVICE_DIR={missing} does not hold the tilelang device headers "
        "(no cpu/tl_cpu.h there)" in r.stderr
    )


def test_missing_installed_device_dir_is_a_caught_error(installed, tmp_path):
    prefix, gemm, _, _ = installed
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


def _needed(binary):
    r = _run(["readelf", "-d", binary])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", r.stdout)


def _defined_symbols(library):
    r = _run(["nm", "-D", "-C", "--defined-only", library])
    return {line.split(" ", 2)[2] for line in r.stdout.splitlines() if line.count(" ") >= 2}


def test_libraries_have_versioned_sonames(installed):
    prefix = installed[0]
    lib = prefix / "lib"
    for name in ("libtilelang_cpp", "libtilelang_cpp_runtime"):
        assert (lib / f"{name}.a").is_file(), name
        assert (lib / f"{name}.so.0.1.0").is_file(), name
        r = _run(["readelf", "-d", str(lib / f"{name}.so")])
        assert f"Library soname: [{name}.so.0.1]" in r.stdout, r.stdout
    # The compiler library brings the runtime library rather than a copy of it.
    assert "libtilelang_cpp_runtime.so.0.1" in _needed(str(lib / "libtilelang_cpp.so"))


def test_runtime_library_holds_no_compiler(installed):
    prefix = installed[0]
    runtime = _defined_symbols(str(prefix / "lib" / "libtilelang_cpp_runtime.so"))
    compiler = _defined_symbols(str(prefix / "lib" / "libtilelang_cpp.so"))
    assert any(s.startswith("tl::load_kernel(") for s in runtime)
    assert any(s.startswith("tl::Kernel::call(") for s in runtime)
    # What compiles: the entry point, the pass pipeline, codegen, NVRTC and the host
    # compiler are in the compiler library and nowhere in the runtime's.
    for prefix_ in (
        "tl::compile(",
        "tl::lower(",
        "tl::codegen_cpu(",
        "tl::codegen_cuda(",
        "tl::nvrtc_compile(",
        "tl::nvrtc()",
        "tl::compile_cpu(",
        "tl::split_kernels(",
    ):
        assert any(s.startswith(prefix_) for s in compiler), prefix_
        assert not any(s.startswith(prefix_) for s in runtime), prefix_


def test_exported_kernel_runs_from_runtime_only_program(installed, tmp_path):
    prefix, gemm, _, load_and_run = installed
    # Linked against the runtime library alone (the link would fail on any compiler
    # symbol the program needed).
    needed = _needed(load_and_run)
    assert "libtilelang_cpp_runtime.so.0.1" in needed, needed
    assert not any(n.startswith("libtilelang_cpp.so") for n in needed), needed
    exported = tmp_path / "gemm_kernel"
    r = _run([gemm, "--export", str(exported)], env=_env(tmp_path), cwd=tmp_path)
    assert f"exported to {exported}\n" in r.stdout
    assert (
        (exported / "export.txt")
        .read_text()
        .startswith("format tilelang-cpp-kernel\nversion 2\ntarget cpu\n")
    )
    # Loading compiles nothing: no host compiler and no device headers are needed.
    env = _env(tmp_path, TILELANG_CXX=str(tmp_path / "no_such_compiler"))
    env["TILELANG_CACHE_DIR"] = str(tmp_path / "empty_cache")
    device = prefix / "share" / "tilelang_cpp" / "device"
    aside = prefix / "share" / "tilelang_cpp" / "device_aside"
    device.rename(aside)
    try:
        r = _run([load_and_run, str(exported)], env=env, cwd=tmp_path)
    finally:
        aside.rename(device)
    assert "loaded kernel 'gemm' for cpu with 3 parameters" in r.stdout
    err = re.search(r"loaded gemm 300x200x100: max abs error (\S+)", r.stdout)
    assert err and float(err.group(1)) <= 1e-3, r.stdout
    assert r.stdout.rstrip().endswith("OK")
    assert not (tmp_path / "empty_cache").exists()


def test_loading_a_broken_export_is_a_caught_error(installed, tmp_path):
    _, gemm, _, load_and_run = installed
    r = _run([load_and_run, str(tmp_path)], returncode=1, env=_env(tmp_path))
    assert (
        f"load_and_run: {tmp_path} is not an exported tilelang kernel: it has no export.txt; "
        "write one with tl::export_kernel(kernel, dir) or kernel.export_library(dir)" in r.stderr
    )
    (tmp_path / "export.txt").write_text("tilelang-cpp-kernel 1\ntarget cpu\nsignature\n")
    r = _run([load_and_run, str(tmp_path)], returncode=1, env=_env(tmp_path))
    assert (
        f"load_and_run: {tmp_path}/export.txt was written by an earlier release "
        "(tilelang-cpp-kernel 1, which carries no checksums) and is not loaded; export the "
        "kernel again with this release" in r.stderr
    )
    (tmp_path / "export.txt").write_text("format tilelang-cpp-kernel\nversion 7\ntarget cpu\n")
    r = _run([load_and_run, str(tmp_path)], returncode=1, env=_env(tmp_path))
    assert (
        f"load_and_run: {tmp_path}/export.txt is a tilelang kernel of format version 7, which "
        "this release does not read (it reads version 2); export the kernel again with this "
        "release" in r.stderr
    )
    (tmp_path / "export.txt").write_text("format tilelang-cpp-kernel\nversion 2\ncpu\n")
    r = _run([load_and_run, str(tmp_path)], returncode=1, env=_env(tmp_path))
    assert f"load_and_run: {tmp_path}/export.txt is damaged: unexpected line 'cpu'" in r.stderr
    # A whole description whose binary is gone, or changed.
    exported = tmp_path / "gemm_kernel"
    _run([gemm, "--export", str(exported)], env=_env(tmp_path), cwd=tmp_path)
    so = (exported / "kernel.so").read_bytes()
    (exported / "kernel.so").write_bytes(so + b"\0")
    r = _run([load_and_run, str(exported)], returncode=1, env=_env(tmp_path))
    assert (
        f"load_and_run: the exported kernel in {exported} is damaged: kernel.so does not match "
        "its checksum in export.txt" in r.stderr
    )
    (exported / "kernel.so").unlink()
    r = _run([load_and_run, str(exported)], returncode=1, env=_env(tmp_path))
    assert (
        f"load_and_run: the exported kernel in {exported} is incomplete: kernel.so is missing"
        in r.stderr
    )


def _python_gemm():
    """The GEMM of examples/cpp/gemm.cpp written in the Python DSL: same name and
    signature, so load_and_run can run its export."""
    import tilelang
    import tilelang.language as T

    M, N, K = 300, 200, 100

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for i, j in T.Parallel(64, 64):
                for k in T.serial(K):
                    if by * 64 + i < M and bx * 64 + j < N:
                        acc[i, j] += T.Cast("float32", A[by * 64 + i, k]) * T.Cast(
                            "float32", B[k, bx * 64 + j]
                        )
            for i, j in T.Parallel(64, 64):
                if by * 64 + i < M and bx * 64 + j < N:
                    C[by * 64 + i, bx * 64 + j] = acc[i, j]

    return tilelang.compile(gemm, target="cpu")


def test_python_export_runs_in_the_runtime_only_program(installed, tmp_path):
    _, _, _, load_and_run = installed
    exported = tmp_path / "python_gemm"
    _python_gemm().export_library(str(exported))
    env = _env(tmp_path, TILELANG_CXX=str(tmp_path / "no_such_compiler"))
    r = _run([load_and_run, str(exported)], env=env, cwd=tmp_path)
    assert "loaded kernel 'gemm' for cpu with 3 parameters" in r.stdout
    err = re.search(r"loaded gemm 300x200x100: max abs error (\S+)", r.stdout)
    assert err and float(err.group(1)) <= 1e-3, r.stdout
    assert r.stdout.rstrip().endswith("OK")


def test_cpp_export_runs_in_python(installed, tmp_path):
    import numpy as np
    import tilelang

    _, gemm, _, _ = installed
    exported = tmp_path / "cpp_gemm"
    _run([gemm, "--export", str(exported)], env=_env(tmp_path), cwd=tmp_path)
    before = tilelang._C.compile_count()
    kernel = tilelang.jit.load_kernel(str(exported))
    assert tilelang._C.compile_count() == before
    assert kernel.name == "gemm" and kernel.target == "cpu" and kernel.out_idx == []
    rng = np.random.default_rng(21)
    a = rng.uniform(-1, 1, (300, 100)).astype(np.float16)
    b = rng.uniform(-1, 1, (100, 200)).astype(np.float16)
    c = np.full((300, 200), -1.0, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-3)


def test_cuda_launch_example(installed, tmp_path):
    """examples/cpp/cuda_launch.cpp, built against the prefix: it compiles its kernel with
    NVRTC anywhere, and launches it on device memory and a stream of its own where a GPU
    answers; elsewhere it says so and exits with 77 (CTest's skip code)."""
    from tilelang import _native

    core = _native.load()
    cuda_launch = os.path.join(os.path.dirname(installed[1]), "cuda_launch")
    r = _run([cuda_launch], returncode=None, env=_env(tmp_path), cwd=tmp_path)
    if not core.nvrtc_version():
        assert r.returncode == 1, r
        assert (
            "cuda_launch: the cuda target needs NVRTC (libnvrtc.so), which was not found"
            in r.stderr
        )
        return
    assert re.search(r"^compiled kernel 'axpy' for cuda -arch=sm_\d+a? \(\d+ bytes", r.stdout), (
        r.stdout
    )
    if core.cuda_device_count() == 0:
        assert r.returncode == 77, r
        assert (
            "so the kernel is not launched here; run this program on a machine with an NVIDIA GPU"
            in (r.stdout)
        )
        return
    assert r.returncode == 0, r
    err = re.search(r"axpy of 1000003 elements on the GPU: max abs error (\S+)", r.stdout)
    assert err and float(err.group(1)) <= 1e-5, r.stdout
    assert r.stdout.rstrip().endswith("OK")
