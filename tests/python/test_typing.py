"""The public Python API is annotated: every public function and method of the modules
users import (tilelang, tilelang.language as T, jit, autotuner, cache, profiler, tools,
carver) annotates each parameter and its return. `make lint` type-checks the package
with these annotations (pyproject.toml [tool.mypy]); this test keeps new public names
from arriving without them."""

import importlib
import inspect

import tilelang

PUBLIC_MODULES = [
    "tilelang",
    "tilelang.language",
    "tilelang.jit",
    "tilelang.autotuner",
    "tilelang.cache",
    "tilelang.profiler",
    "tilelang.tools",
    "tilelang.carver",
    "tilelang.carver.arch",
    "tilelang.carver.template",
]


def _public(module):
    """Every name a user reaches as module.name: `__all__` and the other public names
    (`T.*` holds more than `tilelang.language.__all__` lists)."""
    names = set(getattr(module, "__all__", ())) | {n for n in dir(module) if not n.startswith("_")}
    return [(n, getattr(module, n, None)) for n in sorted(names)]


def _unannotated(fn):
    """The parameters (and '->' for the return) that `fn` leaves without annotation."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    notes = getattr(fn, "__annotations__", {})
    out = [p for p in sig.parameters if p not in ("self", "cls") and p not in notes]
    return [*out, "->"] if "return" not in notes else out


def _functions():
    """(qualified name, function) of every public function and method of PUBLIC_MODULES
    defined by this package (re-exports of other packages left out)."""
    seen = {}
    for module_name in PUBLIC_MODULES:
        for name, obj in _public(importlib.import_module(module_name)):
            if inspect.isfunction(obj) and obj.__module__.startswith("tilelang"):
                seen[f"{obj.__module__}.{obj.__qualname__}/{name}"] = obj
            elif inspect.isclass(obj) and obj.__module__.startswith("tilelang"):
                for attr, value in vars(obj).items():
                    if attr.startswith("_") and attr not in ("__init__", "__call__"):
                        continue
                    fn = value.fget if isinstance(value, property) else value
                    fn = getattr(fn, "__func__", fn)
                    if inspect.isfunction(fn):
                        seen[f"{obj.__module__}.{obj.__qualname__}.{attr}"] = fn
    return seen


def test_the_public_api_is_annotated():
    functions = _functions()
    # The surface is large (T.* alone is about 200 functions and classes): a module that failed to
    # export would make this test pass vacuously.
    assert len(functions) > 250, len(functions)
    missing = {name: gaps for name, fn in functions.items() if (gaps := _unannotated(fn))}
    assert not missing, "public functions without annotations:\n" + "\n".join(
        f"  {name}: {', '.join(gaps)}" for name, gaps in sorted(missing.items())
    )


def test_the_package_ships_its_py_typed_marker():
    """PEP 561: without py.typed a type checker ignores the package's annotations (the
    wheel's copy is checked by test_cpp_package.py)."""
    import os

    assert os.path.isfile(os.path.join(os.path.dirname(tilelang.__file__), "py.typed"))
