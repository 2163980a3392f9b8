"""`PassContext` (TVM's `tvm.transform.PassContext`, re-exported by tilelang.transform):
pass configs for every compile inside a `with` block. tilelang.compile, @tilelang.jit
kernels and tilelang.lower merge the configs of the enclosing contexts under their own
`pass_configs` (the compile's own keys win)."""

from __future__ import annotations

import threading
from typing import Any

_scope = threading.local()


def _stack():
    if not hasattr(_scope, "contexts"):
        _scope.contexts = []
    return _scope.contexts


class PassContext:
    """Pass configs for the compiles inside `with PassContext(config={...}):`. The keys
    are checked as tilelang.compile's pass_configs are. opt_level, required_pass,
    disabled_pass and instruments are TVM's; they are kept (the pass list of a target
    is fixed, src/transform/pipeline.cpp) and a disabled_pass is refused."""

    def __init__(
        self,
        opt_level=2,
        required_pass=None,
        disabled_pass=None,
        instruments=None,
        config=None,
        trace=None,
        trace_stack=None,
        make_trace=None,
        num_evals=0,
        tuning_api_database=None,
    ):
        from . import normalize_pass_configs

        if disabled_pass:
            raise ValueError(
                f"PassContext(disabled_pass={list(disabled_pass)!r}): passes cannot be switched "
                "off by name; the pass list of each target is fixed. Use a pass config "
                "(e.g. tl.disable_tma_lower) instead"
            )
        self.opt_level = opt_level
        self.required_pass = list(required_pass or [])
        self.disabled_pass = []
        self.instruments = list(instruments or [])
        self.config = normalize_pass_configs(dict(config) if config else None)

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        _stack().pop()

    @staticmethod
    def current():
        """The innermost context of this thread (an empty one outside any `with`)."""
        stack = _stack()
        return stack[-1] if stack else PassContext()

    def __repr__(self):
        return f"PassContext(opt_level={self.opt_level}, config={self.config!r})"


def scoped_pass_configs() -> dict[str, Any]:
    """The configs of the enclosing `with PassContext(...)` blocks, inner ones winning."""
    merged = {}
    for context in _stack():
        merged.update(context.config)
    return merged
