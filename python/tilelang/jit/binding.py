"""How a `@tilelang.jit` factory's call keys its compiled kernel, as TileLang's JIT does:
the call is bound to the factory's signature with the defaults applied, so `f(512, 512)`,
`f(512, 512, False)` and `f(token_stride=512, hidden=512)` name one kernel. A value
enters the key as itself (numbers, strings, dtypes, None), a list, dict or set as a
tagged tuple of its items; a float is tagged too, so `f(1)` and `f(1.0)` (whose kernels
may differ in their constants' types) are two kernels. An unhashable value of another
kind cannot key a kernel and is refused, naming the argument.

`JITFunc` is TileLang's `jit_fn.func`: the decorated factory, callable as itself, with
`parse_args(*args, **kwargs)` (the key of a call), `_parse_phase1_key` and `set_mode`."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

__all__ = ["JITFunc", "key_part"]

_PLAIN = (bool, int, str, bytes, type(None))


def _is_tensor(value):
    if isinstance(value, np.generic):  # a numpy scalar: a value, not a tensor
        return False
    return getattr(value, "shape", None) is not None and getattr(value, "dtype", None) is not None


def key_part(value, where="a value"):
    """The hashable form of one argument value in a kernel's key."""
    if isinstance(value, float):
        return (float, repr(value))  # -0.0 == 0.0, yet they may build different constants
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, np.generic):
        return (type(value).__name__, repr(value.item()))
    if isinstance(value, tuple):
        return tuple(key_part(v, where) for v in value)
    if isinstance(value, list):
        return (list, tuple(key_part(v, where) for v in value))
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: repr(kv[0]))
        return (dict, tuple((key_part(k, where), key_part(v, where)) for k, v in items))
    if isinstance(value, (set, frozenset)):
        return (type(value), tuple(sorted((key_part(v, where) for v in value), key=repr)))
    if _is_tensor(value):  # by dtype and shape
        return ("tensor", str(value.dtype), tuple(int(s) for s in value.shape))
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"Unsupported unhashable JIT compile-time cache key value of type "
            f"{type(value).__qualname__}: {value!r} ({where}); a @tilelang.jit function's "
            "arguments key its compiled kernels, so they must be hashable or numbers, "
            "strings, dtypes, tuples, lists, dicts or sets of those"
        ) from None
    return value


# Exact types whose call form (positional values and keywords as given) is a safe key
# of the call-form cache: equal values of these types build equal kernels.
_CALL_FORM_TYPES = frozenset([bool, int, float, str, type(None)])


def call_form(args: Any, kwargs: Any) -> Any:
    """A key of the call exactly as written, for the cache that skips binding on repeated
    calls; None when an argument is of another type (that call is bound every time)."""
    for v in args:
        if type(v) not in _CALL_FORM_TYPES and not isinstance(v, str):
            return None
    for v in kwargs.values():
        if type(v) not in _CALL_FORM_TYPES and not isinstance(v, str):
            return None

    # A float by its text: -0.0 == 0.0, yet the two may build different constants.
    def form(v):
        return (float, repr(v)) if type(v) is float else (type(v), v)

    return tuple(form(v) for v in args), tuple((k, form(v)) for k, v in kwargs.items())


class JITFunc:
    """The function under `@tilelang.jit` (TileLang's `.func`): calling it calls the
    function; its attributes (`__name__`, `__code__`, ...) are the function's."""

    def __init__(self, fn: Callable[..., Any], mode: str = "lazy") -> None:
        functools.update_wrapper(self, fn)
        self.orig_func = fn
        self.signature = inspect.signature(fn)
        self.mode = mode

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.orig_func(*args, **kwargs)

    def __getattr__(self, name):
        fn = self.__dict__.get("orig_func")
        if fn is None:
            raise AttributeError(name)
        return getattr(fn, name)

    def __repr__(self):
        return f"<JITFunc {self.orig_func.__qualname__}{self.signature}>"

    def set_mode(self, mode: str) -> None:
        """TileLang's switch between its lazy (a factory returning a T.prim_func) and
        eager kinds; here the decorator tells them apart, so only the value is kept."""
        if mode not in ("lazy", "eager"):
            raise ValueError(f"set_mode: mode must be 'lazy' or 'eager', got {mode!r}")
        self.mode = mode

    def _bind(self, args, kwargs):
        """(ordered [(name, value)] with defaults applied and **kwargs flattened,
        [(name, value)] of keywords the function has no parameter for)."""
        params = self.signature.parameters
        var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
        known = kwargs if var_kw else {k: v for k, v in kwargs.items() if k in params}
        extra = [] if var_kw else sorted((k, v) for k, v in kwargs.items() if k not in params)
        try:
            bound = self.signature.bind(*args, **known)
        except TypeError as exc:
            raise TypeError(f"{self.orig_func.__name__}{self.signature}: {exc}") from None
        bound.apply_defaults()
        named, flat = [], []
        for name, value in bound.arguments.items():
            kind = params[name].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                flat = sorted(value.items())
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                named.append((name, tuple(value)))
            else:
                named.append((name, value))
        return named, flat + extra

    def _split(self, args, kwargs):
        """The call's (named, flat) compile-time values and {name: tensor}: an eager
        function's tensor arguments are no part of the compile-time key; a factory's
        arguments all are."""
        named, flat = self._bind(args, kwargs)
        tensors = {}
        if self.mode == "eager":
            tensors = {n: v for n, v in named + flat if _is_tensor(v)}
            named = [(n, v) for n, v in named if n not in tensors]
            flat = [(n, v) for n, v in flat if n not in tensors]
        return named, flat, tensors

    def _parse_phase1_key(self, *args, **kwargs):
        """(key of the compile-time values, tensor arguments {name: tensor}, compile-time
        values {name: value}, defaults applied and **kwargs flattened) of a call."""
        named, flat, tensors = self._split(args, kwargs)
        return self._key(named, flat), tensors, dict(named + flat)

    def parse_args(self, *args: Any, **kwargs: Any) -> Any:
        """((key, tensor key), {name: tensor}) of a call: the key of the kernel it
        builds (see the module); the tensor key (None for a factory) is each tensor's
        dtype and shape."""
        named, flat, tensors = self._split(args, kwargs)
        tensor_key = None
        if self.mode == "eager":
            tensor_key = tuple((n, key_part(t)) for n, t in tensors.items())
        return (self._key(named, flat), tensor_key), tensors

    def _key(self, named, flat):
        fn = self.orig_func.__name__
        parts = [key_part(v, f"argument '{n}' of '{fn}'") for n, v in named]
        if flat:
            parts.append(tuple((n, key_part(v, f"argument '{n}' of '{fn}'")) for n, v in flat))
        return tuple(parts)
