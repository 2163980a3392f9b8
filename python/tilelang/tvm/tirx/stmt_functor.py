"""`tvm.tirx.stmt_functor`: TVM's IR visitors. tilelang's statements are C++ objects
with no Python visitor; these raise an error naming what is out of scope."""

from .._scope import out_of_scope


def post_order_visit(stmt, fvisit):
    out_of_scope(
        "tvm.tirx.stmt_functor.post_order_visit",
        "inspect a kernel through func.script() or kernel.get_kernel_source()",
    )


def ir_transform(stmt, preorder, postorder, only_enable=None):
    out_of_scope("tvm.tirx.stmt_functor.ir_transform", "rewrite the kernel in the DSL")


def substitute(node, vmap):
    out_of_scope("tvm.tirx.stmt_functor.substitute", "rewrite the kernel in the DSL")
