"""`tilelang.jit.adapter.nvrtc`: TileLang's NVRTC execution backend (NVRTCKernelAdapter
over cuda-python), a TileLang internal (see tilelang.jit.adapter). tilelang compiles CUDA
with NVRTC inside its C++ core and runs every kernel through its own runtime, so that
adapter is never available: `is_nvrtc_available` is False, as in TileLang without
cuda-python, `check_nvrtc_available()` raises, and the other names import and raise an
error saying they are out of scope when used."""

from tilelang._compat import forwarding_getattr, out_of_scope

__all__ = ["check_nvrtc_available", "is_nvrtc_available"]

_INSTEAD = "call the JITKernel; kernel.get_kernel_source() / get_host_source() show the code"

# TileLang's NVRTC adapter (not NVRTC itself, which tilelang's core uses) is absent.
is_nvrtc_available = False


def check_nvrtc_available():
    """Raises, as TileLang does when its NVRTC adapter cannot be used (an ImportError)."""
    out_of_scope(
        "tilelang.jit.adapter.nvrtc (TileLang's NVRTC adapter)",
        _INSTEAD,
        kind="a TileLang internal",
    )


__getattr__ = forwarding_getattr(__name__, internal_all=True, instead=_INSTEAD)
