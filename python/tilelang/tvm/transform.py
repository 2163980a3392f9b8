"""`tvm.transform` (also `tvm.ir.transform`): PassContext, whose `config=` reaches every
compile inside its `with` block. TVM's pass objects are out of scope."""

from tilelang.transform.pass_context import PassContext

from ._scope import facade_getattr

__all__ = ["PassContext"]


# TVM's pass objects and pass instruments.
_TVM_NAMES = {
    "ModulePass", "Pass", "PassInfo", "PassInstrument", "Sequential", "apply_pass_to_function",
    "module_pass", "pass_instrument", "prim_func_pass", "PrintIR",
}  # fmt: skip

__getattr__ = facade_getattr(
    "tvm.transform", "PassContext", _TVM_NAMES,
    "the compile runs its passes itself; steer them with pass configs (PassContext(config=...))",
)  # fmt: skip
