"""`python -m tilelang doctor`: what this installation can do here and, when it cannot,
why. Every answer comes from the functions the package itself uses to pick a target,
find its headers and open its cache, so what the report says is what a kernel gets.

The exit status is 1 when the default target cannot build and run kernels, and a cache
directory the cache refuses counts as that: the cache then keeps kernels in a throwaway
directory (every process compiles everything again) or in none, so the setup does not
work as configured."""

import importlib
import importlib.machinery
import importlib.metadata
import os
import platform
import pwd
import stat
import sys

from tilelang import _native, cache, env
from tilelang.utils import target as target_util


class Report:
    """Sections of (name, value) lines; problems (the default target cannot run kernels
    here: exit status 1) and warnings (worth fixing, exit status 0)."""

    def __init__(self):
        self.sections = []
        self.problems = []
        self.warnings = []

    def section(self, title):
        self.sections.append((title, []))

    def line(self, name, value):
        self.sections[-1][1].append((name, value))

    def problem(self, text):
        self.problems.append(text)

    def warning(self, text):
        self.warnings.append(text)

    def text(self):
        out = []
        for title, lines in self.sections:
            out.append(title)
            width = max((len(name) for name, _ in lines), default=0)
            out += [f"  {name.ljust(width)}  {value}" for name, value in lines]
        if self.warnings:
            out.append("warnings")
            out += [f"  - {w}" for w in self.warnings]
        if self.problems:
            out.append("problems: the default target is unusable (exit status 1)")
            out += [f"  - {p}" for p in self.problems]
        else:
            out.append("the default target is usable")
        return "\n".join(out)


def _module_version(name):
    try:
        module = importlib.import_module(name)
    except ImportError:
        return "not installed"
    return f"{getattr(module, '__version__', '?')} ({os.path.dirname(module.__file__)})"


def _versions(report, C):
    import tilelang

    report.section("versions")
    report.line("tilelang", f"{tilelang.__version__} ({os.path.dirname(tilelang.__file__)})")
    report.line("compiler core", f"{C.core_version()} ({C.__file__})")
    report.line("python", f"{platform.python_version()} ({sys.executable})")
    report.line("numpy", _module_version("numpy"))
    report.line("torch", _module_version("torch"))
    if C.core_version() != tilelang.__version__:
        report.warning(
            f"the compiler core is version {C.core_version()} but the package is "
            f"{tilelang.__version__}: rebuild or reinstall tilelang"
        )


def _host_compiler(C):
    """(usable, description) of the host C++ compiler the cpu target and the
    emulators compile with."""
    try:
        path, version = C.host_compiler_id().split(" | ")[:2]
        rejected = C.host_compiler_rejects()
    except (ValueError, RuntimeError) as e:  # the core names the compiler and TILELANG_CXX
        return False, str(e)
    if rejected:
        return False, f"{path} does not compile C++17: {rejected.strip()}"
    return True, f"{path}: {version}"


def _cuda(C):
    """(usable, description) of CUDA on a GPU: the driver, a GPU and NVRTC."""
    nvrtc = C.nvrtc_version()
    driver = C.cuda_driver_version()
    arch = C.present_gpu_arch()
    parts = [
        f"NVRTC {nvrtc}" if nvrtc else "no NVRTC (libnvrtc not found)",
        f"driver CUDA {driver}" if driver else "no CUDA driver (libcuda.so.1 not found)",
    ]
    if driver:
        parts.append(f"GPU {arch}" if arch else "the driver reports no GPU")
    usable = bool(nvrtc) and target_util.has_cuda_device() and bool(arch)
    return usable, ", ".join(parts)


def _metal():
    """(usable, description) of Metal through torch's MPS device."""
    if platform.system() != "Darwin":
        return False, f"Metal needs macOS (this is {platform.system()})"
    if target_util.has_mps_device():
        return True, "torch reports an MPS device"
    return False, "torch is not installed or reports no MPS device"


def _targets(report, C):
    """Each target's usability and why, and the default target's: a problem when it
    cannot run kernels here."""
    report.section("targets")
    cxx_ok, cxx = _host_compiler(C)
    cuda_ok, cuda = _cuda(C)
    metal_ok, metal = _metal()
    emulate = "usable (the CPU emulator)" if cxx_ok else "unusable (needs the host compiler)"

    def row(usable, why):
        return ("usable: " if usable else "unusable: ") + why

    report.line("cpu", row(cxx_ok, f"host compiler {cxx}"))
    report.line("cuda", row(cuda_ok, cuda))
    report.line("metal", row(metal_ok, metal))
    report.line("cuda/metal emulated", emulate)
    report.line("TILELANG_EMULATE", "on" if env.is_emulation_enabled() else "off")
    try:
        default = target_util.determine_target("auto")
    except (ValueError, TypeError) as e:
        report.line("default", f"cannot be determined: {e}")
        report.problem(f"the default target cannot be determined: {e}")
        return
    kind, *words = default.split()
    if "-emulate" in words or kind == "cpu":
        usable, why = cxx_ok, cxx
    elif kind == "cuda":
        usable, why = cuda_ok, cuda
    else:
        usable, why = metal_ok, metal
    source = "TILELANG_DEFAULT_TARGET" if os.environ.get("TILELANG_DEFAULT_TARGET") else "detected"
    report.line("default", f"{default} ({source}), {'usable' if usable else 'unusable'}")
    if not usable:
        report.problem(f"the default target '{default}' cannot run kernels here: {why}")


def _owner(uid):
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _cache(report, C):
    """The cache directory, its owner, mode, size and whether the cache will use it: a
    problem when it will not while the cache is on."""
    report.section("cache")
    directory = env.cache_dir()
    source = "TILELANG_CACHE_DIR" if os.environ.get("TILELANG_CACHE_DIR") else "default"
    report.line("directory", f"{directory} ({source})")
    report.line("enabled", "yes" if env.is_cache_enabled() else "no (TILELANG_DISABLE_CACHE)")
    try:
        st = os.lstat(directory)
    except OSError:
        report.line("exists", "no (made on the first compile)")
    else:
        report.line("owner", f"{_owner(st.st_uid)}; you are {_owner(os.geteuid())}")
        report.line("mode", f"{stat.S_IMODE(st.st_mode):04o}")
    problem = C.cache_dir_problem(directory)
    if problem:
        report.line("usable", f"no: {problem}")
        if env.is_cache_enabled():
            report.problem(
                f"the cache directory {directory} is refused ({problem}); kernels are "
                "compiled again in every process. Fix its owner or mode (chmod 700) "
                "or point TILELANG_CACHE_DIR at a private directory"
            )
        return
    report.line("usable", "yes")
    if os.path.isdir(directory):
        s = cache.stats(directory)
        report.line("size", f"{s['entries']} entries, {cache.format_size(s['bytes'])}")


def _device_headers(report, C):
    report.section("device headers")
    source = "TILELANG_DEVICE_DIR" if os.environ.get("TILELANG_DEVICE_DIR") else "found"
    try:
        directory = C.device_include_dir()
    except RuntimeError as e:  # DeviceDirError: names what was searched
        report.line("directory", f"missing: {e}")
        report.problem(f"the device headers are missing: {e}")
        return
    report.line("directory", f"{directory} ({source})")
    report.line("cuda -I", os.path.join(directory, "cuda"))


def _other_tilelang_dirs():
    """Folders on sys.path other than this package's holding a `tilelang` package."""
    import tilelang

    ours = os.path.realpath(os.path.dirname(tilelang.__file__))
    found = []
    for entry in sys.path:
        candidate = os.path.realpath(os.path.join(entry or os.getcwd(), "tilelang"))
        is_package = os.path.isfile(os.path.join(candidate, "__init__.py"))
        if is_package and candidate != ours and candidate not in found:
            found.append(candidate)
    return found


def _shadowing(report):
    report.section("shadowing")
    others = _other_tilelang_dirs()
    for other in others:
        report.line("tilelang", f"another package at {other} (this one comes first on sys.path)")
    names = {(d.metadata["Name"] or "").lower() for d in importlib.metadata.distributions()}
    if "tilelang" in names:
        report.line("tilelang", "TileLang's own distribution 'tilelang' is installed too")
        report.warning(
            "TileLang's 'tilelang' distribution is installed next to tilelang-cpp: both "
            "are `import tilelang`; pip uninstall one of them"
        )
    tvm = importlib.machinery.PathFinder.find_spec("tvm")
    if tvm is not None:
        where = tvm.origin or ", ".join(tvm.submodule_search_locations or [])
        report.line("tvm", f"a real TVM at {where}: `import tvm` gives it, not tilelang.tvm")
    else:
        report.line("tvm", "no real TVM: `import tvm` gives tilelang's facade (tilelang.tvm)")
    if not others and "tilelang" not in names:
        report.line("tilelang", "only this one")


def run():
    """The report of this installation (a Report)."""
    report = Report()
    C = _native.load()
    _versions(report, C)
    _targets(report, C)
    _cache(report, C)
    _device_headers(report, C)
    _shadowing(report)
    return report


def main():
    report = run()
    print(report.text())
    return 1 if report.problems else 0
