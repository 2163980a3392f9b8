"""`set_autotune_inputs`: the tensors the autotuner times and checks configs on, given
around the call that tunes (`with set_autotune_inputs(a, b): kernel = matmul(M, N, K)`)
instead of tensors it supplies itself."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["AutotuneInputsCapture", "get_autotune_inputs", "set_autotune_inputs"]

_scope = threading.local()


def _stack():
    if not hasattr(_scope, "inputs"):
        _scope.inputs = []
    return _scope.inputs


class AutotuneInputsCapture:
    """The `with` scope set_autotune_inputs returns."""

    def __init__(self, tensors):
        self.tensors = list(tensors)

    def __enter__(self):
        _stack().append(self.tensors)
        return self

    def __exit__(self, *exc):
        _stack().pop()


def set_autotune_inputs(*tensors: Any) -> Any:
    """`set_autotune_inputs(a, b)` or `set_autotune_inputs([a, b])`: inside the `with`,
    a tuning run feeds these tensors (the kernel's inputs, in parameter order) to every
    config, and to ref_prog, instead of supplying random ones. A supply_prog given to
    the tuner still wins."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]  # type: ignore[assignment]
    return AutotuneInputsCapture(tensors)


def get_autotune_inputs() -> Any:
    """The tensors of the innermost set_autotune_inputs scope, or None."""
    stack = _stack()
    return list(stack[-1]) if stack else None
