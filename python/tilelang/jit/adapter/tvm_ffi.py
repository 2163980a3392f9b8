"""`tilelang.jit.adapter.tvm_ffi`: a TileLang execution-backend internal (see
tilelang.jit.adapter); its names raise an error saying they are out of scope."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    __name__, internal_all=True,
    instead="call the JITKernel; kernel.get_kernel_source() / get_host_source() show the code",
)  # fmt: skip
