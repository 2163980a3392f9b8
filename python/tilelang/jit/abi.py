"""TileLang's `tilelang.jit.abi`: how its tvm_ffi backend passes arguments to TVM's
packed functions. tilelang's kernels take DLPack tensors and scalars through its own C++
runtime (docs/design/foundation.md), so these names raise an error saying so."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    "tilelang.jit.abi", internal_all=True,
    instead="call the JITKernel with tensors; out_idx outputs are allocated for you",
)  # fmt: skip
