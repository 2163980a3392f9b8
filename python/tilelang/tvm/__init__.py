"""The part of TVM's Python API that TileLang kernels and tests use, on tilelang.

TileLang is built on TVM, so its kernels and tests reach for TVM names: `from tvm import
tirx` for `tirx.const` in a dequantization helper, `tvm.DataType(dtype).bits`,
`with tvm.target.Target("c"):` around a compile, `tvm.transform.PassContext(config=...)`.
This package maps those names onto tilelang (docs/guide/jit_and_cache.md, "The TVM facade"); it
is not TVM. A TVM name that works on TVM's own IR, passes or runtime raises an error
that names it as out of scope (docs/design/tilelang_compat.md, "Out of scope").

`import tilelang` makes this package importable as `tvm` as well (`from tvm import
tirx`, `from tvm.target import Target`), unless a real TVM is installed, which then
keeps the name.
"""

from tilelang.language.dtypes import dtype as DataType

from . import arith, error, ir, runtime, script, target, te, testing, tirx, transform
from ._scope import OutOfScopeError, OutOfScopeName, refused_name
from .error import TVMError
from .ir import IRModule
from .target import Target

tir = tirx  # TVM's name for it before TileLang's rename

__all__ = [
    "DataType", "IRModule", "OutOfScopeError", "OutOfScopeName", "TVMError", "Target", "arith",
    "error", "ir", "runtime", "script", "target", "te", "testing", "tir", "tirx", "transform",
]  # fmt: skip

_TVM_ONLY = {"compile", "build", "get_global_func", "register_func", "ffi", "nd", "cpu", "cuda",
             "device", "relax", "te_compute", "lower", "tl", "instrument", "meta_schedule"}  # fmt: skip


def __getattr__(name):
    if name in _TVM_ONLY:
        return refused_name(
            f"tvm.{name}", "compile with tilelang.compile / tilelang.lower and call the JITKernel"
        )
    raise AttributeError(
        f"tvm.{name} is not part of tilelang's TVM facade (tilelang.tvm offers "
        f"{', '.join(__all__)}); write it with tilelang.language (import tilelang.language as T)"
    )


def modules():
    """This package's modules by their name under `tvm` ("tvm", "tvm.tirx", ...), for
    `import tvm.x` to find them."""
    import sys

    prefix = __name__
    return {
        "tvm" + name[len(prefix) :]: module
        for name, module in list(sys.modules.items())
        if module is not None
        and (name == prefix or name.startswith(prefix + "."))
        and not name.startswith(prefix + "._")
    }
