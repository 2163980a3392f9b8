"""The names that the signatures of tilelang's public API use for its values.

The compiler core is a compiled extension (`tilelang._C`) without type stubs, so the
objects it makes (expressions, buffers, compiled kernels) are `Any` to a type checker;
these aliases say which of them a parameter takes or a function returns. They are
plain aliases: a type checker accepts any value for them, and nothing is checked at
run time beyond what each function checks itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

__all__ = [
    "BufferLike",
    "DTypeLike",
    "Expr",
    "ExprLike",
    "PassConfigs",
    "ShapeLike",
    "TargetLike",
]

#: An expression of the kernel IR (`tilelang._C.Expr`): a variable, a constant, an
#: arithmetic or intrinsic node, a buffer element load.
Expr = Any

#: What a T.* function accepts where it wants a value: an `Expr`, a Python `int`,
#: `float` or `bool`, a one-element buffer or a buffer element.
ExprLike = Any

#: A data type: a name ("float16", "int32", ...), a `T.dtype`, a Python type (`int`,
#: `float`, `bool`), a numpy or torch dtype.
DTypeLike = Any

#: A shape: a sequence of extents (each an `int` or an `Expr`), or one extent.
ShapeLike = Union[Sequence[ExprLike], ExprLike]

#: A target: "auto", "cpu", "cuda", "cuda -arch=sm_80", "metal", a Target object.
TargetLike = Any

#: Pass configurations: {PassConfigKey or its string name: value}.
PassConfigs = dict

#: A buffer argument: a `T.Tensor` parameter, a `T.alloc_*` buffer, a region of one
#: (`A[i * 32 : (i + 1) * 32, k]`, `T.region(...)`) or one of its elements.
BufferLike = Any
