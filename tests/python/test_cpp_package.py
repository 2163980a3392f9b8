"""The C++ package, used as an outside project would, from the two places it is
installed: a `cmake --install` prefix and the package inside an installed wheel
(`python -m tilelang --cmake-dir`).

The checkout's files are copied to build/cpp-package-test/src (kept between runs, so a
later run rebuilds only what changed), the wheel is built from that copy
(scikit-build-core, as `pip install .` builds it) and installed into a private folder,
and the same build folder, configured once more without scikit-build-core's layout,
installs the prefix, which is then moved. The copy, with the build folder inside it, is
then renamed away, and examples/cpp is configured, built and run as a separate CMake
project against the moved prefix alone and against the wheel's --cmake-dir alone, with
TILELANG_DEVICE_DIR unset: nothing can reach the tree the package was built from.
The GEMM checks itself against a reference loop; a missing device directory is a
DeviceDirError the program catches, never an abort or a fall back to a source tree.
The GEMM's exported kernel is loaded and run by load_and_run, which links only the
runtime library; that library holds none of the compiler.

The user's checkout itself is never renamed (tests run from it, and in parallel): the
copy is the tree the package is built from. Building from the copy compiles the core
once (about 3 CPU-minutes; the wheel and the prefix share the build), then only what
changed."""

import contextlib
import fcntl
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Where the copy lives between runs (build/ is ignored by git); its build folder is
# inside it, in the place build/dev has in the checkout.
WORK = os.path.join(ROOT, "build", "cpp-package-test")
SRC = os.path.join(WORK, "src")
SRC_AWAY = os.path.join(WORK, "src.away")
BUILD = os.path.join(SRC, "build", "package")

# Build outputs and tool folders left out of the copy of a checkout that is not a git
# work tree (an unpacked source archive).
_NOT_SOURCE = {"build", ".git", "__pycache__", ".ci-venv", ".pytest_cache", ".whl"}


def _run(cmd, returncode=0, timeout=300, **kw):
    """Runs `cmd`; its exit status must be `returncode` (None: any)."""
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, **kw)
    assert returncode is None or r.returncode == returncode, (
        f"{cmd} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    )
    return r


def _source_files():
    """The checkout's files as its working tree has them (tracked and new, not ignored),
    relative to ROOT."""
    r = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=False,
        capture_output=True,
    )
    if r.returncode == 0:
        names = r.stdout.decode().split("\0")
        return sorted(n for n in names if n and os.path.isfile(os.path.join(ROOT, n)))
    files = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in _NOT_SOURCE and not d.endswith(".egg-info")]
        rel = os.path.relpath(dirpath, ROOT)
        files += [os.path.normpath(os.path.join(rel, f)) for f in filenames]
    return sorted(files)


def _same_file(a, b):
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def _sync_copy():
    """Makes SRC hold the checkout's files: a changed file is written anew (a new
    modification time, so the build sees it), an unchanged one is left alone, one the
    checkout no longer has is removed. SRC's own build folder stays."""
    files = _source_files()
    wanted = set(files)
    for dirpath, dirnames, filenames in os.walk(SRC):
        rel = os.path.relpath(dirpath, SRC)
        if rel == ".":
            dirnames[:] = [d for d in dirnames if d != "build"]
        for f in filenames:
            name = os.path.normpath(os.path.join(rel, f))
            if name not in wanted:
                os.unlink(os.path.join(dirpath, f))
    for name in files:
        src, dst = os.path.join(ROOT, name), os.path.join(SRC, name)
        if os.path.isfile(dst) and _same_file(src, dst):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.lexists(dst):
            os.unlink(dst)
        shutil.copyfile(src, dst)
        shutil.copymode(src, dst)


def _restore_copy():
    """Puts back a copy a run that was stopped left renamed away."""
    if os.path.isdir(SRC_AWAY):
        if os.path.isdir(SRC):
            shutil.rmtree(SRC_AWAY)
        else:
            os.rename(SRC_AWAY, SRC)


@contextlib.contextmanager
def _locked():
    """One run at a time uses the copy (two test sessions of one checkout)."""
    os.makedirs(WORK, exist_ok=True)
    with open(os.path.join(WORK, "lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _outside_env(**extra):
    """The environment of an outside program: no development build, no Python path, no
    device directory override."""
    drop = ("TILELANG_DEV_BUILD_DIR", "TILELANG_DEVICE_DIR", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def _build_wheel(tmp):
    """The wheel, built from SRC into BUILD; returns its install folder (pip --target)."""
    wheel_dir = tmp / "wheel"
    cmd = [sys.executable, "-m", "pip", "wheel", SRC, "--no-deps", "--no-build-isolation", "-q"]
    cmd += ["-w", str(wheel_dir), f"--config-settings=build-dir={BUILD}"]
    if shutil.which("ccache"):
        cmd.append("--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache")
    _run(cmd, timeout=1800, cwd=tmp, env=_outside_env())
    wheels = list(wheel_dir.glob("tilelang_cpp-*.whl"))
    assert len(wheels) == 1, wheels
    site = tmp / "site"
    pip_install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target"]
    _run([*pip_install, str(site), str(wheels[0])], env=_outside_env())
    return site


def _install_prefix(tmp):
    """BUILD configured again as a plain CMake build (no scikit-build-core layout),
    its C++ package built and installed, and the prefix moved: returns (prefix, the
    folder it was installed to)."""
    _run(["cmake", "-S", SRC, "-B", BUILD, "-USKBUILD*"], env=_outside_env())
    targets = ["tilelang_cpp", "tilelang_cpp_static"]
    targets += ["tilelang_cpp_runtime", "tilelang_cpp_runtime_static"]
    _run(["cmake", "--build", BUILD, "--target", *targets], timeout=1800)
    first = tmp / "first_prefix"
    _run(["cmake", "--install", BUILD, "--component", "cxx", "--prefix", str(first)])
    prefix = tmp / "moved_prefix"
    shutil.copytree(first, prefix, symlinks=True)
    shutil.rmtree(first)
    return prefix, str(first)


def _cmake_dir(site):
    r = _run(
        [sys.executable, "-m", "tilelang", "--cmake-dir"], env=_outside_env(PYTHONPATH=str(site))
    )
    return r.stdout.strip()


def _build_examples(examples, build, package_args):
    configure = ["cmake", "-S", str(examples), "-B", str(build), *package_args]
    configure += ["-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    _run(configure, env=_outside_env())
    _run(["cmake", "--build", str(build)], env=_outside_env())
    return {name: str(build / name) for name in ("gemm", "load_and_run", "cuda_launch")}


class Package:
    """What the module fixture built: `prefix` (the moved `cmake --install` prefix),
    `first` (where it was installed before the move), `site` (the installed wheel),
    `cmake_dir` (what --cmake-dir printed there), and the examples built against each:
    `bins` (against the prefix) and `wheel_bins`, name -> executable."""


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cpp_package")
    with _locked():
        _restore_copy()
        os.makedirs(SRC, exist_ok=True)
        _sync_copy()
        p = Package()
        p.site = _build_wheel(tmp)
        p.prefix, p.first = _install_prefix(tmp)
        # The examples are a project of their own, outside any tree.
        examples = tmp / "examples"
        shutil.copytree(os.path.join(SRC, "examples", "cpp"), examples)
        os.rename(SRC, SRC_AWAY)
        try:
            assert not os.path.exists(SRC)
            p.bins = _build_examples(
                examples, tmp / "example_build", [f"-DCMAKE_PREFIX_PATH={p.prefix}"]
            )
            p.cmake_dir = _cmake_dir(p.site)
            p.wheel_bins = _build_examples(
                examples, tmp / "wheel_example_build", [f"-Dtilelang_cpp_DIR={p.cmake_dir}"]
            )
            yield p
        finally:
            os.rename(SRC_AWAY, SRC)


def _forbidden_paths():
    """Paths a hidden dependency on the build machine would show: the checkout (the
    copy the package was built from, and its build folder, are inside it) and any
    development build."""
    paths = {ROOT, os.path.realpath(ROOT), SRC, BUILD}
    dev = os.environ.get("TILELANG_DEV_BUILD_DIR")
    if dev:
        paths |= {dev, os.path.realpath(dev)}
    return paths


def _env(tmp_path, **extra):
    return _outside_env(TILELANG_CACHE_DIR=str(tmp_path / "cache"), **extra)


def test_a_checkout_run_never_uses_the_copys_build(tmp_path):
    """conftest.py picks the newest extension under build/ when TILELANG_DEV_BUILD_DIR
    is unset: never the one this module builds in its copy of the checkout."""
    import conftest

    dev = tmp_path / "build" / "dev"
    copy = tmp_path / "build" / "cpp-package-test" / "src" / "build" / "package"
    for folder, mtime in ((dev, 1_000_000), (copy, 2_000_000)):
        folder.mkdir(parents=True)
        (folder / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
        os.utime(folder / "_C.cpython-311-x86_64-linux-gnu.so", (mtime, mtime))
    assert conftest._newest_build_dir(str(tmp_path)) == str(dev)


def test_the_source_tree_is_gone_during_the_run(package):
    assert not os.path.exists(SRC) and os.path.isdir(SRC_AWAY)
    assert os.path.isfile(os.path.join(SRC_AWAY, "build", "package", "CMakeCache.txt"))


def test_examples_build_without_the_source_tree(package):
    for bins, include, lib_dir in (
        (package.bins, f"{package.prefix}/include", f"{package.prefix}/lib"),
        (
            package.wheel_bins,
            f"{package.site}/tilelang/include",
            f"{package.site}/tilelang/lib",
        ),
    ):
        example_build = os.path.dirname(bins["gemm"])
        with open(os.path.join(example_build, "compile_commands.json")) as f:
            commands = json.load(f)
        assert {os.path.basename(c["file"]) for c in commands} >= {
            "gemm.cpp",
            "load_and_run.cpp",
            "cuda_launch.cpp",
        }
        for c in commands:
            command = c.get("command") or " ".join(c["arguments"])
            assert include in command and "tl/detail" not in command, command
            for path in (*_forbidden_paths(), package.first):
                assert path not in command, (path, command)
        for binary in bins.values():
            dynamic = _run(["readelf", "-d", binary]).stdout
            paths = re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library r(?:un)?path: \[(.*)\]", dynamic)
            assert paths and ":".join(paths).split(":") == [lib_dir], (paths, lib_dir)
            strings = _run(["strings", "-a", binary]).stdout
            for path in _forbidden_paths():
                assert path not in strings, (binary, path)


def test_installed_files_name_no_build_machine_path(package):
    """Nothing installed (libraries, archives, the extension, CMake and pkg-config
    files) names the checkout, the tree it was built from or the install folder."""
    files = [p for p in package.prefix.rglob("*") if p.is_file() and not p.is_symlink()]
    files += [p for p in (package.site / "tilelang").rglob("*") if p.is_file()]
    binaries = [p for p in files if re.search(r"\.(so(\.[\d.]+)?|a)$", p.name)]
    assert {p.name for p in binaries} >= {
        "libtilelang_cpp.so.0.1.0",
        "libtilelang_cpp.a",
        "libtilelang_cpp_runtime.so.0.1.0",
        "libtilelang_cpp_runtime.a",
        "libtilelang_cpp.so.0.1",
        "libtilelang_cpp_runtime.so.0.1",
    }
    assert any(p.name.startswith("_C.") for p in binaries), binaries
    for f in binaries:
        strings = _run(["strings", "-a", str(f)]).stdout
        for path in (*_forbidden_paths(), package.first):
            assert path not in strings, (f, path)
    for f in files:
        if f.suffix in (".cmake", ".pc"):
            text = f.read_text()
            for path in (*_forbidden_paths(), package.first):
                assert path not in text, (f, path)


def _quoted_includes(path):
    with open(path) as f:
        return re.findall(r'^\s*#\s*include\s*"([^"]+)"', f.read(), re.MULTILINE)


def _public_header_closure(root):
    """The headers of root/src that include/tl/*.h include, directly or through one
    another (every include in src/ names its file from src/)."""
    pending = sorted(glob.glob(os.path.join(root, "include", "tl", "*.h")))
    found = set()
    while pending:
        for header in _quoted_includes(pending.pop()):
            if header not in found and os.path.isfile(os.path.join(root, "src", header)):
                found.add(header)
                pending.append(os.path.join(root, "src", header))
    return found


def test_public_headers_and_examples_include_nothing_by_a_source_path():
    public = sorted(glob.glob(os.path.join(ROOT, "include", "tl", "*.h")))
    examples = sorted(glob.glob(os.path.join(ROOT, "examples", "cpp", "*.cpp")))
    assert len(public) >= 5 and len(examples) == 3, (public, examples)
    for f in public + examples:
        for header in _quoted_includes(f):
            assert not header.startswith(("/", "./", "../", "src/", "device/")), (f, header)
            assert "/../" not in header, (f, header)
            if f in examples:  # a program includes the library as <tl/...> only
                assert header.startswith("tl/") and "/detail/" not in header, (f, header)
            else:  # a public header, or one the package installs in tl/detail
                assert header.startswith("tl/") or header in _public_header_closure(ROOT), (
                    f,
                    header,
                )


# The library's own headers the public ones include, directly or through one another:
# the IR (nodes, expressions, statements, buffers, dtypes, the op table and their .def
# lists), the builder, the printer, the kernel and its signature, the target and the
# error types (docs/cpp_api.md, "What is internal"). A change to this list is a change
# to what the package exposes.
_DETAIL_HEADERS = {
    "builder/builder.h",
    "ir/binary_ops.def",
    "ir/buffer.h",
    "ir/dtype.h",
    "ir/dtypes.def",
    "ir/expr.h",
    "ir/expr_ops.h",
    "ir/intrinsics.def",
    "ir/ir.h",
    "ir/node.h",
    "ir/node_kinds.def",
    "ir/op.h",
    "ir/printer.h",
    "ir/scopes.def",
    "ir/stmt.h",
    "ops/tile_ops.def",
    "runtime/kernel.h",
    "runtime/signature.h",
    "support/error.h",
    "target/target.h",
}


def test_only_the_headers_the_public_ones_include_are_installed(package):
    """The installed header set: the public headers in tl/, in tl/detail exactly the
    src/ headers they include (_DETAIL_HEADERS) and the cpu element types of
    <tl/types.h>; every quoted include of an installed header names a file under tl/,
    so the include folder is the one -I a program needs."""
    closure = _public_header_closure(ROOT)
    assert closure == _DETAIL_HEADERS, closure ^ _DETAIL_HEADERS
    public = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "include", "tl", "*.h"))}
    for include in (package.prefix / "include", package.site / "tilelang" / "include"):
        installed = {
            os.path.relpath(p, include)
            for p in glob.glob(os.path.join(include, "**", "*"), recursive=True)
            if os.path.isfile(p)
        }
        assert {n for n in installed if n.count("/") == 1} == {f"tl/{n}" for n in public}
        detail = {
            n[len("tl/detail/") :]
            for n in installed
            if n.startswith("tl/detail/") and not n.startswith("tl/detail/device/")
        }
        assert detail == _DETAIL_HEADERS, (include, detail ^ _DETAIL_HEADERS)
        device = {n for n in installed if n.startswith("tl/detail/device/")}
        assert device == {
            "tl/detail/device/cpu/types.h",
            "tl/detail/device/cpu/float_bits.h",
            "tl/detail/device/common/minifloat.h",
            "tl/detail/device/common/sub_byte.h",
        }, device
        for name in installed:
            for header in _quoted_includes(include / name):
                folder = os.path.dirname(include / name)
                assert header.startswith("tl/") or os.path.isfile(os.path.join(folder, header)), (
                    name,
                    header,
                )
        # The installed copy differs from its source in its include lines alone.
        with open(os.path.join(ROOT, "src", "builder", "builder.h")) as f:
            source = f.read()
        copy = (include / "tl" / "detail" / "builder" / "builder.h").read_text()
        assert copy == source.replace('#include "ir/ir.h"', '#include "tl/detail/ir/ir.h"')


def test_installed_layout_is_relocatable(package):
    prefix = package.prefix
    assert (prefix / "include" / "tl" / "tl.h").is_file()
    assert (prefix / "include" / "tl" / "types.h").is_file()
    assert (prefix / "share" / "tilelang_cpp" / "device" / "cpu" / "tl_cpu.h").is_file()
    cmake_dir = prefix / "lib" / "cmake" / "tilelang_cpp"
    assert (cmake_dir / "tilelang_cppConfigVersion.cmake").is_file()
    pc = (prefix / "lib" / "pkgconfig" / "tilelang_cpp.pc").read_text()
    pcvars = dict(re.findall(r"^(\w+)=(.*)$", pc, re.MULTILINE))
    pcvars["pcfiledir"] = str(prefix / "lib" / "pkgconfig")

    def expand(v):
        return re.sub(r"\$\{(\w+)\}", lambda m: expand(pcvars[m.group(1)]), v)

    assert os.path.isfile(os.path.join(expand(pcvars["includedir"]), "tl", "tl.h"))
    assert os.path.isfile(os.path.join(expand(pcvars["libdir"]), "libtilelang_cpp.so"))
    assert os.path.isfile(os.path.join(expand(pcvars["devicedir"]), "cpu", "tl_cpu.h"))


def _check_gemm_output(r, device):
    assert f"device headers: {device}\n" in r.stdout
    err = re.search(r"gemm 300x200x100 on cpu: max abs error (\S+)", r.stdout)
    assert err and float(err.group(1)) <= 1e-3, r.stdout
    assert r.stdout.rstrip().endswith("OK")


def test_example_runs_against_moved_prefix(package, tmp_path):
    r = _run([package.bins["gemm"]], env=_env(tmp_path), cwd=tmp_path)
    _check_gemm_output(r, package.prefix / "share" / "tilelang_cpp" / "device")


def test_bad_device_dir_env_is_a_caught_error(package, tmp_path):
    missing = tmp_path / "no_device_headers"
    for gemm in (package.bins["gemm"], package.wheel_bins["gemm"]):
        r = _run([gemm], returncode=1, env=_env(tmp_path, TILELANG_DEVICE_DIR=str(missing)))
        assert (
            f"gemm: TILELANG_DEVICE_DIR={missing} does not hold the tilelang device headers "
            "(no cpu/tl_cpu.h there)" in r.stderr
        )


def test_missing_installed_device_dir_is_a_caught_error(package, tmp_path):
    for gemm, device in (
        (package.bins["gemm"], package.prefix / "share" / "tilelang_cpp" / "device"),
        (package.wheel_bins["gemm"], package.site / "tilelang" / "device"),
    ):
        aside = device.parent / "device_aside"
        device.rename(aside)
        try:
            r = _run([gemm], returncode=1, env=_env(tmp_path))
        finally:
            aside.rename(device)
        # An installed library never falls back to the source tree it was built from.
        assert (
            f"gemm: tilelang device headers not found (looked for cpu/tl_cpu.h in {device}); "
            "set TILELANG_DEVICE_DIR" in r.stderr
        ), r.stderr


def _needed(binary):
    r = _run(["readelf", "-d", binary])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", r.stdout)


def _defined_symbols(library):
    r = _run(["nm", "-D", "-C", "--defined-only", library])
    return {line.split(" ", 2)[2] for line in r.stdout.splitlines() if line.count(" ") >= 2}


def _strong_symbols(library):
    """The non-weak functions and data the library defines."""
    r = _run(["nm", "-D", "-C", "--defined-only", library])
    lines = [line.split(" ", 2) for line in r.stdout.splitlines() if line.count(" ") >= 2]
    return {name for _, kind, name in lines if kind in ("T", "D", "B", "R")}


def test_libraries_have_versioned_sonames(package):
    lib = package.prefix / "lib"
    for name in ("libtilelang_cpp", "libtilelang_cpp_runtime"):
        assert (lib / f"{name}.a").is_file(), name
        assert (lib / f"{name}.so.0.1.0").is_file(), name
        assert os.readlink(lib / f"{name}.so") == f"{name}.so.0.1"
        assert os.readlink(lib / f"{name}.so.0.1") == f"{name}.so.0.1.0"
        r = _run(["readelf", "-d", str(lib / f"{name}.so")])
        assert f"Library soname: [{name}.so.0.1]" in r.stdout, r.stdout
        # The static archive holds the same objects as the shared library.
        members = _run(["ar", "t", str(lib / f"{name}.a")]).stdout.split()
        assert members and all(m.endswith(".o") for m in members), members
    # The compiler library brings the runtime library rather than a copy of it.
    assert "libtilelang_cpp_runtime.so.0.1" in _needed(str(lib / "libtilelang_cpp.so"))
    # No function of the runtime is compiled into the compiler library a second time
    # (inline functions and templates, weak in both, aside).
    runtime = _strong_symbols(str(lib / "libtilelang_cpp_runtime.so"))
    assert any(s.startswith("tl::load_kernel(") for s in runtime)
    assert not runtime & _strong_symbols(str(lib / "libtilelang_cpp.so"))


def test_runtime_library_holds_no_compiler(package):
    runtime = _defined_symbols(str(package.prefix / "lib" / "libtilelang_cpp_runtime.so"))
    compiler = _defined_symbols(str(package.prefix / "lib" / "libtilelang_cpp.so"))
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


def _export_and_load(gemm, load_and_run, device, tmp_path):
    """`gemm --export`, then load_and_run on the export with no compiler, no device
    headers and an empty kernel cache: loading compiles nothing."""
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
    env = _env(tmp_path, TILELANG_CXX=str(tmp_path / "no_such_compiler"))
    env["TILELANG_CACHE_DIR"] = str(tmp_path / "empty_cache")
    aside = device.parent / "device_aside"
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


def test_exported_kernel_runs_from_runtime_only_program(package, tmp_path):
    device = package.prefix / "share" / "tilelang_cpp" / "device"
    _export_and_load(package.bins["gemm"], package.bins["load_and_run"], device, tmp_path)


def test_loading_a_broken_export_is_a_caught_error(package, tmp_path):
    gemm, load_and_run = package.bins["gemm"], package.bins["load_and_run"]
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


# Each documented exception type, thrown inside the installed shared library and caught
# by type in the program (docs/cpp_api.md, "Errors").
_ERRORS_CPP = r"""
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "tl/tl.h"

template <typename E, typename F>
int expect(const char* what, F f) {
  try {
    f();
  } catch (const E& e) {
    std::printf("%s: %s\n", what, e.what());
    return 0;
  } catch (const std::exception& e) {
    std::printf("%s: caught as another type: %s\n", what, e.what());
    return 1;
  }
  std::printf("%s: nothing thrown\n", what);
  return 1;
}

int main() {
  int failed = 0;
  failed += expect<tl::UserError>("UserError", [] { tl::Target::parse("no_such_target"); });
  failed += expect<tl::UserError>("UserError with span", [] {
    tl::FunctionBuilder fb("bad");
    fb.set_span({tl::intern_file("my_kernels.cpp"), 42});
    fb.tensor_param("A", {tl::int_imm(4)}, tl::dtype::Float32);
    try {
      fb.tensor_param("A", {tl::int_imm(4)}, tl::dtype::Float32);
    } catch (const tl::UserError& e) {
      std::printf("span: %s line %d\n", e.span().file, e.span().line);
      throw;
    }
  });
  auto compile_without_a_host_compiler = [] {
    setenv("TILELANG_CXX", "/no/such/compiler", 1);
    tl::FunctionBuilder fb("copy");
    tl::Buffer a = fb.tensor_param("a", {tl::int_imm(8)}, tl::dtype::Float32);
    tl::Buffer b = fb.tensor_param("b", {tl::int_imm(8)}, tl::dtype::Float32);
    fb.kernel({tl::int_imm(1)}, {8}, [&](tl::KernelVars) {
      fb.copy({a, {tl::int_imm(0)}, {tl::int_imm(8)}}, {b, {tl::int_imm(0)}, {tl::int_imm(8)}});
    });
    tl::CompileOptions opt;
    opt.target = tl::Target::parse("cpu");
    tl::compile(fb.finish(), opt);
  };
  failed += expect<tl::EnvironmentError>("EnvironmentError", compile_without_a_host_compiler);
  failed += expect<tl::UserError>("EnvironmentError caught as a UserError", compile_without_a_host_compiler);
  failed += expect<tl::DeviceDirError>("DeviceDirError", [] { tl::set_device_include_dir("/no/such/dir"); });
  failed += expect<tl::EnvironmentError>("DeviceDirError caught as an EnvironmentError",
                                         [] { tl::set_device_include_dir("/no/such/dir"); });
  failed += expect<tl::InternalError>("InternalError", [] {
    tl::throw_internal_error("src/check.cpp", 7, "raised inside the library");
  });
  failed += expect<tl::UserError>("UserError from the runtime", [] { tl::load_kernel("/no/such/export"); });
  std::printf(failed ? "FAILED\n" : "OK\n");
  return failed;
}
"""


def _pkg_config(prefix, *args, returncode=0):
    assert shutil.which("pkg-config"), "pkg-config is needed: apt-get install pkg-config"
    env = _outside_env(PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    env.pop("PKG_CONFIG_LIBDIR", None)
    r = _run(["pkg-config", *args], returncode=returncode, env=env)
    # ${pcfiledir}/../.. as pkg-config writes it, normalized for comparison.
    return [
        f[:2] + os.path.normpath(f[2:]) if f.startswith(("-I", "-L")) else f
        for f in r.stdout.split()
    ]


def test_pkg_config_builds_against_the_prefix(package, tmp_path):
    """The pkg-config files as docs/cpp_api.md uses them: load_and_run built with
    tilelang_cpp_runtime's flags alone runs gemm's export; a program built with
    tilelang_cpp's flags links the compiler library (and through it the runtime's),
    and catches every documented exception type thrown inside the shared libraries."""
    prefix = package.prefix
    assert _pkg_config(prefix, "--modversion", "tilelang_cpp") == ["0.1.0"]
    _pkg_config(prefix, "--exists", "tilelang_cpp >= 0.1", "tilelang_cpp_runtime = 0.1.0")
    _pkg_config(prefix, "--exists", "tilelang_cpp >= 0.2", returncode=1)
    compiler_flags = _pkg_config(prefix, "--cflags", "--libs", "tilelang_cpp")
    runtime_flags = _pkg_config(prefix, "--cflags", "--libs", "tilelang_cpp_runtime")
    lib = str(prefix / "lib")
    include = str(prefix / "include")
    for flags in (compiler_flags, runtime_flags):
        # One include folder: the installed headers name the library's own as tl/detail/...
        assert {f"-I{include}", f"-L{lib}"} <= set(flags), flags
        assert [f for f in flags if f.startswith("-I")] == [f"-I{include}"], flags
        assert "-ltilelang_cpp_runtime" in flags, flags
    assert "-ltilelang_cpp" in compiler_flags and "-ltilelang_cpp" not in runtime_flags

    cxx = os.environ.get("CXX", "c++")
    examples = os.path.join(SRC_AWAY, "examples", "cpp")
    load_and_run = str(tmp_path / "load_and_run")
    source = os.path.join(examples, "load_and_run.cpp")
    _run([cxx, source, *runtime_flags, f"-Wl,-rpath,{lib}", "-o", load_and_run])
    assert not any(n.startswith("libtilelang_cpp.so") for n in _needed(load_and_run))
    exported = tmp_path / "gemm_kernel"
    _run([package.bins["gemm"], "--export", str(exported)], env=_env(tmp_path), cwd=tmp_path)
    r = _run([load_and_run, str(exported)], env=_env(tmp_path), cwd=tmp_path)
    assert r.stdout.rstrip().endswith("OK"), r.stdout

    (tmp_path / "errors.cpp").write_text(_ERRORS_CPP)
    errors = str(tmp_path / "errors")
    source = str(tmp_path / "errors.cpp")
    _run([cxx, source, *compiler_flags, f"-Wl,-rpath,{lib}", "-o", errors])
    assert {"libtilelang_cpp.so.0.1", "libtilelang_cpp_runtime.so.0.1"} <= set(_needed(errors))
    r = _run([errors], env=_env(tmp_path), cwd=tmp_path)
    assert (
        "UserError: unknown target 'no_such_target'" in r.stdout
        and "span: my_kernels.cpp line 42\n" in r.stdout
        and "UserError with span: my_kernels.cpp:42: duplicate parameter name 'A'\n" in r.stdout
        and "EnvironmentError: cannot run the host C++ compiler '/no/such/compiler'" in r.stdout
        and "EnvironmentError caught as a UserError: cannot run the host C++ compiler "
        "'/no/such/compiler'"
        in r.stdout
        and "DeviceDirError: set_device_include_dir: /no/such/dir does not hold the tilelang "
        "device headers (no cpu/tl_cpu.h there)\n"
        in r.stdout
        and "DeviceDirError caught as an EnvironmentError: set_device_include_dir: /no/such/dir "
        "does not hold"
        in r.stdout
        and "InternalError: internal compiler error (a bug in tilelang, please report it): "
        "raised inside the library [src/check.cpp:7]\n"
        in r.stdout
        and "UserError from the runtime: /no/such/export is not an exported tilelang kernel"
        in r.stdout
    ), r.stdout
    assert r.stdout.endswith("OK\n"), r.stdout


_VERSION_CHECK = """cmake_minimum_required(VERSION 3.22)
project(version_check LANGUAGES CXX)
foreach(wanted {wanted})
  find_package(tilelang_cpp ${{wanted}} CONFIG {mode})
  message(STATUS "tilelang_cpp ${{wanted}}: found=${{tilelang_cpp_FOUND}}")
endforeach()
"""


def test_find_package_checks_the_version(package, tmp_path):
    """tilelang_cppConfigVersion.cmake: the same major version, no older than asked
    (a 0.x package answers 0.0 and 0.1, not 0.2 or 1.0); a REQUIRED request it does not
    meet stops the configure naming the version found."""
    for package_args, name in (
        ([f"-DCMAKE_PREFIX_PATH={package.prefix}"], "prefix"),
        ([f"-Dtilelang_cpp_DIR={package.cmake_dir}"], "wheel"),
    ):
        for mode, wanted, returncode in (
            ("QUIET", "0.0 0.1 0.1.0 0.1.1 0.2 1.0", 0),
            ("REQUIRED", "1", 1),
        ):
            project = tmp_path / name / mode
            project.mkdir(parents=True)
            text = _VERSION_CHECK.format(wanted=wanted, mode=mode)
            (project / "CMakeLists.txt").write_text(text)
            r = _run(
                ["cmake", "-S", str(project), "-B", str(project / "build"), *package_args],
                returncode=returncode,
                env=_outside_env(),
            )
            if mode == "QUIET":
                found = dict(re.findall(r"-- tilelang_cpp (\S+): found=(\S*)", r.stdout))
                assert found == {
                    "0.0": "1",
                    "0.1": "1",
                    "0.1.0": "1",
                    "0.1.1": "0",
                    "0.2": "0",
                    "1.0": "0",
                }, r.stdout
            else:
                assert 'compatible with requested version "1"' in r.stderr, r.stderr
                assert "version: 0.1.0" in r.stderr, r.stderr


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


def test_python_export_runs_in_the_runtime_only_program(package, tmp_path):
    exported = tmp_path / "python_gemm"
    _python_gemm().export_library(str(exported))
    env = _env(tmp_path, TILELANG_CXX=str(tmp_path / "no_such_compiler"))
    r = _run([package.bins["load_and_run"], str(exported)], env=env, cwd=tmp_path)
    assert "loaded kernel 'gemm' for cpu with 3 parameters" in r.stdout
    err = re.search(r"loaded gemm 300x200x100: max abs error (\S+)", r.stdout)
    assert err and float(err.group(1)) <= 1e-3, r.stdout
    assert r.stdout.rstrip().endswith("OK")


def test_cpp_export_runs_in_python(package, tmp_path):
    import numpy as np
    import tilelang

    exported = tmp_path / "cpp_gemm"
    _run([package.bins["gemm"], "--export", str(exported)], env=_env(tmp_path), cwd=tmp_path)
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


def _check_cuda_launch(cuda_launch, tmp_path):
    """examples/cpp/cuda_launch.cpp: it compiles its kernel with NVRTC anywhere, and
    launches it on device memory and a stream of its own where a GPU answers;
    elsewhere it says so and exits with 77 (CTest's skip code)."""
    from tilelang import _native

    core = _native.load()
    tmp_path.mkdir()
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


def test_cuda_launch_example(package, tmp_path):
    _check_cuda_launch(package.bins["cuda_launch"], tmp_path / "prefix")
    _check_cuda_launch(package.wheel_bins["cuda_launch"], tmp_path / "wheel")


# The package inside the installed wheel.


def _cli(site, *args, returncode=0):
    return _run(
        [sys.executable, "-m", "tilelang", *args],
        returncode=returncode,
        env=_outside_env(PYTHONPATH=str(site)),
    )


def test_cmake_and_lib_dirs_point_into_the_installed_wheel(package):
    site = package.site
    tl_dir = site / "tilelang"
    assert package.cmake_dir == str(tl_dir / "lib" / "cmake" / "tilelang_cpp")
    lib_dir = _cli(site, "--lib-dir").stdout.strip()
    assert lib_dir == str(tl_dir / "lib")
    # One file per library, named by its SONAME (a wheel holds no symlinks), and no
    # static archives.
    assert sorted(os.listdir(lib_dir)) == [
        "cmake",
        "libtilelang_cpp.so.0.1",
        "libtilelang_cpp_runtime.so.0.1",
    ]
    for name in ("libtilelang_cpp", "libtilelang_cpp_runtime"):
        r = _run(["readelf", "-d", os.path.join(lib_dir, f"{name}.so.0.1")])
        assert f"Library soname: [{name}.so.0.1]" in r.stdout, r.stdout
    assert (tl_dir / "include" / "tl" / "tl.h").is_file()
    assert (tl_dir / "include" / "tl" / "runtime.h").is_file()
    assert _cli(site, "--device-dir").stdout.strip() == str(tl_dir / "device")
    # --include-dir keeps its meaning: the -I folder of generated CUDA source, which
    # names it in its second line (docs/cpp_api.md); the C++ headers come with the
    # CMake targets.
    assert _cli(site, "--include-dir").stdout.strip() == str(tl_dir / "device" / "cuda")
    assert (tl_dir / "device" / "cuda" / "tl_cuda.cuh").is_file()
    # --cpp-include-dir: the C++ headers' folder.
    assert _cli(site, "--cpp-include-dir").stdout.strip() == str(tl_dir / "include")


def test_cpp_include_dir_and_lib_dir_build_programs_without_cmake(package, tmp_path):
    """The wheel's C++ package without CMake or pkg-config: the one -I that
    --cpp-include-dir prints and the libraries in --lib-dir (named by their SONAME files:
    a wheel holds no unversioned links) build the GEMM and, with the runtime library
    alone, load_and_run, which runs the GEMM's export."""
    site = package.site
    include = _cli(site, "--cpp-include-dir").stdout.strip()
    lib = _cli(site, "--lib-dir").stdout.strip()
    cxx = os.environ.get("CXX", "c++")
    examples = os.path.join(SRC_AWAY, "examples", "cpp")
    bins = {}
    for name, libraries in (
        ("gemm", ["tilelang_cpp", "tilelang_cpp_runtime"]),
        ("load_and_run", ["tilelang_cpp_runtime"]),
    ):
        bins[name] = str(tmp_path / name)
        cmd = [cxx, "-std=c++20", f"-I{include}", os.path.join(examples, f"{name}.cpp")]
        cmd += [f"-L{lib}", *(f"-l:lib{n}.so.0.1" for n in libraries), f"-Wl,-rpath,{lib}"]
        _run([*cmd, "-o", bins[name]], env=_outside_env())
    device = site / "tilelang" / "device"
    r = _run([bins["gemm"]], env=_env(tmp_path), cwd=tmp_path)
    _check_gemm_output(r, device)
    _export_and_load(bins["gemm"], bins["load_and_run"], device, tmp_path)


def test_wheel_ships_py_typed_and_its_annotations_reach_a_type_checker(package, tmp_path):
    """The wheel holds tilelang/py.typed (PEP 561), so mypy reads the installed package's
    annotations: a user's script sees tilelang.compile return a JITKernel and a wrong
    argument type is reported, where without the marker the package would be Any."""
    site = package.site
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
        env=_outside_env(PYTHONPATH=str(site), MYPYPATH=""),
        cwd=tmp_path,
    )
    out = r.stdout
    assert 'Revealed type is "def (func: tilelang.language.prim_func.PrimFunc' in out, out
    assert "-> tilelang.jit.kernel.JITKernel" in out, out
    assert 'Revealed type is "builtins.int"' in out, out
    assert 'Argument 1 to "parse_size" has incompatible type "float"' in out, out
    assert "py.typed" not in out and "missing library stubs" not in out, out


def test_examples_run_against_the_wheel(package, tmp_path):
    r = _run([package.wheel_bins["gemm"]], env=_env(tmp_path), cwd=tmp_path)
    _check_gemm_output(r, package.site / "tilelang" / "device")
    device = package.site / "tilelang" / "device"
    _export_and_load(
        package.wheel_bins["gemm"], package.wheel_bins["load_and_run"], device, tmp_path
    )


@pytest.mark.parametrize("flag", ["--cmake-dir", "--cpp-include-dir", "--lib-dir"])
def test_cmake_dir_without_a_cxx_package_is_a_clear_error(flag):
    """A development checkout's tilelang (python/tilelang) carries no C++ package."""
    r = _run(
        [sys.executable, "-m", "tilelang", flag],
        returncode=1,
        env={
            **_outside_env(PYTHONPATH=os.path.join(ROOT, "python")),
            "TILELANG_DEV_BUILD_DIR": os.environ.get("TILELANG_DEV_BUILD_DIR", ""),
        },
    )
    assert r.stdout == ""
    assert r.stderr == (
        f"python -m tilelang: this tilelang ({os.path.join(ROOT, 'python', 'tilelang')}) carries no "
        "C++ package: a wheel built by `pip install` carries one; from a source checkout, "
        "`cmake --install <build dir> --prefix <dir>` installs it (docs/cpp_api.md)\n"
    )
