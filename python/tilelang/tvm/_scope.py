"""The error the TVM facade raises for a TVM name it does not provide, and the module
`__getattr__` that tells such a name from one TVM does not have either."""

from tilelang import _C


class OutOfScopeError(_C.TileLangError, NotImplementedError, ImportError):  # type: ignore[name-defined,misc]
    """A TVM API that works on TVM's own IR or runtime, which tilelang does not have.
    It is an ImportError too, so `try: from X import name / except ImportError:` (how
    code probes for an optional backend) takes its fallback."""


def out_of_scope(what, instead, kind="TVM-internal"):
    raise OutOfScopeError(
        f"{what} is {kind} and out of scope for tilelang (a TVM-free TileLang: its IR, "
        f"passes and runtime are its own); {instead}. See docs/design/tilelang_compat.md, "
        "'Out of scope'"
    )


def facade_getattr(module_name, offers, tvm_names, instead, hint=""):
    """A facade module's `__getattr__`: a name of `tvm_names` (that TVM module's own API,
    which tilelang does not provide) raises OutOfScopeError with `instead`; any other
    name is an AttributeError, as from a module without it. Only known names may raise
    something else: pickle.whichmodule and hasattr probe every loaded module for
    arbitrary names and let only AttributeError pass (torch.compile's cache keys are
    pickled so)."""
    tvm_names = frozenset(tvm_names)

    def __getattr__(name):
        if name in tvm_names:
            out_of_scope(f"{module_name}.{name}", instead)
        raise AttributeError(
            f"{module_name}.{name} is not part of tilelang's TVM facade ({module_name} "
            f"offers {offers}){hint}"
        )

    return __getattr__
