"""Module-level helpers for TileLang's module layout: a module that re-exports another
(`tilelang.cuda.intrinsics` is tilelang.intrinsics) and answers a name it does not
provide with a stand-in whose use says it is out of scope, or with an AttributeError
for a name TileLang does not have either."""

from __future__ import annotations

from typing import Any

from tilelang.tvm._scope import OutOfScopeError, out_of_scope, refused_name

__all__ = ["OutOfScopeError", "forwarding_getattr", "out_of_scope", "refused_name"]


def forwarding_getattr(
    module_name: str,
    sources: Any = (),
    internal: Any = (),
    instead: str = "",
    internal_all: Any = False,
) -> Any:
    """A module `__getattr__`: a name of one of `sources` (modules, searched in order) is
    theirs; a name in `internal` (or any name, with internal_all) is the OutOfScopeName of
    `module_name.name`, whose use raises the out-of-scope error with `instead`; anything
    else is an AttributeError."""

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        for source in sources:
            if hasattr(source, name):
                return getattr(source, name)
        if internal_all or name in internal:
            return refused_name(f"{module_name}.{name}", instead, kind="a TileLang internal")
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__


# Packages of TileLang whose submodules are its TVM-side internals. A submodule of one
# that tilelang has no file for (`tilelang.cuda.pipeline`, `tilelang.rocm.target`,
# `tilelang.jit.adapter.nvrtc.include_paths`, ...) imports as an empty module whose
# names import as OutOfScopeNames: `from X import name` works, and using the name
# raises the out-of-scope error naming it.
INTERNAL_PACKAGES = (
    "tilelang.cuda", "tilelang.rocm", "tilelang.metal", "tilelang.cpu", "tilelang.webgpu",
    "tilelang.jit.adapter",
    "tilelang.tools", "tilelang.backend", "tilelang.carver", "tilelang.language.eager",
    "tilelang.language.tir", "tilelang.tileop",
)  # fmt: skip
# Single modules of the same kind: `tilelang.layout.cute` (CuTe's layout algebra for
# sm_100's tcgen05 operand layouts).
INTERNAL_MODULES = ("tilelang.layout.cute",)


class _InternalModule:
    """Finder and loader of the placeholder submodules of INTERNAL_PACKAGES. It sits last
    on sys.meta_path, so every module with a file is found first."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        import importlib.util

        if name not in INTERNAL_MODULES and not any(
            name.startswith(p + ".") for p in INTERNAL_PACKAGES
        ):
            return None
        return importlib.util.spec_from_loader(name, cls, is_package=True)

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        module.__doc__ = f"{module.__name__}: a TileLang internal that tilelang does not have."
        module.__getattr__ = forwarding_getattr(
            module.__name__, internal_all=True,
            instead="use tilelang's public API (T, tilelang.compile, the JITKernel)",
        )  # fmt: skip


def install_internal_module_finder() -> None:
    import sys

    if _InternalModule not in sys.meta_path:
        sys.meta_path.append(_InternalModule)
