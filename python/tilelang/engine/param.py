"""KernelParam: one parameter of a compiled kernel (`kernel.params`), with `name`,
`shape`, `dtype` (a dtype name), `is_tensor` and TileLang's `is_scalar()`,
`is_float8()`, `is_boolean()`, `torch_dtype()`."""

from tilelang.jit.kernel import KernelParam

__all__ = ["KernelParam"]
