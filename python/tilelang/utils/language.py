"""TileLang's `tilelang.utils.language`: helpers over TVM buffers, buffer regions and
IRModules (`to_buffer_region`, `retrieve_ptr`, `is_shared`, ...) that TileLang's tile
operators and intrinsic emitters use while lowering. tilelang lowers in its C++ core, so
these are TileLang internals: their names import, and using one raises an error saying
so (docs/design/tilelang_compat.md, "Out of scope")."""

from tilelang._compat import forwarding_getattr

_TILELANG_HELPERS = (
    "is_global", "is_shared", "is_shared_dynamic", "is_tensor_memory", "is_local",
    "is_fragment", "is_reducer", "is_local_var", "get_buffer_elems", "array_reduce",
    "retrieve_func_from_module", "to_buffer_region", "to_tile_region", "retrieve_shape",
    "retrieve_stride", "retrive_ptr_from_buffer_region", "retrieve_ptr",
    "retrieve_buffer_and_offset", "retrieve_offset", "retrieve_dtype", "bits_product",
    "prim_expr_equal", "legalize_pairwise_extents", "is_full_region", "get_prim_func_name",
    "side_effect",
)  # fmt: skip

__getattr__ = forwarding_getattr(
    __name__, internal=_TILELANG_HELPERS,
    instead="pass buffers and slices to the T functions, which take them as they are "
    "(buffer.shape, buffer.dtype and buffer.scope describe a buffer)",
)  # fmt: skip
