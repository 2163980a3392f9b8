"""`tilelang.cuda.intrinsics.layout.mma_sm70_layout`: the operand layouts of an emitter that is
out of scope (T.gemm lays its operands out itself)."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    __name__,
    internal_all=True,
    instead="write the GEMM with T.gemm (tilelang lays out its operands)",
)
