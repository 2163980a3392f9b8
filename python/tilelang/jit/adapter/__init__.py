"""TileLang's `tilelang.jit.adapter`: its execution backends' adapters (tvm_ffi, cython,
nvrtc, cutedsl, torch) that wrap TVM runtime modules. tilelang runs every kernel through
its C++ runtime (JITKernel; execution_backend names map onto it), so the adapter classes
raise an error saying they are out of scope."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    "tilelang.jit.adapter", internal_all=True,
    instead="call the JITKernel; kernel.get_kernel_source() / get_host_source() show the code",
)  # fmt: skip
