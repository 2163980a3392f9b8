"""`tilelang.lower` / `tilelang.engine.lower.lower`: a kernel's generated source and
parameters without building it (TileLang's CompiledArtifact). The target is `target`,
else the enclosing `with tvm.target.Target(...)`; pass configs come from the enclosing
PassContexts. `enable_device_compile=True` also builds the kernel (`rt_mod`, a
JITKernel)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tilelang import _native
from tilelang.language.prim_func import PrimFunc
from tilelang.transform import with_scoped_pass_configs
from tilelang.utils.target import determine_target

_C = _native.load()

__all__ = ["CompiledArtifact", "extract_params", "lower"]


@dataclass
class CompiledArtifact:
    """What lower() returns: the lowered kernel's source, parameters and target.
    `host_mod` / `device_mod` (TileLang's TVM IRModules) are out-of-scope stand-ins whose
    use raises OutOfScopeError."""

    host_mod: object
    device_mod: object
    params: list
    kernel_source: str
    rt_mod: object = None
    target: str | None = None
    target_host: str | None = None
    pass_configs: dict = field(default_factory=dict)


def _single_func(func_or_mod):
    if isinstance(func_or_mod, PrimFunc):
        return func_or_mod
    functions = getattr(func_or_mod, "functions", None)
    if isinstance(functions, dict) and len(functions) == 1:
        return next(iter(functions.values()))
    raise TypeError(
        "tilelang.lower expects a T.prim_func or an IRModule holding one, got "
        f"{type(func_or_mod).__name__}"
        + (f" with {len(functions)} functions" if isinstance(functions, dict) else "")
    )


def extract_params(func):
    """The KernelParams of a T.prim_func: tensors with their shape, scalars."""
    from tilelang.jit.kernel import KernelParam

    core = _single_func(func).core
    params = []
    for i, name in enumerate(core.param_names):
        buf = core.param_buffer(i)
        if buf is not None:
            params.append(KernelParam(name, str(buf.dtype), list(buf.shape), True))
        else:
            params.append(KernelParam(name, str(core.param_var(i).dtype), [], False))
    return params


extrac_params = extract_params  # TileLang's spelling


def lower(
    func_or_mod,
    target="auto",
    target_host=None,
    runtime_only=False,
    enable_host_codegen=False,
    enable_device_compile=False,
):
    func = _single_func(func_or_mod)
    target = determine_target(target)
    pass_configs = with_scoped_pass_configs(None)
    source = _C.generate_source(func.core, target, pass_configs)
    rt_mod = None
    if enable_device_compile or enable_host_codegen:
        from tilelang.jit.kernel import JITKernel

        rt_mod = JITKernel(func, target=target, pass_configs=pass_configs)
    del runtime_only
    from tilelang.tvm._scope import refused_name

    def tvm_module(which):
        return refused_name(
            f"CompiledArtifact.{which} (a TVM IRModule of the lowered kernel)",
            "tilelang's lowered IR is C++: the artifact's kernel_source is the generated code, "
            "func.script() prints the IR before lowering",
        )

    return CompiledArtifact(
        host_mod=tvm_module("host_mod"),
        device_mod=tvm_module("device_mod"),
        params=extract_params(func),
        kernel_source=source,
        rt_mod=rt_mod,
        target=target,
        target_host=target_host,
        pass_configs=pass_configs,
    )
