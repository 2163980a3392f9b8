"""`tvm.transform` (also `tvm.ir.transform`): PassContext, whose `config=` reaches every
compile inside its `with` block. TVM's pass objects are out of scope."""

from tilelang.transform.pass_context import PassContext

from ._scope import out_of_scope

__all__ = ["PassContext"]


def __getattr__(name):
    if name in ("module_pass", "prim_func_pass", "Sequential", "Pass", "ModulePass", "PassInfo"):
        out_of_scope(
            f"tvm.transform.{name}",
            "the compile runs its passes itself; steer them with pass configs (PassContext(config=...))",
        )
    raise AttributeError(
        f"tvm.transform.{name} is not part of tilelang's TVM facade (tvm.transform offers PassContext)"
    )
