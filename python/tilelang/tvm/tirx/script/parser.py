"""`tvm.tirx.script.parser`: the names TVMScript's TIR kernels are written with (TVM's
`T`). tilelang's kernels are written with tilelang.language, so these are T's names:
`__all__` is T's, and each name is T's."""

from typing import Any


def __getattr__(name: str) -> Any:
    from tilelang import language

    if name == "__all__":
        return list(language.__all__)
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return getattr(language, name)
