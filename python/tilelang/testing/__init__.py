"""Helpers TileLang's examples and tests import (`tilelang.testing.main()`,
`set_random_seed`, `requires_cuda`, `torch_assert_close` ...), so that those files run
unmodified. pytest and torch are imported only by the helpers that need them."""

import inspect
import operator
import random
import sys

import numpy as np

from tilelang.utils.tensor import torch_assert_close

__all__ = [
    "main",
    "requires_cdna",
    "requires_cuda",
    "requires_cuda_compute_version",
    "requires_cuda_compute_version_eq",
    "requires_cuda_compute_version_ge",
    "requires_cuda_compute_version_gt",
    "requires_cuda_compute_version_le",
    "requires_cuda_compute_version_lt",
    "requires_cuda_or_cdna",
    "requires_gfx950",
    "requires_llvm",
    "requires_metal",
    "requires_package",
    "requires_rocm",
    "set_random_seed",
    "torch_assert_close",
]


def main():
    """Runs pytest on the file that calls it (`if __name__ == "__main__":
    tilelang.testing.main()`), passing on the command line's arguments."""
    import pytest

    caller = inspect.getsourcefile(sys._getframe(1))
    sys.exit(pytest.main([caller, *sys.argv[1:]]))


def set_random_seed(seed=42):
    """Seeds Python's, numpy's and (when installed) torch's generators."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def _cuda_capability():
    """(major, minor) of GPU 0, or None without torch or a GPU."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return tuple(torch.cuda.get_device_capability(0))


def requires_cuda(func):
    """Skips the test where torch sees no CUDA GPU."""
    import pytest

    return pytest.mark.skipif(_cuda_capability() is None, reason="needs a CUDA GPU")(func)


def requires_cuda_or_cdna(func):
    """Skips the test unless a CUDA GPU is present (tilelang has no ROCm backend, so
    a CDNA GPU never counts)."""
    import pytest

    return pytest.mark.skipif(_cuda_capability() is None, reason="needs a CUDA GPU")(func)


def _no_rocm(what):
    def mark(func):
        import pytest

        return pytest.mark.skip(reason=f"needs {what}: tilelang has no ROCm (HIP) backend")(func)

    return mark


requires_rocm = _no_rocm("a ROCm GPU")
requires_cdna = _no_rocm("a CDNA ROCm GPU")
requires_gfx950 = _no_rocm("a gfx950 (CDNA4) GPU")


def requires_metal(func):
    """Skips the test unless a Metal GPU answers (macOS with torch's MPS device)."""
    import pytest

    from tilelang.utils.target import has_mps_device

    return pytest.mark.skipif(not has_mps_device(), reason="needs a Metal GPU (macOS, MPS)")(func)


def requires_llvm(func):
    """TVM's LLVM CPU backend is tilelang's cpu target ("llvm" and "c" name it), which
    compiles generated C++ with the host compiler; the test skips only where this build
    lacks the cpu target."""
    import pytest

    from tilelang.utils.target import available_targets

    return pytest.mark.skipif(
        "cpu" not in available_targets(), reason="needs the cpu target (host C++ compiler)"
    )(func)


def requires_package(*names):
    """Skips the test (or every test of a decorated class) unless each of the Python
    packages `names` imports: `@tilelang.testing.requires_package("bitblas")`."""
    import importlib.util

    import pytest

    missing = [n for n in names if importlib.util.find_spec(n) is None]
    reason = f"needs the Python package(s) {', '.join(missing)}"
    return pytest.mark.skipif(bool(missing), reason=reason)


_MODES = {
    "ge": operator.ge,
    "gt": operator.gt,
    "le": operator.le,
    "lt": operator.lt,
    "eq": operator.eq,
}


def requires_cuda_compute_version(major_version, minor_version=0, mode="ge"):
    """Skips the test unless GPU 0's compute capability compares to (major, minor) by
    `mode` ("ge", "gt", "le", "lt" or "eq"); without a GPU it is skipped too."""
    import pytest

    if mode not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}, got {mode!r}")
    want = (int(major_version), int(minor_version))
    have = _cuda_capability()
    skip = have is None or not _MODES[mode](have, want)
    reason = f"needs CUDA compute capability {mode} {want[0]}.{want[1]}, found " + (
        "no GPU" if have is None else f"{have[0]}.{have[1]}"
    )
    return pytest.mark.skipif(skip, reason=reason)


def requires_cuda_compute_version_ge(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "ge")


def requires_cuda_compute_version_gt(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "gt")


def requires_cuda_compute_version_le(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "le")


def requires_cuda_compute_version_lt(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "lt")


def requires_cuda_compute_version_eq(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "eq")
