"""`tvm.runtime`: tensors for kernel arguments. tilelang kernels take numpy arrays and
torch tensors directly, so `tvm.runtime.tensor(array)` is the numpy array itself;
TVM's runtime modules and packed functions are out of scope."""

import numpy as np

from ._scope import facade_getattr, out_of_scope

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


# TVM's tvm.runtime beyond tensor / empty / enabled: its objects, modules, packed
# functions and devices.
_TVM_NAMES = {
    "DataType", "DataTypeCode", "Device", "Executable", "Function", "Module", "NDArray",
    "Object", "ObjectGeneric", "PackedFunc", "Scriptable", "ShapeTuple", "String", "Tensor",
    "const", "container", "convert", "cpu", "cuda", "device", "disco", "ext_dev",
    "get_global_func", "load_module", "load_param_dict", "load_static_library", "metal",
    "module", "ndarray", "opencl", "profiling", "register_func", "rocm", "save_param_dict",
    "system_lib", "vm", "vulkan",
}  # fmt: skip

__getattr__ = facade_getattr(
    "tvm.runtime",
    ", ".join(__all__),
    _TVM_NAMES,
    "call the JITKernel that tilelang.compile returns",
)
