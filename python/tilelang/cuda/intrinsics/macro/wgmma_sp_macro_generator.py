"""`tilelang.cuda.intrinsics.macro.wgmma_sp_macro_generator`: TileLang's emitter of this instruction
family is out of scope; T.gemm emits the instructions the target has."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    __name__,
    internal_all=True,
    instead="write the GEMM with T.gemm (tilelang picks the instruction)",
)
