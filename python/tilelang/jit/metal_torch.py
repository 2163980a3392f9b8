"""The "torch" execution backend of metal kernels: the generated MSL is compiled by
torch.mps.compile_shader and launched on torch MPS tensors. The core has no Metal
runtime; what a launch needs (parameters, symbolic dims, grid, threadgroup size) is
read from the kernel's signature text, the same record exported kernels carry.

Launch geometry: torch counts total threads per dimension, so `threads` is
grid * threadgroup size per dim and `group_size` the threadgroup size. Scalars and
dynamic dims travel in one small buffer laid out as the kernel's `<name>_args_t`
struct (docs/design/metal.md)."""

import math
import re
import struct

from tilelang.language.dtypes import dtype as DType

# Integer ops of the signature's expressions, by the core's BinaryOp names.
_OPS = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": lambda a, b: int(a / b) if b else None,
    "Mod": lambda a, b: a - int(a / b) * b if b else None,
    "FloorDiv": lambda a, b: a // b if b else None,
    "FloorMod": lambda a, b: a % b if b else None,
    "Min": min,
    "Max": max,
    "EQ": lambda a, b: int(a == b),
    "NE": lambda a, b: int(a != b),
    "LT": lambda a, b: int(a < b),
    "LE": lambda a, b: int(a <= b),
    "GT": lambda a, b: int(a > b),
    "GE": lambda a, b: int(a >= b),
    "And": lambda a, b: int(bool(a) and bool(b)),
    "Or": lambda a, b: int(bool(a) or bool(b)),
    "BitAnd": lambda a, b: a & b,
    "BitOr": lambda a, b: a | b,
    "BitXor": lambda a, b: a ^ b,
    "Shl": lambda a, b: a << b,
    "Shr": lambda a, b: a >> b,
}


class _Signature:
    """The core's signature text (src/runtime/signature.cpp) as Python data."""

    def __init__(self, text):
        self.vars = {}  # id -> (dtype, name)
        self.params = []  # ("tensor", name, dtype, shape exprs) or ("scalar", name, var id)
        self.num_workspaces = 0  # T.alloc_global workspaces: the last parameters
        self.unused = set()  # names of the tensors the kernel never accesses
        self.dynamic = []  # var ids
        self.grid, self.threads = [], []
        for line in text.splitlines()[1:]:
            words = line.split()
            if not words:
                continue
            kind, rest = words[0], words[1:]
            if kind == "var":
                self.vars[int(rest[0])] = (rest[1], rest[2])
            elif kind == "name":
                self.name = rest[0]
            elif kind == "tensor":
                pos = [3]
                shape = self._exprs(rest, pos)
                self.params.append(("tensor", rest[0], rest[2], shape))
            elif kind == "scalar":
                self.params.append(("scalar", rest[0], int(rest[1])))
            elif kind == "workspace":
                self.num_workspaces += 1
            elif kind == "unused":
                self.unused.add(rest[0])
            elif kind == "dynamic":
                self.dynamic.append(int(rest[0]))
            elif kind == "grid":
                self.grid = self._exprs(rest, [0])
            elif kind == "threads":
                self.threads = [int(t) for t in rest[1 : 1 + int(rest[0])]]

    @classmethod
    def _exprs(cls, words, pos):
        n = int(words[pos[0]])
        pos[0] += 1
        return [cls._expr(words, pos) for _ in range(n)]

    @classmethod
    def _expr(cls, words, pos):
        tag = words[pos[0]]
        if tag == "I":
            e = ("I", int(words[pos[0] + 2]))
            pos[0] += 3
        elif tag == "V":
            e = ("V", int(words[pos[0] + 1]))
            pos[0] += 2
        elif tag == "B":
            op = words[pos[0] + 1]
            pos[0] += 3
            e = ("B", op, cls._expr(words, pos), cls._expr(words, pos))
        elif tag == "C":
            pos[0] += 2
            e = cls._expr(words, pos)
        elif tag == "S":
            pos[0] += 2
            e = ("S", cls._expr(words, pos), cls._expr(words, pos), cls._expr(words, pos))
        else:
            raise ValueError(f"unknown expression tag {tag!r} in a kernel signature")
        return e


def _eval(e, env):
    """The value of a signature expression; None while a var is unbound."""
    tag = e[0]
    if tag == "I":
        return e[1]
    if tag == "V":
        return env.get(e[1])
    if tag == "S":
        c = _eval(e[1], env)
        return None if c is None else _eval(e[2] if c else e[3], env)
    a, b = _eval(e[2], env), _eval(e[3], env)
    return None if a is None or b is None else _OPS[e[1]](a, b)


def arg_field(dtype_name):
    """(struct format, MSL type) of a scalar argument field; mirrors the core's
    metal_arg_field_type (bool travels as int; float64 is refused)."""
    d = DType(dtype_name)
    name = str(d)
    if name == "bool":
        return "i", "int"
    if name == "float32":
        return "f", "float"
    if name == "float16":
        return "e", "half"
    if name == "bfloat16":
        return "H", "bfloat"  # rounded to nearest even once from the Python float
    if name.startswith("int"):
        return ("q", "long") if d.bits == 64 else ("i", "int")
    if name.startswith("uint"):
        return ("Q", "ulong") if d.bits == 64 else ("I", "uint")
    raise TypeError(f"a scalar of dtype {name} cannot be passed to a Metal kernel; use float32")


def _bfloat16_bits(value):
    """The bfloat16 nearest a Python float (ties to even), rounded once as the cpu and
    cuda targets round float64 scalars: the value narrows to float32 with round-to-odd
    (truncated, the last bit set when anything was cut off), then to bfloat16."""
    x = float(value)
    if math.isnan(x):
        return 0xFFC0 if math.copysign(1.0, x) < 0 else 0x7FC0
    try:
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:  # past float32's range: beyond bfloat16's too
        bits = 0xFF7FFFFF if x < 0 else 0x7F7FFFFF
    f = struct.unpack("<f", struct.pack("<I", bits))[0]
    if f != x and not math.isinf(x):
        if math.isinf(f) or abs(f) > abs(x):
            bits -= 1  # truncate: one float32 step toward zero
        bits |= 1
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def pack_args(fields):
    """The bytes of the args struct for [(dtype name, value)]: natural alignment, the
    size rounded up to the widest field (C's rules, which MSL follows)."""
    out = bytearray()
    widest = 1
    for dtype_name, value in fields:
        fmt, _ = arg_field(dtype_name)
        size = struct.calcsize(fmt)
        widest = max(widest, size)
        out += b"\0" * (-len(out) % size)
        if fmt == "H":
            value = _bfloat16_bits(value)
        elif fmt in "ef":
            value = float(value)
        else:
            value = int(value)
        out += struct.pack("<" + fmt, value)
    out += b"\0" * (-len(out) % widest)
    return bytes(out)


_KERNEL_NAME = re.compile(r"\[\[kernel[^\]]*\]\]\s*void\s+(\w+)\s*\(")


def kernel_function_name(source):
    m = _KERNEL_NAME.search(source)
    if not m:
        raise ValueError("the metal source has no [[kernel]] function")
    return m.group(1)


def kernel_only(source):
    """The `[[kernel ...]]` function of a generated MSL source, from its header line to
    its closing brace (the emulation entry after it is left out)."""
    m = _KERNEL_NAME.search(source)
    if not m:
        return source
    start = source.rfind("\n", 0, m.start()) + 1
    end = source.find("\n}\n", m.end())
    return source[start : end + 3] if end >= 0 else source[start:]


class MetalTorchLauncher:
    """Calls one generated metal kernel through torch.mps (compiled at the first call)."""

    def __init__(self, native_kernel, out_idx):
        self.source = native_kernel.source
        self.sig = _Signature(native_kernel.signature_text)
        self.function = kernel_function_name(self.source)
        self.out_idx = list(out_idx)
        self.num_visible = len(self.sig.params) - self.sig.num_workspaces
        self.inputs = [i for i in range(self.num_visible) if i not in self.out_idx]
        self._library = None

    def _torch(self):
        try:
            import torch
        except ImportError:
            torch = None
        if torch is None or not (hasattr(torch, "mps") and torch.backends.mps.is_available()):
            raise RuntimeError(
                f"metal kernel '{self.sig.name}' runs through torch.mps, which is not available "
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
        params = self.sig.params
        if len(args) == self.num_visible:
            full = list(args) + [None] * self.sig.num_workspaces
        elif len(args) == len(self.inputs):
            full = [None] * len(params)
            for i, a in zip(self.inputs, args):
                full[i] = a
        else:
            raise TypeError(
                f"kernel '{self.sig.name}' takes {len(self.inputs)} input(s) or all "
                f"{self.num_visible} parameters, got {len(args)}"
            )
        env, device = {}, None
        placeholders = set()  # None for a tensor the kernel never accesses
        for i, p in enumerate(params):
            value = full[i]
            if value is None and i < self.num_visible and i not in self.out_idx:
                if p[0] != "tensor" or p[1] not in self.sig.unused:
                    what = "a tensor of dtype " + p[2] if p[0] == "tensor" else "a scalar"
                    raise TypeError(
                        f"argument '{p[1]}' (parameter {i} of kernel '{self.sig.name}') is None; "
                        f"expected {what} (only the outputs named by out_idx may be None or left out)"
                    )
                placeholders.add(i)
                continue
            if value is None:
                continue
            if p[0] == "scalar":
                env[p[2]] = value
                continue
            self._check_tensor(p, value)
            device = device or value.device
            for dim, e in enumerate(p[3]):
                if e[0] == "V" and e[1] not in env:
                    env[e[1]] = int(value.shape[dim])
        for i in placeholders:
            # torch.mps binds a buffer to every tensor parameter: one element, never read.
            full[i] = torch.empty(1, dtype=DType(params[i][2]).as_torch(), device=device or "mps")
        for i, p in enumerate(params):
            if full[i] is not None or p[0] != "tensor":
                continue
            shape = [_eval(e, env) for e in p[3]]
            if any(s is None for s in shape):
                what = "workspace" if i >= self.num_visible else "output"
                raise ValueError(
                    f"cannot infer the shape of {what} '{p[1]}' of kernel '{self.sig.name}'"
                )
            full[i] = torch.empty(shape, dtype=DType(p[2]).as_torch(), device=device or "mps")
        for i, (p, value) in enumerate(zip(params, full)):
            if p[0] == "tensor" and i not in placeholders:
                for dim, e in enumerate(p[3]):
                    want = _eval(e, env)
                    if want is not None and want != value.shape[dim]:
                        raise ValueError(
                            f"argument '{p[1]}' of kernel '{self.sig.name}': dim {dim} must be "
                            f"{want}, got {value.shape[dim]}"
                        )
        grid = [_eval(e, env) for e in self.sig.grid]
        if any(g is None for g in grid):
            raise ValueError(
                f"cannot compute the grid of kernel '{self.sig.name}' from its arguments"
            )
        grid = (grid + [1, 1, 1])[:3]
        block = (self.sig.threads + [1, 1, 1])[:3]
        tensors = [v for p, v in zip(params, full) if p[0] == "tensor"]
        fields = [
            (self.sig.vars[p[2]][0], full[i]) for i, p in enumerate(params) if p[0] == "scalar"
        ]
        fields += [(self.sig.vars[v][0], env[v]) for v in self.sig.dynamic]
        if fields:
            packed = torch.frombuffer(bytearray(pack_args(fields)), dtype=torch.uint8)
            tensors.append(packed.to(device or "mps"))
        fn = getattr(self.library(), self.function)
        fn(*tensors, threads=[g * b for g, b in zip(grid, block)], group_size=block)
        for i in placeholders:
            full[i] = None
        if return_all:
            return full[: self.num_visible]
        if not self.out_idx:
            return None
        if len(self.out_idx) == 1:
            return full[self.out_idx[0]]
        return [full[i] for i in self.out_idx]

    def _check_tensor(self, p, value):
        torch = self._torch()
        name = self.sig.name
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"argument '{p[1]}' of metal kernel '{name}' must be a torch tensor on the mps "
                f"device, got {type(value).__name__}"
            )
        if value.device.type != "mps":
            raise ValueError(
                f"argument '{p[1]}' of metal kernel '{name}' must be on the mps device, got "
                f"{value.device}; move it with .to('mps')"
            )
        want = DType(p[2]).as_torch()
        if value.dtype != want:
            raise TypeError(
                f"argument '{p[1]}' of metal kernel '{name}' must be {want}, got {value.dtype}"
            )
        if value.dim() != len(p[3]):
            raise ValueError(
                f"argument '{p[1]}' of metal kernel '{name}' must have {len(p[3])} dims, got {value.dim()}"
            )
        if not value.is_contiguous():
            raise ValueError(
                f"argument '{p[1]}' of metal kernel '{name}' must be contiguous; call .contiguous()"
            )
