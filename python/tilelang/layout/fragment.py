"""`Fragment(shape, forward_fn=None, forward_thread_fn=None, replicate=1,
forward_index_fn=None)`: a layout of a `local.fragment` buffer that also says which thread
of the block holds each element (and where in that thread's registers). With
`replicate > 1` every element is held by that many threads; the functions then take the
replica index as an extra last argument."""

from __future__ import annotations

from typing import Any

from tilelang.language.buffer import const_int, to_value
from tilelang.language.builder_ctx import frontend_error
from tilelang.types import ExprLike, ShapeLike

from .layout import (
    _C,
    _INDEX,
    Layout,
    _points,
    as_index_list,
    as_python_int,
    check_arity,
    layout_shape,
)


class Fragment(Layout):
    """Thread and register index of each element of a fragment buffer."""

    def __init__(
        self,
        shape: ShapeLike,
        forward_fn: Any = None,
        forward_thread_fn: Any = None,
        replicate: Any = 1,
        forward_index_fn: Any = None,
    ) -> None:
        self.shape = layout_shape(shape, "T.Fragment")
        rep = const_int(to_value(replicate))
        if rep is None or rep < 1:
            raise frontend_error(
                f"T.Fragment replicate must be a positive integer, got {replicate!r}"
            )
        self.replicate_count = rep
        n = len(self.shape)
        self.forward_vars = [_C.Var(f"i{k}", _INDEX) for k in range(n)]
        self.replicate_var = _C.Var("rep", _INDEX) if rep > 1 else None
        extra = [self.replicate_var] if rep > 1 else []
        args_doc = "one per dimension" + (", then the replica index" if rep > 1 else "")
        if forward_fn is not None:
            if forward_thread_fn is not None or forward_index_fn is not None:
                raise frontend_error(
                    "T.Fragment takes either forward_fn (returning (thread, index)) or "
                    "forward_thread_fn with an optional forward_index_fn, not both"
                )
            check_arity(forward_fn, n + len(extra), "T.Fragment forward_fn", args_doc)
            result = forward_fn(*self.forward_vars, *extra)
            if not isinstance(result, (list, tuple)) or len(result) != 2:
                raise frontend_error(
                    f"T.Fragment forward_fn must return (thread, index), got {result!r}"
                )
            thread, index = result
        elif forward_thread_fn is not None:
            check_arity(forward_thread_fn, n + len(extra), "T.Fragment forward_thread_fn", args_doc)
            thread = forward_thread_fn(*self.forward_vars, *extra)
            index = None
            if forward_index_fn is not None:
                check_arity(forward_index_fn, n, "T.Fragment forward_index_fn")
                index = forward_index_fn(*self.forward_vars)
        else:
            raise frontend_error(
                "T.Fragment needs forward_fn (returning (thread, index)) or forward_thread_fn"
            )
        self._forward_fn = forward_fn
        self._thread_fn = forward_thread_fn
        self._index_fn = forward_index_fn
        self.forward_thread = as_index_list(thread, "T.Fragment thread function")[0]
        # Without an index function each thread keeps its elements in logical order.
        self.forward_index = (
            as_index_list(index, "T.Fragment index function") if index is not None else None
        )

    @property
    def thread(self) -> Any:
        return self.forward_thread

    @property
    def replicate(self) -> Any:
        return self.replicate_count

    def map_forward_thread(self, indices: ShapeLike, replica: ExprLike = 0) -> Any:
        """The thread holding the element at `indices` (copy `replica` of it)."""
        indices = list(indices)
        extra = [replica] if self.replicate_count > 1 else []
        if self._forward_fn is not None:
            thread = self._forward_fn(*indices, *extra)[0]
        else:
            thread = self._thread_fn(*indices, *extra)
        thread = as_index_list(thread, "T.Fragment thread function")[0]
        if all(const_int(i) is not None for i in indices + extra):
            return as_python_int(thread)
        return thread

    def map_forward_index(self, indices: ShapeLike) -> Any:
        indices = list(indices)
        if self._forward_fn is not None:
            extra = [0] if self.replicate_count > 1 else []
            out = as_index_list(self._forward_fn(*indices, *extra)[1], "T.Fragment forward_fn")
        elif self._index_fn is not None:
            out = as_index_list(self._index_fn(*indices), "T.Fragment forward_index_fn")
        else:
            return list(indices)
        if all(const_int(i) is not None for i in indices):
            return [as_python_int(x) for x in out]
        return out

    def get_thread_size(self) -> Any:
        """The number of threads the fragment spans (constant shapes only)."""
        highest = 0
        for point in _points(self.shape):
            for r in range(self.replicate_count):
                highest = max(highest, self.map_forward_thread(point, r))
        return highest + 1

    def __repr__(self):
        index = (
            "logical"
            if self.forward_index is None
            else ", ".join(str(x) for x in self.forward_index)
        )
        return (
            f"Fragment(shape={list(self.shape)}, thread={self.forward_thread}, index=[{index}], "
            f"replicate={self.replicate_count})"
        )


def make_gemm_fragment_8x8():
    """The 8x8 tile of an mma / ldmatrix fragment over a warp: row i, column j is held
    by lane 4*i + j//2, in register j%2."""
    return Fragment((8, 8), forward_thread_fn=lambda i, j: i * 4 + j // 2,
                    forward_index_fn=lambda i, j: j % 2)  # fmt: skip


def make_gemm_fragment_8x8_transposed():
    """make_gemm_fragment_8x8 transposed (the layout of ldmatrix/stmatrix .trans): row
    i, column j is held by lane 4*j + i//2, in register i%2."""
    return Fragment((8, 8), forward_thread_fn=lambda i, j: j * 4 + i // 2,
                    forward_index_fn=lambda i, j: i % 2)  # fmt: skip
