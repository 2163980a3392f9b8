"""The "torch" execution backend of metal kernels: the generated MSL is compiled by
torch.mps.compile_shader and launched on torch MPS tensors. The core has no Metal
runtime, but it computes what a launch takes (MetalKernel.plan_launch in the core,
src/runtime/metal/metal_kernel.h): from the arguments' shapes and scalar values it
checks and binds them as a call of any other kernel does, and gives the shapes of the
tensors to allocate, the grid, the threadgroup size and the bytes of the kernel's
`<name>_args_t` struct (the scalars, then the dynamic dims: docs/design/metal.md).
This module only checks what is torch's (tensor type, device, dtype, layout),
allocates, and launches.

Launch geometry: torch counts total threads per dimension, so `threads` is
grid * threadgroup size per dim and `group_size` the threadgroup size."""

from tilelang import _native
from tilelang.language.dtypes import dtype as DType

_C = _native.load()


def pack_args(fields):
    """The bytes of a metal kernel's args struct for [(dtype name, value)] in order
    (natural alignment, the size rounded up to the widest field; a float rounded once
    to its field's type), as the core lays it out."""
    return _C.pack_metal_args(list(fields))


class MetalTorchLauncher:
    """Calls one generated metal kernel through torch.mps (compiled at the first call)."""

    def __init__(self, native_kernel, out_idx):
        self.kernel = native_kernel
        self.source = native_kernel.source
        self.name = native_kernel.name
        self.function = native_kernel.kernel_name
        self.out_idx = list(out_idx)
        # The parameter table, read once (a launch only looks it up).
        self.names = list(native_kernel.param_names)
        n = len(self.names)
        self.is_tensor = [native_kernel.param_is_tensor(i) for i in range(n)]
        self.dtypes = [native_kernel.param_dtype(i) for i in range(n)]
        self.accessed = [native_kernel.param_is_accessed(i) for i in range(n)]
        self.num_visible = sum(1 for i in range(n) if not native_kernel.param_is_workspace(i))
        self.num_params = n
        self.inputs = [i for i in range(self.num_visible) if i not in self.out_idx]
        self._library = None

    def _torch(self):
        try:
            import torch
        except ImportError:
            torch = None
        if torch is None or not (hasattr(torch, "mps") and torch.backends.mps.is_available()):
            raise RuntimeError(
                f"metal kernel '{self.name}' runs through torch.mps, which is not available "
                "here (it needs macOS on Apple silicon and a torch build with MPS); use target "
                "'metal -emulate' (or tilelang.set_emulation()) to run it on the CPU"
            )
        return torch

    def library(self):
        if self._library is None:
            self._library = self._torch().mps.compile_shader(self.source)
        return self._library

    def __call__(self, args, return_all=False):
        torch = self._torch()
        k = self.kernel
        if len(args) == self.num_visible:
            full = list(args) + [None] * (self.num_params - self.num_visible)
        elif len(args) == len(self.inputs):
            full = [None] * self.num_params
            for i, a in zip(self.inputs, args):
                full[i] = a
        else:
            raise TypeError(
                f"kernel '{self.name}' takes {len(self.inputs)} input(s) or all "
                f"{self.num_visible} parameters, got {len(args)}"
            )
        described, device = [], None
        for i, value in enumerate(full):
            tensor = self.is_tensor[i]
            if value is None:
                if (
                    i < self.num_visible
                    and i not in self.out_idx
                    and not (tensor and not self.accessed[i])
                ):
                    what = "a tensor of dtype " + self.dtypes[i] if tensor else "a scalar"
                    raise TypeError(
                        f"argument '{self.names[i]}' (parameter {i} of kernel '{self.name}') "
                        f"is None; expected {what} (only the outputs named by out_idx may be None "
                        "or left out)"
                    )
                described.append(None)
            elif tensor:
                self._check_tensor(i, value)
                device = device or value.device
                described.append(tuple(int(s) for s in value.shape))
            else:
                described.append(value)
        plan = k.plan_launch(described)
        placeholders = []
        for i, shape in enumerate(plan["shapes"]):
            if full[i] is not None or not self.is_tensor[i]:
                continue
            dt = DType(self.dtypes[i]).as_torch()
            if shape is None:
                # torch.mps binds a buffer to every tensor parameter: one element, never read.
                placeholders.append(i)
                shape = [1]
            full[i] = torch.empty(shape, dtype=dt, device=device or "mps")
        tensors = [v for i, v in enumerate(full) if self.is_tensor[i]]
        if plan["args"]:
            packed = torch.frombuffer(bytearray(plan["args"]), dtype=torch.uint8)
            tensors.append(packed.to(device or "mps"))
        grid, block = plan["grid"], plan["threads"]
        fn = getattr(self.library(), self.function)
        fn(*tensors, threads=[g * b for g, b in zip(grid, block)], group_size=list(block))
        for i in placeholders:
            full[i] = None
        if return_all:
            return full[: self.num_visible]
        if not self.out_idx:
            return None
        if len(self.out_idx) == 1:
            return full[self.out_idx[0]]
        return [full[i] for i in self.out_idx]

    def _check_tensor(self, i, value):
        torch = self._torch()
        arg = f"argument '{self.names[i]}' of metal kernel '{self.name}'"
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"{arg} must be a torch tensor on the mps device, got {type(value).__name__}"
            )
        if value.device.type != "mps":
            raise ValueError(
                f"{arg} must be on the mps device, got {value.device}; move it with .to('mps')"
            )
        want = DType(self.dtypes[i]).as_torch()
        if value.dtype != want:
            raise TypeError(f"{arg} must be {want}, got {value.dtype}")
        if not value.is_contiguous():
            raise ValueError(f"{arg} must be contiguous; call .contiguous()")
