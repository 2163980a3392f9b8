"""`tvm.runtime`: tensors for kernel arguments. tilelang kernels take numpy arrays and
torch tensors directly, so `tvm.runtime.tensor(array)` is the numpy array itself;
TVM's runtime modules and packed functions are out of scope."""

import numpy as np

from ._scope import out_of_scope

__all__ = ["empty", "enabled", "tensor"]


def tensor(array, device=None):
    """`array` as a numpy array (what a tilelang kernel takes in place of a TVM tensor)."""
    if device is not None and getattr(device, "device_type", "cpu") != "cpu":
        out_of_scope("a TVM tensor on a GPU device", "pass a torch tensor on the GPU")
    return np.asarray(array)


def empty(shape, dtype="float32", device=None):
    """A numpy array of `shape` and `dtype` (not initialised)."""
    if device is not None and getattr(device, "device_type", "cpu") != "cpu":
        out_of_scope("a TVM tensor on a GPU device", "pass a torch tensor on the GPU")
    return np.empty(shape, dtype=dtype)


def enabled(target):
    """Whether this build can compile and run kernels for `target` (a target kind name)."""
    from tilelang.utils.target import available_targets

    kind = str(target).split()[0]
    kind = {"c": "cpu", "llvm": "cpu"}.get(kind, kind)
    return kind in available_targets()


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(name)
    out_of_scope(f"tvm.runtime.{name}", "call the JITKernel that tilelang.compile returns")
