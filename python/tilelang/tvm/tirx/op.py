"""`tvm.tirx.op`: TVM's operator functions; each is tvm.tirx's (T's where T has it)."""


def __getattr__(name):
    from tilelang.tvm import tirx

    return getattr(tirx, name)
