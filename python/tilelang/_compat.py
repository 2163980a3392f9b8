"""Module-level helpers for TileLang's module layout: a module that re-exports another
(`tilelang.cuda.intrinsics` is tilelang.intrinsics) and answers a name it does not
provide with an error that says whether it is out of scope or simply unknown."""

from tilelang.tvm._scope import OutOfScopeError, out_of_scope

__all__ = ["OutOfScopeError", "forwarding_getattr", "out_of_scope"]


def forwarding_getattr(module_name, sources=(), internal=(), instead="", internal_all=False):
    """A module `__getattr__`: a name of one of `sources` (modules, searched in order) is
    theirs; a name in `internal` (or any name, with internal_all) raises the out-of-scope
    error naming `module_name.name` and `instead`; anything else is an AttributeError."""

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        for source in sources:
            if hasattr(source, name):
                return getattr(source, name)
        if internal_all or name in internal:
            out_of_scope(f"{module_name}.{name}", instead, kind="a TileLang internal")
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__
