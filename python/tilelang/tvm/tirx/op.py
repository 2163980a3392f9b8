"""`tvm.tirx.op`: TVM's operator functions; each is tvm.tirx's (T's where T has it)."""


def __getattr__(name):
    from . import __dict__ as tirx_names
    from . import __getattr__ as tirx_getattr

    if name in tirx_names and not name.startswith("_"):
        return tirx_names[name]
    return tirx_getattr(name)
