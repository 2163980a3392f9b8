"""JITKernel: a compiled kernel with TileLang's Python interface. A call is one C++
call (KernelCaller): argument reading and checking (dtype, rank, shape, strides,
device), the stream and the launch happen there; this module supplies the hooks it
calls back for what needs Python (outputs allocated in the inputs' framework,
numpy scalars, torch stream objects)."""

from __future__ import annotations

import functools
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from tilelang import _native
from tilelang.engine.callback import cuda_postproc_for
from tilelang.env import is_cache_enabled
from tilelang.language.dtypes import _ML_DTYPES_NAMES
from tilelang.language.dtypes import dtype as DType
from tilelang.language.prim_func import PrimFunc
from tilelang.transform import with_scoped_pass_configs
from tilelang.types import PassConfigs, TargetLike
from tilelang.utils.target import available_targets, determine_target

from .diagnostics import jit_phase

if TYPE_CHECKING:
    from tilelang.profiler import Profiler, TensorSupplyType

_C = _native.load()

# execution_backend names per target. Upstream TileLang's names that mean "a compiled
# host wrapper around the kernel" (tvm_ffi, cython, ctypes, nvrtc) all mean our C++
# runtime here; "auto" resolves to the first name of the target's list.
_TARGET_BACKENDS = {
    "cpu": ("native", "tvm_ffi", "cython", "ctypes", "dlpack"),
    "cuda": ("native", "tvm_ffi", "nvrtc", "cython", "ctypes", "dlpack"),
    "metal": ("torch",),
    # The emulator (TILELANG_EMULATE / "metal -emulate") runs the MSL on the CPU
    # through our runtime.
    "metal-emulated": ("native", "tvm_ffi", "cython", "ctypes"),
}
_BACKENDS = {name for names in _TARGET_BACKENDS.values() for name in names}


def resolve_backend(backend: str | None, target: str) -> str:
    """The execution backend recorded on the kernel: "auto" (or TILELANG_EXECUTION_BACKEND)
    becomes the target's default; an explicit name is checked against the target's list."""
    words = target.split()
    kind = words[0]
    valid = _TARGET_BACKENDS.get(kind, ())
    if kind == "metal" and "-emulate" in words:
        valid = _TARGET_BACKENDS["metal-emulated"]
    if backend in (None, "auto"):
        backend = os.environ.get("TILELANG_EXECUTION_BACKEND", "auto") or "auto"
    if backend == "auto":
        return valid[0]
    choices = ", ".join(repr(n) for n in ("auto", *valid))
    if backend not in _BACKENDS:
        raise ValueError(
            f"unknown execution_backend '{backend}'; for target '{kind}' use one of {choices}"
        )
    if backend not in valid:
        raise ValueError(
            f"execution_backend '{backend}' is not available for target '{kind}'; use one of "
            f"{choices}"
        )
    return backend


def native_compile(
    func: Any, target: str, pass_configs: PassConfigs, compile_flags: list[str]
) -> Any:
    """Calls the C++ compiler (a separate function so tests can stand in for it)."""
    kind = target.split()[0]
    if kind not in available_targets():
        raise _C.TileLangError(
            f"target '{target}' is not supported by this build yet; available: "
            f"{', '.join(sorted(available_targets()))} (pass target='cpu')"
        )
    if not hasattr(_C, "compile"):
        raise _C.TileLangError("this build of tilelang._C has no compile(); rebuild the extension")
    return _C.compile(
        func, target, pass_configs, compile_flags, *_cache_args(), cuda_postproc_for(target)
    )


def _cache_args() -> tuple[bool, str]:
    """(use the cache, its directory or "" for the default), as _C's compiles take them."""
    return is_cache_enabled(), os.environ.get("TILELANG_CACHE_DIR", "")


def prepare_host_compiler(
    target: TargetLike, compile_flags: str | list[str] | None = None
) -> float:
    """Builds the disk-cache entry that kernels for `target` with `compile_flags` are
    compiled against, if it is missing (the cpu target's precompiled header, the
    emulators' runtime; nothing for NVRTC or Metal, or with the cache off). Returns
    the seconds it took."""
    if isinstance(compile_flags, str):
        compile_flags = compile_flags.split()
    start = time.perf_counter()
    _C.prepare_host_compiler(determine_target(target), list(compile_flags or []), *_cache_args())
    return time.perf_counter() - start


def normalize_out_idx(out_idx: int | list[int] | None, num_params: int) -> list[int]:
    if out_idx is None:
        return []
    items = [out_idx] if isinstance(out_idx, int) else list(out_idx)
    out = []
    for i in items:
        if not isinstance(i, int) or not -num_params <= i < num_params:
            raise ValueError(f"out_idx entry {i!r} is out of range for {num_params} parameter(s)")
        out.append(i % num_params)
    if len(set(out)) != len(out):
        raise ValueError(f"out_idx {out_idx!r} names a parameter twice")
    return out


class KernelParam:
    """One kernel parameter as the runtime sees it."""

    __slots__ = ("dtype", "is_tensor", "name", "shape")

    def __init__(self, name: str, dtype: str, shape: list, is_tensor: bool) -> None:
        self.name, self.dtype, self.shape, self.is_tensor = name, dtype, shape, is_tensor

    def __repr__(self) -> str:
        if self.is_tensor:
            return f"KernelParam({self.name}: Tensor({self.shape}, {self.dtype}))"
        return f"KernelParam({self.name}: {self.dtype})"

    # TileLang's queries (tilelang.engine.param.KernelParam).
    def is_scalar(self) -> bool:
        return not self.is_tensor

    def is_float8(self) -> bool:
        return str(self.dtype).startswith("float8")

    def is_boolean(self) -> bool:
        return str(self.dtype) == "bool"

    def torch_dtype(self) -> Any:
        from tilelang.language.dtypes import dtype as DType

        return DType(self.dtype).as_torch()


def merge_func_attrs(
    prim_func: PrimFunc, out_idx: Any, pass_configs: PassConfigs | None, compile_flags: Any
) -> tuple[Any, PassConfigs | None, Any]:
    """tilelang.compile's settings merged with the function's own attributes: the
    outputs it returns (T.empty), its T.annotate_pass_configs (the call's values win)
    and its T.annotate_compile_flags (placed before the call's)."""
    attrs = prim_func.attrs
    func_out_idx = attrs.get("tilelang_out_idx")
    if func_out_idx is not None:
        if out_idx is not None:
            from tilelang.language.builder_ctx import TileLangError

            raise TileLangError(
                f"Out index conflict: tilelang.compile got out_idx={out_idx!r}, but T.prim_func "
                f"'{prim_func.name}' returns T.empty tensors, which are its outputs "
                f"(out_idx {list(func_out_idx)}); drop out_idx"
            )
        out_idx = list(func_out_idx)
    func_configs = attrs.get("tilelang_pass_configs")
    if func_configs is not None:
        pass_configs = {**func_configs, **(pass_configs or {})}
    func_flags = attrs.get("tilelang_compile_flags")
    if func_flags is not None:
        if isinstance(compile_flags, str):
            compile_flags = compile_flags.split()
        compile_flags = list(func_flags) + list(compile_flags or [])
    return out_idx, pass_configs, compile_flags


_METAL_KERNEL_HEAD = re.compile(r"\[\[kernel[^\]]*\]\]\s*void\s+\w+\s*\(")


def _metal_kernel_function(source: str) -> str:
    """The `[[kernel ...]]` function of a generated MSL source, from its header line to
    its closing brace, for display (the support functions, the argument struct and the emulation
    entry around it left out)."""
    m = _METAL_KERNEL_HEAD.search(source)
    if not m:
        return source
    start = source.rfind("\n", 0, m.start()) + 1
    end = source.find("\n}\n", m.end())
    return source[start : end + 3] if end >= 0 else source[start:]


def _to_native(arg: Any) -> Any:
    """What the C++ runtime accepts: DLPack objects, (bytes view, dtype) pairs, numbers."""
    if isinstance(arg, np.ndarray):
        name = arg.dtype.name
        if name in _ML_DTYPES_NAMES:
            view = arg.view(np.uint16 if arg.dtype.itemsize == 2 else np.uint8)
            return (view, name)
        return arg
    if isinstance(arg, np.generic):
        return arg.item()
    return arg


_is_torch_type: dict = {}  # type -> whether its instances are torch tensors


def _framework_of(args: Any) -> Any:
    """The first torch tensor among `args` (outputs are then allocated by torch)."""
    for a in args:
        t = type(a)
        is_torch = _is_torch_type.get(t)
        if is_torch is None:
            is_torch = _is_torch_type[t] = t.__module__.startswith("torch") and hasattr(t, "device")
        if is_torch:
            return a
    return None


_numpy_dtypes: dict = {}
_torch_dtypes: dict = {}  # dtype name -> the framework's dtype


def _allocate(shape: Any, dtype: str, like: Any) -> Any:
    if like is not None:
        import torch

        torch_dtype = _torch_dtypes.get(dtype)
        if torch_dtype is None:
            torch_dtype = _torch_dtypes[dtype] = DType(dtype).as_torch()
        return torch.empty(shape, dtype=torch_dtype, device=like.device)
    numpy_dtype = _numpy_dtypes.get(dtype)
    if numpy_dtype is None:
        d = DType(dtype)
        # Packed sub-byte elements (int4, float4_e2m1fn) live in bytes, two each; the
        # shape is the bytes' already (Kernel::output_shapes).
        packed = d.bits * d.lanes < 8 and d != "bool"
        numpy_dtype = _numpy_dtypes[dtype] = np.dtype(np.uint8) if packed else d.as_numpy()
    return np.empty(shape, dtype=numpy_dtype)


_torch: Any = None  # the torch module (False without torch), once a cuda kernel is called


def _torch_module() -> Any:
    global _torch
    if _torch is None:
        try:
            import torch

            _torch = torch
        except ImportError:
            _torch = False
    return _torch or None


def _explicit_stream(stream: Any, name: str) -> tuple[int, Any]:
    """(raw CUstream as an int, torch stream object or None) for a user's `stream=`."""
    if isinstance(stream, bool):
        raise TypeError(_stream_error(stream, name))
    if isinstance(stream, int):
        return stream, None
    raw = getattr(stream, "cuda_stream", None)  # torch.cuda.Stream / ExternalStream
    if isinstance(raw, int):
        return raw, stream
    raise TypeError(_stream_error(stream, name))


def _stream_error(stream: Any, name: str) -> str:
    return (
        f"stream= of kernel '{name}' must be a torch.cuda.Stream or a raw CUstream as an int, "
        f"got {type(stream).__name__} {stream!r}"
    )


def _default_stream(args: Any) -> int:
    """torch's current stream on the device of the first torch CUDA tensor, else 0 (the
    C++ caller asks torch itself, through its DLPack exchange API, when it can)."""
    torch = _torch_module()
    if torch is None:
        return 0
    for a in args:
        if isinstance(a, torch.Tensor) and a.is_cuda:
            return torch._C._cuda_getCurrentRawStream(a.get_device())
    return 0


def _allocate_outputs(
    full: list,
    missing: list[int],
    shapes: list,
    dtypes: list[str],
    raw: int | None,
    stream_obj: Any,
    stream: Any,
    on_gpu: bool = False,
) -> None:
    """Fills the `missing` slots of `full` with new tensors in the framework of the
    inputs (torch on their device, else numpy). A kernel without tensor inputs returns
    torch tensors where the program uses torch (as TileLang always does), on the GPU
    for a kernel that runs there; numpy ones otherwise."""
    like = _framework_of(full)
    if like is None and "torch" in sys.modules and not any(isinstance(a, np.ndarray) for a in full):
        like = _torch_device_tensor("cuda" if on_gpu else "cpu")
    for i, shape, dtype in zip(missing, shapes, dtypes):
        out = full[i] = _allocate(shape, dtype, like)
        if raw and stream is not None and like is not None and out.is_cuda:
            # The caching allocator must not hand the memory out again while the
            # kernel may still write it on a stream other than the current one.
            if stream_obj is None:
                stream_obj = _torch_module().cuda.ExternalStream(raw, device=out.device)
            out.record_stream(stream_obj)


_device_tensors: dict = {}  # device -> an empty torch tensor there (its .device for _allocate)


def _torch_device_tensor(device: str) -> Any:
    t = _device_tensors.get(device)
    if t is None:
        import torch

        t = _device_tensors[device] = torch.empty(0, device=device)
    return t


# What the C++ KernelCaller calls back into: conversion of objects it does not read
# itself, the stream of a `stream=` object, the current stream of non-torch CUDA
# tensors, and output allocation.
_CALLER_HOOKS = (_to_native, _explicit_stream, _default_stream, _allocate_outputs)


def _launches_on_gpu(target: str) -> bool:
    words = target.split()
    return words[0] == "cuda" and "-emulate" not in words


class JITKernel:
    """A compiled kernel: call it with inputs; outputs named by out_idx are returned."""

    def __init__(
        self,
        func: Any,
        out_idx: int | list[int] | None = None,
        target: TargetLike = "auto",
        execution_backend: str = "auto",
        pass_configs: PassConfigs | None = None,
        compile_flags: str | list[str] | None = None,
        verbose: bool = False,
        target_host: TargetLike | None = None,
    ) -> None:
        self.prim_func: PrimFunc | None = func if isinstance(func, PrimFunc) else PrimFunc(func)
        out_idx, pass_configs, compile_flags = merge_func_attrs(
            self.prim_func, out_idx, pass_configs, compile_flags
        )
        self.target = determine_target(target)
        self.execution_backend = resolve_backend(execution_backend, self.target)
        self.pass_configs = with_scoped_pass_configs(pass_configs)
        if isinstance(compile_flags, str):
            compile_flags = compile_flags.split()
        self.compile_flags = list(compile_flags or [])
        with jit_phase(
            "compile",
            verbose=verbose,
            kernel=self.prim_func.name,
            target=self.target,
            backend=self.execution_backend,
        ):
            self.kernel = native_compile(
                self.prim_func.core, self.target, self.pass_configs, self.compile_flags
            )
        self.params = self._read_params()
        self.out_idx = normalize_out_idx(out_idx, len(self.params))
        self._inputs = [i for i in range(len(self.params)) if i not in self.out_idx]
        self._on_gpu = _launches_on_gpu(self.target)
        self._make_caller()
        self.latency: float | None = None  # set by the autotuner
        self.config: dict[str, Any] | None = None
        if verbose:
            print(f"tilelang: compiled kernel '{self.name}' for {self.target}")

    @classmethod
    def from_library(cls, path: str | os.PathLike) -> JITKernel:
        """Loads a kernel written by export_library, without compiling it."""
        from .export import load_kernel

        return load_kernel(path)

    def _init_loaded(self, native_kernel: Any, manifest: dict[str, Any]) -> JITKernel:
        self.prim_func = None  # an exported kernel carries its binary and signature only
        self.target = manifest["target"]
        self.execution_backend = manifest["execution_backend"]
        self.pass_configs = dict(manifest.get("pass_configs") or {})
        self.compile_flags = list(manifest.get("compile_flags") or [])
        self.kernel = native_kernel
        self.params = self._read_params()
        self.out_idx = list(manifest["out_idx"])
        self._inputs = [i for i in range(len(self.params)) if i not in self.out_idx]
        self._on_gpu = _launches_on_gpu(self.target)
        self._make_caller()
        self.latency = None
        self.config = None
        return self

    def _make_caller(self) -> None:
        """The object a call goes through: the C++ KernelCaller, or for the "torch"
        backend of metal kernels the torch.mps launcher (metal_torch.py)."""
        self._torch: Any = None
        if self.execution_backend == "torch":
            from .metal_torch import MetalTorchLauncher

            self._torch = MetalTorchLauncher(self.kernel, self.out_idx)
            self._caller: Any = None
            return
        hooks = _CALLER_HOOKS
        if _launches_on_gpu(self.target):
            hooks = (*hooks[:3], functools.partial(_allocate_outputs, on_gpu=True))
        self._caller = _C.KernelCaller(self.kernel, self.target, self.out_idx, hooks)

    @property
    def cache_key(self) -> str:
        """SHA-256 of everything that determines the binary (the disk cache entry's name)."""
        return self.kernel.cache_key

    def export_library(self, path: str | os.PathLike) -> None:
        """Writes the compiled kernel to directory `path` that tilelang.jit.load_kernel(path)
        (or JITKernel.from_library, or the C++ tl::load_kernel) loads back without compiling:
        the binary, the generated source and export.txt (format version, target, machine,
        checksums, the signature)."""
        from .export import export_library

        export_library(self, path)

    def get_profiler(self, tensor_supply_type: TensorSupplyType | None = None) -> Profiler:
        """A Profiler that generates inputs (per `tensor_supply_type`, default Auto),
        checks results against a reference and times the kernel."""
        from tilelang.profiler import Profiler, TensorSupplyType

        return Profiler(self, tensor_supply_type or TensorSupplyType.Auto)

    def run_once(self, func: Callable[..., Any] | None = None) -> Any:
        """Runs the kernel once on generated inputs (the profiler's run_once)."""
        return self.get_profiler().run_once(func)

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def adapter(self) -> Any:
        """TileLang's execution-backend adapter (tvm_ffi, cython, nvrtc ...), which wraps a
        TVM runtime module: not here (the C++ runtime runs every kernel). A stand-in whose
        every use raises OutOfScopeError naming it; `get_kernel_source()`,
        `get_host_source()` and `export_library()` are the kernel's own."""
        from tilelang.tvm._scope import refused_name

        return refused_name(
            "tilelang.jit.JITKernel.adapter",
            "the C++ runtime runs every kernel; the kernel's source, host code and export are "
            "JITKernel.get_kernel_source(), get_host_source() and export_library()",
            kind="a TileLang internal",
        )

    def _read_params(self) -> list[KernelParam]:
        """The parameters the caller passes: T.alloc_global workspaces (the last ones)
        are allocated by each call and are left out."""
        k = self.kernel
        return [
            KernelParam(name, k.param_dtype(i), list(k.param_shape(i)), bool(k.param_is_tensor(i)))
            for i, name in enumerate(k.param_names)
            if not k.param_is_workspace(i)
        ]

    def run(self, args: Any, stream: Any = None) -> list:
        """Runs the kernel; returns the list of all arguments, outputs filled in.
        `args` are the inputs (outputs allocated) or all parameters. cuda kernels
        launch on `stream` (a torch.cuda.Stream or a raw CUstream int), by default on
        torch's current stream of the arguments' device, so that they order with
        torch's own work and CUDA-graph capture records them."""
        if self._torch is not None:
            return self._torch(list(args), return_all=True)
        return self._caller.run(args, stream)

    def __call__(self, *args: Any, stream: Any = None) -> Any:
        # One C++ call: reads and checks the arguments, allocates the outputs named
        # by out_idx, launches; returns None, the output, or a list of outputs.
        if self._torch is not None:
            if stream is not None:
                raise TypeError(
                    f"stream= was given to the metal kernel '{self.name}'; streams apply to cuda kernels only"
                )
            return self._torch(args)
        return self._caller(args, stream)

    def get_kernel_source(self, kernel_only: bool = True) -> str:
        """The generated device source. For metal, kernel_only=True gives the
        [[kernel]] function alone; False the whole source torch compiles (helpers, the
        argument struct, and the emulator's entry, which Metal never sees)."""
        source = self.kernel.source
        if self.target.split()[0] == "metal":
            return _metal_kernel_function(source) if kernel_only else source
        host = self.kernel.host_source
        if kernel_only or not host or host == source:
            return source
        return host + "\n" + source

    def get_host_source(self) -> str:
        return self.kernel.host_source

    def plot_layouts(
        self, directory: str | os.PathLike, formats: str | list[str] = "png"
    ) -> list[str]:
        """Draws the layout the lowering chose for each register fragment (thread and
        register of every element) and each swizzled shared gemm tile (place and bank)
        of this kernel, as `directory/<buffer>.<format>`; returns the paths. The cpu
        target lays nothing out: no files. Needs matplotlib (tilelang.tools.plot_layout)."""
        from tilelang.tools.plot_layout import plot_kernel_layouts

        return plot_kernel_layouts(self, directory, formats)

    def __repr__(self) -> str:
        return f"JITKernel({self.name}, target={self.target}, out_idx={self.out_idx})"
