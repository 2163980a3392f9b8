"""The error the TVM facade raises for a TVM name it does not provide."""

from tilelang import _C


class OutOfScopeError(_C.TileLangError, NotImplementedError, ImportError):
    """A TVM API that works on TVM's own IR or runtime, which tilelang does not have.
    It is an ImportError too, so `try: from X import name / except ImportError:` (how
    code probes for an optional backend) takes its fallback."""


def out_of_scope(what, instead, kind="TVM-internal"):
    raise OutOfScopeError(
        f"{what} is {kind} and out of scope for tilelang (a TVM-free TileLang: its IR, "
        f"passes and runtime are its own); {instead}. See docs/design/tilelang_compat.md, "
        "'Out of scope'"
    )
