"""Hooks into the compile, as TileLang's `tilelang.engine.callback` offers them.

`register_cuda_postproc_callback` installs a function `f(code, target) -> code` that
sees the CUDA source of every kernel compiled for a CUDA target (the emulated ones
too) and returns the text to compile instead: to print it, add a comment, or patch
it. `target` is the target string ("cuda -arch=sm_90a"). It runs after our codegen
and before NVRTC (or the emulator's host compiler). The text it returns is part of
the cache key, so kernels rewritten differently never share a binary, and a kernel
compiled again with the same rewrite loads from the cache (the callback still runs,
since its output is only known by running it).

One callback is installed at a time; `override=False` refuses to replace one.
`unregister_cuda_postproc_callback()` removes it.

`register_hip_postproc(_callback)` is accepted with the same checks, for code written
for both vendors; tilelang has no HIP target, so no source ever reaches it."""

from __future__ import annotations

_cuda_postproc = None


def register_cuda_postproc(func, override=True):
    """Installs `func(code, target) -> str` as the CUDA source post-processor."""
    global _cuda_postproc
    if not callable(func):
        raise TypeError(
            f"register_cuda_postproc: func must be callable as func(code, target), got {func!r}"
        )
    if _cuda_postproc is not None and not override:
        raise ValueError(
            f"register_cuda_postproc: a CUDA post-processor is already registered "
            f"({_name(_cuda_postproc)}); pass override=True to replace it"
        )
    _cuda_postproc = func
    return func


def register_cuda_postproc_callback(func=None, override=True):
    """Decorator form of register_cuda_postproc: `@register_cuda_postproc_callback`,
    `@register_cuda_postproc_callback()` or `@register_cuda_postproc_callback(override=False)`."""
    if callable(func):
        return register_cuda_postproc(func, override)
    if isinstance(func, bool):  # upstream lets the flag come first
        override = func
    elif func is not None:
        raise TypeError(
            "register_cuda_postproc_callback: use it as @register_cuda_postproc_callback or "
            f"@register_cuda_postproc_callback(override=...), got {func!r}"
        )
    return lambda f: register_cuda_postproc(f, override)


def unregister_cuda_postproc_callback():
    """Removes the CUDA post-processor, if one is installed."""
    global _cuda_postproc
    _cuda_postproc = None


def cuda_postproc_for(target):
    """The post-processor _C.compile calls for `target` (code -> code), or None."""
    func = _cuda_postproc
    if func is None or target.split()[0] != "cuda":
        return None

    def run(code):
        out = func(code, target)
        if not isinstance(out, str):
            raise TypeError(
                f"the CUDA post-processor {_name(func)} must return the source as a str, "
                f"got {type(out).__name__}"
            )
        return out

    return run


_hip_postproc = None


def register_hip_postproc(func, override=True):
    """Installs `func(code, target) -> str` as the HIP source post-processor. tilelang
    compiles no HIP, so it is kept and never called (the CUDA one applies to CUDA)."""
    global _hip_postproc
    if not callable(func):
        raise TypeError(
            f"register_hip_postproc: func must be callable as func(code, target), got {func!r}"
        )
    if _hip_postproc is not None and not override:
        raise ValueError(
            f"register_hip_postproc: a HIP post-processor is already registered "
            f"({_name(_hip_postproc)}); pass override=True to replace it"
        )
    _hip_postproc = func
    return func


def register_hip_postproc_callback(func=None, override=True):
    """Decorator form of register_hip_postproc."""
    if callable(func):
        return register_hip_postproc(func, override)
    if isinstance(func, bool):
        override = func
    elif func is not None:
        raise TypeError(
            "register_hip_postproc_callback: use it as @register_hip_postproc_callback or "
            f"@register_hip_postproc_callback(override=...), got {func!r}"
        )
    return lambda f: register_hip_postproc(f, override)


def _name(func):
    return getattr(func, "__qualname__", None) or repr(func)
