"""`tvm.error`: TVM's error classes as tilelang's. A compile error is a TileLangError;
a bug inside the compiler an InternalError (also a TileLangError), so TileLang tests
that expect `tvm.error.InternalError` or `tvm.TVMError` see tilelang's errors."""

from tilelang import _C

TVMError = _C.TileLangError
InternalError = _C.InternalError
DiagnosticError = _C.TileLangError

__all__ = ["DiagnosticError", "InternalError", "TVMError"]
