"""`tvm.ir`: the module container, ranges and structural comparison, on tilelang's IR.
Structural comparison compares the canonical printed form (the printer names every
variable by its declaration, so two kernels built alike print alike)."""

from tilelang import _C
from tilelang.language.prim_func import PrimFunc

from . import transform  # noqa: F401
from ._scope import out_of_scope, refused_name
from .transform import PassContext

__all__ = ["IRModule", "PassContext", "Range", "assert_structural_equal", "structural_equal"]


class IRModule:
    """A named set of T.prim_funcs: `IRModule({"main": f})`, `IRModule.from_expr(f)`,
    `mod["main"]`. TVM's passes over modules are out of scope; tilelang.compile and
    tilelang.lower accept a module of one function."""

    def __init__(self, functions=None, attrs=None):
        self.functions = {}
        self.attrs = dict(attrs or {})
        for name, func in (functions or {}).items():
            self[name] = func

    @staticmethod
    def from_expr(func):
        if not isinstance(func, PrimFunc):
            raise TypeError(f"IRModule.from_expr expects a T.prim_func, got {type(func).__name__}")
        return IRModule({"main": func})

    def __getitem__(self, name):
        key = getattr(name, "name_hint", name)
        if key not in self.functions:
            raise KeyError(f"IRModule has no function {key!r}; it has {sorted(self.functions)}")
        return self.functions[key]

    def __setitem__(self, name, func):
        if not isinstance(func, PrimFunc):
            raise TypeError(f"IRModule['{name}'] must be a T.prim_func, got {type(func).__name__}")
        self.functions[getattr(name, "name_hint", name)] = func

    def __contains__(self, name):
        return getattr(name, "name_hint", name) in self.functions

    def __iter__(self):
        return iter(self.functions.values())

    def __len__(self):
        return len(self.functions)

    def items(self):
        return self.functions.items()

    def get_global_vars(self):
        return [GlobalVar(name) for name in self.functions]

    def script(self):
        return "\n\n".join(f.script() for f in self.functions.values())

    def __str__(self):
        return self.script()

    def with_attr(self, key, value):
        return IRModule(self.functions, {**self.attrs, key: value})


class GlobalVar:
    """A function's name in an IRModule."""

    def __init__(self, name_hint):
        self.name_hint = name_hint

    def __repr__(self):
        return f"GlobalVar({self.name_hint!r})"


class Range:
    """`Range(begin, end)` / `Range.from_min_extent(min, extent)`."""

    def __init__(self, begin, end=None):
        if end is None:
            begin, end = 0, begin
        self.min = begin
        self.extent = end - begin

    @staticmethod
    def from_min_extent(min_value, extent):
        r = Range(0, 0)
        r.min, r.extent = min_value, extent
        return r

    def __repr__(self):
        return f"Range(min={self.min}, extent={self.extent})"


def _printed(node):
    if isinstance(node, (PrimFunc, IRModule)):
        return node.script()
    if isinstance(node, _C.Expr):
        return f"{node.dtype}:{node}"
    if isinstance(node, (list, tuple)):
        return "[" + ", ".join(_printed(n) for n in node) + "]"
    if isinstance(node, (int, float, bool, str)) or node is None:
        return repr(node)
    out_of_scope(
        f"structural comparison of {type(node).__name__}", "compare T.prim_funcs or expressions"
    )


def structural_equal(lhs, rhs, map_free_vars=False):
    """Whether `lhs` and `rhs` (T.prim_funcs, IRModules, expressions) print the same."""
    del map_free_vars
    return _printed(lhs) == _printed(rhs)


def assert_structural_equal(lhs, rhs, map_free_vars=False):
    """Raises ValueError showing both printed forms when they differ."""
    if not structural_equal(lhs, rhs, map_free_vars):
        raise ValueError(
            "structural_equal failed:\n--- lhs\n" + _printed(lhs) + "\n--- rhs\n" + _printed(rhs)
        )


def __getattr__(name):
    if name in ("Op", "make_node", "load_json", "save_json", "CallingConv", "PrimType"):
        return refused_name(f"tvm.ir.{name}", "write the kernel with tilelang.language")
    raise AttributeError(
        f"tvm.ir.{name} is not part of tilelang's TVM facade (tvm.ir offers {', '.join(__all__)})"
    )
