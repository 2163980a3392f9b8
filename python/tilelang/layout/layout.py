"""`Layout(shape, forward_fn)`: a map from the logical index of a buffer to its physical
index. The forward function is evaluated once on index variables, so the layout holds
plain index expressions that any target can read; calling the layout evaluates the
function on concrete indices."""

from __future__ import annotations

import inspect
from typing import Any

from tilelang.language import builder_ctx
from tilelang.language.buffer import const_int, to_value
from tilelang.language.builder_ctx import frontend_error
from tilelang.language.dtypes import dtype as make_dtype
from tilelang.types import ExprLike, ShapeLike

_C = builder_ctx._C
_INDEX = make_dtype("int32")


def layout_shape(shape, what):
    dims = list(shape) if isinstance(shape, (list, tuple)) else [shape]
    dims = [to_value(d) for d in dims]
    if not dims:
        raise frontend_error(f"{what} needs a shape of at least one dimension, got {shape!r}")
    for d in dims:
        value = const_int(d)
        ok = value > 0 if value is not None else isinstance(d, _C.Expr)
        if not ok:
            raise frontend_error(
                f"{what} shape must hold positive integers (or symbolic sizes), got {shape!r}"
            )
    return tuple(const_int(d) if const_int(d) is not None else d for d in dims)


def check_arity(fn, count, what, expected="one per dimension"):
    """A clear error when `fn` cannot be called with `count` index arguments."""
    if not callable(fn):
        raise frontend_error(f"{what} must be a function of the indices, got {fn!r}")
    try:
        inspect.signature(fn).bind(*range(count))
    except TypeError:
        raise frontend_error(
            f"{what} must take {count} index argument(s) ({expected}); got a function with "
            f"signature {inspect.signature(fn)}"
        ) from None
    except ValueError:  # builtins without a signature: let the call decide
        pass


def as_index_list(result, what):
    """A forward function's result as a list of index values (ints or expressions)."""
    items = list(result) if isinstance(result, (list, tuple)) else [result]
    out = []
    for x in items:
        x = to_value(x)
        if isinstance(x, bool) or not isinstance(x, (int, _C.Expr)):
            raise frontend_error(
                f"{what} must return integer index expressions, got {type(x).__name__} {x!r}"
            )
        out.append(x)
    if not out:
        raise frontend_error(f"{what} returned no index")
    return out


def as_python_int(x):
    value = const_int(to_value(x))
    if value is None:
        raise frontend_error(f"expected a constant index, got {x!r}")
    return value


class Layout:
    """A logical-to-physical index map over a buffer of `shape`."""

    def __init__(self, shape: ShapeLike, forward_fn: Any) -> None:
        self.shape = layout_shape(shape, "T.Layout")
        check_arity(forward_fn, len(self.shape), "T.Layout forward_fn")
        self._forward_fn = forward_fn
        self.forward_vars = [_C.Var(f"i{k}", _INDEX) for k in range(len(self.shape))]
        self.forward_index = as_index_list(forward_fn(*self.forward_vars), "T.Layout forward_fn")

    def get_input_shape(self) -> Any:
        return list(self.shape)

    def get_forward_vars(self) -> Any:
        return list(self.forward_vars)

    def get_forward_index(self) -> Any:
        return list(self.forward_index)

    def map_forward_index(self, indices: ShapeLike) -> Any:
        """The physical index of the element at logical `indices` (ints give ints)."""
        indices = list(indices)
        if len(indices) != len(self.shape):
            raise frontend_error(
                f"layout over shape {self.shape} takes {len(self.shape)} indices, got {len(indices)}"
            )
        out = as_index_list(self._forward_fn(*indices), "layout forward function")
        if all(const_int(i) is not None for i in indices):
            return [as_python_int(x) for x in out]
        return out

    def __call__(self, *indices: ExprLike) -> Any:
        return self.map_forward_index(indices)

    def get_output_shape(self) -> Any:
        """The extent of each physical dimension (constant shapes only)."""
        highest: Any = None
        for point in _points(self.shape):
            phys = self.map_forward_index(point)
            highest = phys if highest is None else [max(a, b) for a, b in zip(highest, phys)]
        return [h + 1 for h in highest]

    def is_bijective(self) -> Any:
        """Whether distinct logical indices always map to distinct physical ones."""
        seen = set()
        for point in _points(self.shape):
            phys = tuple(self.map_forward_index(point))
            if phys in seen:
                return False
            seen.add(phys)
        return True

    def __repr__(self):
        index = ", ".join(str(x) for x in self.forward_index)
        return f"Layout(shape={list(self.shape)}, forward=[{index}])"


def _points(shape):
    dims = [const_int(d) for d in shape]
    if any(d is None for d in dims):
        raise frontend_error(f"this query needs a layout of constant shape, got {list(shape)}")
    total = 1
    for d in dims:
        total *= d
    for flat in range(total):
        point = []
        for d in reversed(dims):
            point.append(flat % d)
            flat //= d
        yield tuple(reversed(point))
