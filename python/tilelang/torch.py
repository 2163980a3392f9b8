"""Compiled kernels as PyTorch operators (`tilelang.torch.op`): a `torch.library.custom_op`
whose schema, mutated arguments, outputs and fake (meta) implementation are read off the
kernel's signature, so that FakeTensor tracing, `torch.compile(fullgraph=True)`,
`torch.export` and autograd see the kernel as one operator. This module imports torch;
`import tilelang` does not import it (the package reaches it through a lazy attribute)."""

import inspect

import torch

from tilelang.jit.eager import EagerFunction, const_from_tensor
from tilelang.jit.kernel import JITKernel
from tilelang.language.dtypes import dtype as DType

__all__ = ["op"]


def op(kernel_or_name, name=None, *, backward=None, save=None, setup_context=None):
    """Registers a compiled kernel as the PyTorch operator `name` ("namespace::op") and
    returns it (also reachable as `torch.ops.namespace.op`).

    - `op(kernel, "mylib::add")` wraps a JITKernel (`tilelang.compile(...)`, static or
      `T.dynamic` shapes).
    - `@op("mylib::add")` over an eager `@tilelang.jit` function registers it; each call
      runs the specialization its tensors' shapes select (compiled once, as a direct
      call of the function does).

    The operator takes the kernel's inputs (its parameters but the out_idx / T.empty
    outputs) in order and returns its outputs: one tensor, a tuple of several, or None.
    Tensor inputs the kernel writes are declared mutated.

    Autograd: `backward(ctx, *grads)` returns one gradient per input (None where there is
    none). `save` names the inputs and outputs it needs (parameter names); they come
    back in that order as `ctx.saved_tensors`, and scalar inputs named there as
    attributes of ctx. `setup_context(ctx, inputs, output)`, when given, runs after
    that (torch.library.register_autograd's contract): for what `save` cannot say, such
    as `ctx.mark_non_differentiable(output[1])`."""
    if isinstance(kernel_or_name, str):
        if name is not None:
            raise TypeError(
                "tilelang.torch.op(name) is a decorator; to wrap a kernel call "
                "tilelang.torch.op(kernel, name)"
            )

        def decorate(func):
            return op(
                func, kernel_or_name, backward=backward, save=save, setup_context=setup_context
            )

        return decorate
    if not isinstance(name, str) or name.count("::") != 1:
        raise ValueError(
            f"tilelang.torch.op: the operator name must be 'namespace::name', got {name!r}"
        )
    if isinstance(kernel_or_name, JITKernel):
        schema = _KernelOp(kernel_or_name, name)
    elif isinstance(kernel_or_name, EagerFunction):
        schema = _EagerOp(kernel_or_name, name)
    else:
        raise TypeError(
            f"tilelang.torch.op wraps a compiled kernel (tilelang.compile(...)) or an eager "
            f"@tilelang.jit function, got {type(kernel_or_name).__name__}; for a @tilelang.jit "
            "factory, wrap the kernel it returns: tilelang.torch.op(factory(...), name)"
        )
    custom = torch.library.custom_op(
        name, schema.run, mutates_args=schema.mutated, schema=schema.schema()
    )
    custom.register_fake(schema.fake)
    if backward is not None:
        custom.register_autograd(backward, setup_context=_setup(schema.saver(save), setup_context))
    elif save is not None or setup_context is not None:
        raise TypeError(f"tilelang.torch.op '{name}': save= and setup_context= need backward=")
    return custom


def _setup(saver, setup_context):
    """save='s saving, then the caller's setup_context (which may mark outputs
    non-differentiable or keep scalars, but must not call save_for_backward again)."""
    if setup_context is None:
        return saver

    def both(ctx, inputs, output):
        saver(ctx, inputs, output)
        setup_context(ctx, inputs, output)

    return both


# ---- what the signature says


class _Param:
    """One parameter of the operator: a tensor (its dtype, shape expressions and whether
    the kernel writes it) or a scalar (its dtype and Var)."""

    __slots__ = (
        "config",
        "default",
        "dtype",
        "is_tensor",
        "name",
        "shape",
        "strided",
        "var",
        "written",
    )

    def __init__(
        self, name, dtype, is_tensor, shape=(), var=None, written=False, config=False, strided=False
    ):
        self.name, self.dtype, self.is_tensor = name, str(dtype), is_tensor
        self.strided = strided  # declares its strides (T.StridedTensor)
        self.shape, self.var, self.written = list(shape), var, written
        # A config value of an eager function selects a specialization: torch.compile
        # must see it as a constant ("int"), not as a size it may make symbolic. Its
        # Python default becomes the schema's.
        self.config, self.default = config, inspect.Parameter.empty

    @property
    def torch_dtype(self):
        return DType(self.dtype).as_torch()

    @property
    def per_byte(self):
        """Elements a byte holds of a packed sub-byte tensor (int4, float4_e2m1fn): 2;
        else 0."""
        return _per_byte(self.dtype)

    def schema_type(self):
        if self.is_tensor:
            return "Tensor"
        d = DType(self.dtype)
        if d == "bool":
            return "bool"
        if d.is_float():
            return "float"
        return "int" if self.config else "SymInt"


def _per_byte(dtype):
    d = DType(str(dtype))
    bits = d.bits * d.lanes
    return 8 // bits if bits < 8 and d != "bool" else 0


def _accepts(dtype, torch_dtype):
    """Whether a tensor of `torch_dtype` is what the kernel call takes for a parameter of
    `dtype`: the dtype itself, or for a packed sub-byte one its bytes (int8, uint8, and
    torch.float4_e2m1fn_x2 for float4_e2m1fn), as the runtime reads them."""
    expected = DType(str(dtype)).as_torch()
    if torch_dtype == expected:
        return True
    return bool(_per_byte(dtype)) and torch_dtype in (torch.int8, torch.uint8)


def _expected_dtype(dtype):
    expected = DType(str(dtype)).as_torch()
    if not _per_byte(dtype):
        return str(expected)
    names = dict.fromkeys([str(expected), "torch.int8", "torch.uint8"])
    return (
        f"{dtype}: a tensor of bytes holding two elements each along its last dimension "
        f"({' or '.join(names)})"
    )


def _logical_sizes(p, sizes):
    """The element sizes of a tensor argument of `p`: a packed sub-byte tensor's last
    dimension holds `per_byte` elements a byte, a constant odd size rounding up to
    whole bytes (as the runtime reads it)."""
    sizes = list(sizes)
    per_byte = p.per_byte
    if not per_byte or not sizes:
        return sizes
    declared = p.shape[-1] if p.shape else None
    last = sizes[-1]
    if declared is not None and declared.kind == "IntImm":
        c = declared.const_value()
        if c > 0 and isinstance(last, int) and (c + per_byte - 1) // per_byte == last:
            sizes[-1] = c
            return sizes
    sizes[-1] = last * per_byte
    return sizes


def _check_packed_rows(p, sizes, what, verb):
    """A packed sub-byte tensor of more than one row of an odd number of elements is
    refused, as the kernel call refuses it: its bytes pack each row to whole bytes, but
    the kernel reads its rows back to back. Checked where the sizes are known (not on
    symbolic ones, which the kernel call checks)."""
    per_byte = p.per_byte
    if not per_byte or p.strided or len(sizes) < 2:
        return
    if not all(isinstance(s, int) for s in sizes):
        return
    last, rows = sizes[-1], 1
    for s in sizes[:-1]:
        rows *= s
    if last % per_byte == 0 or rows <= 1:
        return
    nbytes = (last + per_byte - 1) // per_byte
    raise ValueError(
        f"{what} {verb} {p.dtype} rows of {last} elements, shape {tuple(sizes)}: a tensor of "
        f"bytes packs each row to whole bytes ({nbytes} bytes, room for {nbytes * per_byte} "
        f"elements), but the kernel reads its rows {last} elements apart; a packed {p.dtype} "
        f"tensor of more than one row needs a last dimension that is a multiple of {per_byte}"
    )


def _storage_shape(dtype, shape):
    """The shape of the bytes a packed sub-byte output is allocated as (the runtime's)."""
    per_byte = _per_byte(dtype)
    if not per_byte or not shape:
        return shape
    return [*shape[:-1], (shape[-1] + per_byte - 1) // per_byte]


def default_device():
    """The torch device type kernels compiled for the default target (`target="auto"`)
    take their tensors on: "cuda" on a CUDA GPU, "cpu" on the cpu target and the
    emulators, "mps" for Metal."""
    from tilelang.utils.target import determine_target

    return _target_device(determine_target("auto"))


def _target_device(target):
    """The torch device type a kernel compiled for `target` takes its tensors on: the
    GPU's for cuda and metal, the CPU's for cpu and the emulators."""
    words = target.split()
    if "-emulate" in words or words[0] == "cpu":
        return "cpu"
    return {"cuda": "cuda", "metal": "mps"}.get(words[0], "cpu")


class _OpSchema:
    """The schema string, mutated arguments, device checks and fake implementation
    shared by the two kinds of operator; subclasses supply run()."""

    def __init__(self, name, kernel_name, target, inputs, outputs):
        self.name, self.kernel_name, self.target = name, kernel_name, target
        self.inputs, self.outputs = inputs, outputs
        self.device_type = _target_device(target)
        self.mutated = [p.name for p in inputs if p.is_tensor and p.written]
        self._tensor_positions = [i for i, p in enumerate(inputs) if p.is_tensor]

    def schema(self):
        args, alias = [], 0
        for p in self.inputs:
            t = p.schema_type()
            if p.is_tensor and p.written:
                t = f"Tensor({_alias_name(alias)}!)"
                alias += 1
            default = "" if p.default is inspect.Parameter.empty else f"={p.default!r}"
            args.append(f"{t} {p.name}{default}")
        returns = ", ".join("Tensor" for _ in self.outputs)
        if len(self.outputs) != 1:
            returns = f"({returns})"
        return f"({', '.join(args)}) -> {returns}"

    def check_devices(self, args, fake=False):
        # On every call: the tensor positions are listed once (_tensor_positions).
        expected = self.device_type
        for i in self._tensor_positions:
            value = args[i]
            if not isinstance(value, torch.Tensor):
                continue
            device = value.device.type
            if device == expected or (fake and device == "meta"):
                continue
            p = self.inputs[i]
            raise ValueError(
                f"argument '{p.name}' of operator {self.name} is a {device} tensor "
                f"({value.device}), but kernel '{self.kernel_name}' was compiled for target "
                f"'{self.target}', which takes {self.device_type} tensors; move it with "
                f".to('{self.device_type}') or compile the kernel for a target that runs there"
            )

    def output_device(self, args):
        for p, value in zip(self.inputs, args):
            if p.is_tensor and isinstance(value, torch.Tensor):
                return value.device
        return torch.device(self.device_type)

    def fake(self, *args):
        """Empty outputs of the shapes, dtypes and device a call with `args` (fake or
        meta tensors, possibly of symbolic sizes) would return."""
        self.check_devices(args, fake=True)
        shapes, dtypes = self.fake_outputs(args)
        device = self.output_device(args)
        made = [torch.empty(s, dtype=d, device=device) for s, d in zip(shapes, dtypes)]
        return _pack(made)

    def saver(self, save):
        """setup_context saving the inputs and outputs named by `save`."""
        names = [save] if isinstance(save, str) else list(save or ())
        positions = {p.name: ("in", i) for i, p in enumerate(self.inputs)}
        positions.update({p.name: ("out", i) for i, p in enumerate(self.outputs)})
        unknown = [n for n in names if n not in positions]
        if unknown:
            raise ValueError(
                f"tilelang.torch.op '{self.name}': save= names {unknown}, which are not "
                f"parameters of kernel '{self.kernel_name}' (inputs "
                f"{[p.name for p in self.inputs]}, outputs {[p.name for p in self.outputs]})"
            )

        def setup_context(ctx, inputs, output):
            outs = output if isinstance(output, tuple) else (output,)
            tensors = []
            for n in names:
                where, i = positions[n]
                value = inputs[i] if where == "in" else outs[i]
                if isinstance(value, torch.Tensor):
                    tensors.append(value)
                else:
                    setattr(ctx, n, value)
            ctx.save_for_backward(*tensors)

        return setup_context


def _alias_name(i):
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26]


def _pack(outputs):
    if not outputs:
        return None
    if len(outputs) == 1:
        return outputs[0]
    return tuple(outputs)


# ---- shapes evaluated on torch sizes

_BINARY = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    # Sizes are non-negative, where truncating and flooring division agree.
    "Div": lambda a, b: a // b,
    "Mod": lambda a, b: a % b,
    "FloorDiv": lambda a, b: a // b,
    "FloorMod": lambda a, b: a % b,
    "Min": lambda a, b: torch.sym_min(a, b),
    "Max": lambda a, b: torch.sym_max(a, b),
    "EQ": lambda a, b: a == b,
    "NE": lambda a, b: a != b,
    "LT": lambda a, b: a < b,
    "LE": lambda a, b: a <= b,
    "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b,
}


def _evaluate(expr, bound):
    """The integer (or torch SymInt) value of a shape expression, its Vars read from
    `bound` ({hash of the Var: value})."""
    kind = expr.kind
    if kind == "IntImm":
        return expr.const_value()
    if kind == "Var":
        key = hash(expr)
        if key not in bound:
            raise ValueError(f"the size {expr} is no dimension of an input and no scalar")
        return bound[key]
    if kind == "Cast":
        return _evaluate(expr.operands[0], bound)
    if kind == "Select":
        cond, yes, no = (_evaluate(e, bound) for e in expr.operands)
        return (
            torch.sym_ite(cond, yes, no)
            if isinstance(cond, torch.SymBool)
            else (yes if cond else no)
        )
    op = expr.binary_op
    if op in _BINARY:
        a, b = (_evaluate(e, bound) for e in expr.operands)
        return _BINARY[op](a, b)
    raise TypeError(f"the size `{expr}` is not an integer expression a shape can be computed from")


def _free_vars(expr, out):
    if expr.kind == "Var":
        out[hash(expr)] = expr
    for e in expr.operands:
        _free_vars(e, out)
    return out


def _bind_dim(expr, size, bound, where):
    """Binds the Var of a dimension to the input's size (a second dimension of the same
    Var must agree) and checks a constant one; `where` names the dimension. Other
    dimensions (`n * 4`) bind no output size, as in the runtime, which checks them."""
    kind = expr.kind
    if kind == "IntImm":
        expected = expr.const_value()
        torch._check(size == expected, lambda: f"{where} is {size}, expected {expected}")
    elif kind == "Var":
        key = hash(expr)
        if key in bound:
            first = bound[key]
            torch._check(
                first == size, lambda: f"{where} is {size}, but {expr} is {first} elsewhere"
            )
        else:
            bound[key] = size


_LINEAR = {"Add", "Sub"}


def _affine_in(expr, key):
    """Whether `expr` is affine in the Var of hash `key` (a * v + c, the other Vars in a
    and c), as the runtime solves a size that only such a dimension gives."""
    if key not in _free_vars(expr, {}):
        return True
    if expr.kind == "Var":
        return True
    if expr.kind == "Cast":
        return _affine_in(expr.operands[0], key)
    op = expr.binary_op
    a, b = expr.operands
    if op in _LINEAR:
        return _affine_in(a, key) and _affine_in(b, key)
    if op == "Mul":
        return (key not in _free_vars(a, {}) and _affine_in(b, key)) or (
            key not in _free_vars(b, {}) and _affine_in(a, key)
        )
    return False


def _solvable(expr, bound):
    """The one unbound integer Var of a dimension affine in it, or None."""
    free = [v for k, v in _free_vars(expr, {}).items() if k not in bound]
    if len(free) != 1 or not DType(str(free[0].dtype)).is_int():
        return None
    return free[0] if _affine_in(expr, hash(free[0])) else None


def _solve_dim(expr, var, size, bound, where):
    """Binds `var` from a dimension `expr` = a * var + c of the input's `size`, as the
    runtime does: var = (size - c) / a, which a must divide."""
    key = hash(var)
    c = _evaluate(expr, {**bound, key: 0})
    a = _evaluate(expr, {**bound, key: 1}) - c
    if isinstance(a, int) and a == 0:
        return False
    torch._check(
        (size - c) % a == 0,
        lambda: f"{where} is {size}, which is {expr} for no integer {var}",
    )
    bound[key] = (size - c) // a
    return True


class _KernelOp(_OpSchema):
    """The operator of one compiled kernel."""

    def __init__(self, kernel, name):
        native = kernel.kernel
        params = []
        for i, pname in enumerate(native.param_names):
            if native.param_is_workspace(i):
                continue
            is_tensor = bool(native.param_is_tensor(i))
            params.append(
                _Param(
                    pname,
                    native.param_dtype(i),
                    is_tensor,
                    shape=native.param_shape_exprs(i) if is_tensor else (),
                    var=None if is_tensor else native.param_var(i),
                    written=bool(native.param_is_written(i)),
                    strided=bool(native.param_declares_strides(i)),
                )
            )
        if kernel.execution_backend == "torch":
            raise TypeError(
                f"tilelang.torch.op '{name}': kernel '{kernel.name}' runs through torch.mps "
                "(execution_backend='torch'); operators of Metal kernels are not supported yet"
            )
        inputs = [params[i] for i in range(len(params)) if i not in kernel.out_idx]
        outputs = [params[i] for i in kernel.out_idx]
        super().__init__(name, kernel.name, kernel.target, inputs, outputs)
        self.kernel = kernel
        self._check_outputs_computable()

    def _bindings(self, args):
        bound, deferred = {}, []
        for p, value in zip(self.inputs, args):
            if not p.is_tensor:
                bound[hash(p.var)] = value
                continue
            if not isinstance(value, torch.Tensor):
                raise TypeError(
                    f"argument '{p.name}' of operator {self.name} is {type(value).__name__}, "
                    f"expected a tensor of dtype {p.dtype}"
                )
            if not _accepts(p.dtype, value.dtype):
                raise TypeError(
                    f"argument '{p.name}' of operator {self.name} (kernel '{self.kernel_name}') "
                    f"has dtype {value.dtype}, expected {_expected_dtype(p.dtype)}"
                )
            if value.dim() != len(p.shape):
                raise ValueError(
                    f"argument '{p.name}' of operator {self.name} (kernel '{self.kernel_name}') "
                    f"has {value.dim()} dimensions, expected {len(p.shape)}"
                )
            sizes = _logical_sizes(p, value.shape)
            _check_packed_rows(p, sizes, f"argument '{p.name}' of operator {self.name}", "holds")
            for d, (expr, size) in enumerate(zip(p.shape, sizes)):
                if p.per_byte and d == len(sizes) - 1 and expr.kind == "Var":
                    deferred.append((p, d, expr, value.shape[d]))
                else:
                    _bind_dim(expr, size, bound, self._where(p, d))
        # A packed last dimension of a T.dynamic size another argument gives holds it in
        # whole bytes (an odd n in (n + 1) // 2, as outputs are allocated), as the
        # runtime reads it; otherwise it binds the size to all the elements its bytes hold.
        for p, d, expr, nbytes in deferred:
            per_byte, key = p.per_byte, hash(expr)
            if key not in bound:
                bound[key] = nbytes * per_byte
                continue
            given, where = bound[key], self._where(p, d)
            torch._check(
                (given + per_byte - 1) // per_byte == nbytes,
                lambda w=where, b=nbytes, e=expr, g=given, t=p.dtype, k=per_byte: (
                    f"{w} holds {b} bytes, but {e} is {g} elsewhere, which {t} packs in "
                    f"{(g + k - 1) // k} bytes"
                ),
            )
        # A size that appears only inside dimensions (`X: (m * 2,)`) is solved from one
        # affine in it; then every such dimension is checked, as the runtime does.
        pending = [
            (p, d, expr, size)
            for p, value in zip(self.inputs, args)
            if p.is_tensor
            for d, (expr, size) in enumerate(zip(p.shape, _logical_sizes(p, value.shape)))
            if expr.kind not in ("IntImm", "Var")
        ]
        progress = True
        while progress:
            progress = False
            for p, d, expr, size in pending:
                var = _solvable(expr, bound)
                if var is not None and _solve_dim(expr, var, size, bound, self._where(p, d)):
                    progress = True
        for p, d, expr, size in pending:
            if all(k in bound for k in _free_vars(expr, {})):
                expected = _evaluate(expr, bound)
                where = self._where(p, d)
                torch._check(
                    size == expected,
                    lambda w=where, s=size, e=expr, x=expected: f"{w} is {s}, expected {e} = {x}",
                )
        return bound

    def _where(self, p, d):
        return (
            f"dimension {d} of argument '{p.name}' of operator {self.name} (kernel "
            f"'{self.kernel_name}')"
        )

    def fake_outputs(self, args):
        bound = self._bindings(args)
        shapes = []
        for p in self.outputs:
            sizes = [_evaluate(e, bound) for e in p.shape]
            what = f"output '{p.name}' of operator {self.name}"
            _check_packed_rows(p, sizes, what, "would hold")
            shapes.append(_storage_shape(p.dtype, sizes))
        return shapes, [p.torch_dtype for p in self.outputs]

    def _check_outputs_computable(self):
        """Every output size must follow from a dimension of an input that is the size
        itself, or a scalar, as the runtime allocates outputs: refuse the kernel at
        registration, naming the size, otherwise."""
        known = set()
        for p in self.inputs:
            if not p.is_tensor:
                known.add(hash(p.var))
                continue
            known.update(hash(e) for e in p.shape if e.kind == "Var")
        # Sizes solved from a dimension affine in them (`X: (m * 2,)`), as the runtime
        # and _bindings do.
        dims = [e for p in self.inputs if p.is_tensor for e in p.shape]
        progress = True
        while progress:
            progress = False
            for e in dims:
                var = _solvable(e, known)
                if var is not None:
                    known.add(hash(var))
                    progress = True
        for p in self.outputs:
            for d, e in enumerate(p.shape):
                missing = [v for k, v in _free_vars(e, {}).items() if k not in known]
                if missing:
                    raise ValueError(
                        f"tilelang.torch.op '{self.name}': dimension {d} of output '{p.name}' "
                        f"of kernel '{self.kernel_name}' is `{e}`, and no input has "
                        f"{missing[0]} as a dimension or scalar; the kernel cannot allocate "
                        "it (give the output as an input the kernel writes)"
                    )

    def run(self, *args):
        self.check_devices(args)
        out = self.kernel(*args)
        if isinstance(out, list):
            return tuple(out)
        return out


# ---- eager @tilelang.jit functions


class _EagerOp(_OpSchema):
    """The operator of an eager `@tilelang.jit` function: its Python parameters are the
    inputs (tensors and scalars the body declares, config values typed by their
    annotation or default), the T.empty tensors it returns the outputs."""

    def __init__(self, func, name):
        self.func = func
        bound = func._bind((), {}, partial=True)
        discovered = func._discover_trace(bound)
        declared = dict(discovered.params)
        prim_func, trace = _trace_placeholder(func, bound, discovered, name)
        traced = [n for n, _ in trace.params]
        written = {n for n, w in zip(traced, prim_func.core.written_params()) if w}
        inputs = []
        for pname, param in func.signature.parameters.items():
            if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                raise TypeError(
                    f"tilelang.torch.op '{name}': parameter '{pname}' of "
                    f"'{func.__name__}' is *args, **kwargs or keyword-only; an operator takes "
                    "positional parameters"
                )
            value = declared.get(pname)
            if value is None:
                dtype = _config_dtype(func, pname, param, name)
                inputs.append(_Param(pname, dtype, False, config=True))
                inputs[-1].default = param.default
            elif hasattr(value, "handle"):  # a Buffer
                inputs.append(_Param(pname, value.dtype, True, written=pname in written))
            else:
                inputs.append(_Param(pname, value.dtype, False))
        returned = trace.returned
        returned = list(returned) if isinstance(returned, (tuple, list)) else [returned]
        buffers = dict(trace.params)
        order = []
        for value in returned if trace.returned is not None else []:
            out = next((n for n, b in trace.params if b is value), None)
            if out not in trace.outputs:
                what = f"its parameter '{out}'" if out else repr(value)
                raise TypeError(
                    f"tilelang.torch.op '{name}': '{func.__name__}' returns {what}, not a "
                    "T.empty output; an operator's outputs are new tensors (write an input "
                    "in place and return nothing, or return a T.empty tensor)"
                )
            if out not in declared:
                raise TypeError(
                    f"tilelang.torch.op '{name}': '{func.__name__}' declares its output "
                    f"'{out}' inside a T.Kernel; declare T.empty outputs before the first "
                    "T.Kernel, so that their shapes are known without compiling"
                )
            order.append(out)
        outputs = [_Param(n, buffers[n].dtype, True) for n in order]
        super().__init__(name, func.__name__, _eager_target(func), inputs, outputs)

    def fake_outputs(self, args):
        bound = self.func._bind(args, {})
        ctx = self.func._discover_trace(bound)
        declared = dict(ctx.params)
        values = {}
        for const, place in ctx.where.items():
            if place is None:
                continue
            # Symbolic: the output shapes are arithmetic on the sizes, so torch.compile
            # and torch.export keep them symbolic (int() would specialize each size; the
            # real call selects the kernel's specialization from real sizes).
            values[hash(ctx.const_vars[const])] = const_from_tensor(
                bound.arguments[place[0]], place, symbolic=True
            )
        for p in self.inputs:
            if p.is_tensor:
                tensor = bound.arguments[p.name]
                buf = declared[p.name]
                if not _accepts(buf.dtype, tensor.dtype):
                    raise TypeError(
                        f"argument '{p.name}' of operator {self.name} (function "
                        f"'{self.kernel_name}') has dtype {tensor.dtype}, expected "
                        f"{_expected_dtype(buf.dtype)}"
                    )
        shapes, dtypes = [], []
        for p in self.outputs:
            buf = declared[p.name]
            sizes = [_evaluate(e, values) for e in buf.handle.shape]
            _check_packed_rows(p, sizes, f"output '{p.name}' of operator {self.name}", "would hold")
            shapes.append(_storage_shape(buf.dtype, sizes))
            dtypes.append(DType(buf.dtype).as_torch())
        return shapes, dtypes

    def run(self, *args):
        self.check_devices(args)
        bound, spec = self.func._spec_for_call(args, {})
        full = spec.kernel.run([bound.arguments.get(n) for n in spec.input_names])
        names = [p.name for p in spec.kernel.params]
        return _pack([full[names.index(p.name)] for p in self.outputs])


# T.const values tried, in turn, for the one trace an eager operator's registration
# makes: sizes that tile sizes usually divide.
_PLACEHOLDER_SIZES = (128, 256, 64, 32, 16)


def _trace_placeholder(func, bound, discovered, name):
    """The function traced (not compiled) with placeholder T.const sizes and its config
    parameters' defaults: which tensors it writes and the order it returns its outputs
    in, which do not depend on the sizes."""
    error = None
    for size in _PLACEHOLDER_SIZES:
        try:
            return func._trace_prim_func(bound, dict.fromkeys(discovered.where, size))
        except Exception as err:  # noqa: BLE001  (the next size may trace)
            error = err
    raise TypeError(
        f"tilelang.torch.op '{name}': '{func.__name__}' did not trace with its config "
        f"parameters' defaults and T.const sizes {list(_PLACEHOLDER_SIZES)} (to find the "
        f"tensors it writes and the outputs it returns): {error}; register a compiled "
        f"kernel instead: tilelang.torch.op({func.__name__}.compile(...), '{name}')"
    ) from error


def _eager_target(func):
    from tilelang.utils.target import determine_target

    return determine_target(func.options.get("target", "auto"))


def _config_dtype(func, pname, param, op_name):
    """The schema type of a parameter the function does not declare (a config value):
    its annotation, else its default's type."""
    hint = param.annotation
    if hint is inspect.Parameter.empty and param.default is not inspect.Parameter.empty:
        hint = type(param.default)
    kinds = {bool: "bool", int: "int64", float: "float64"}
    if hint in kinds:
        return kinds[hint]
    raise TypeError(
        f"tilelang.torch.op '{op_name}': parameter '{pname}' of '{func.__name__}' is neither a "
        "tensor nor a scalar the body declares; annotate it (int, float or bool) or give it a "
        "default, so that the operator's schema has its type"
    )
