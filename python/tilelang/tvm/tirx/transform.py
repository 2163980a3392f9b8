"""`tvm.tirx.transform`: TVM's TIR passes. tilelang's passes run inside the compile, in
the order src/transform/pipeline.cpp fixes; a pass cannot be applied by name."""

from .._scope import out_of_scope


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(name)
    out_of_scope(
        f"tvm.tirx.transform.{name}",
        "the compile runs its passes itself (tilelang.compile / tilelang.lower); "
        "steer them with pass_configs",
    )
