"""Swizzled shared-memory layouts. A row of a tile is cut into 16-byte vectors; within each
span of 32, 64 or 128 bytes (quarter, half or full bank width, n = 2, 4 or 8 vectors)
vector v of row r moves to v XOR ((r // (8 / n)) mod n), so that a column of vectors read
by consecutive rows falls into different banks. For rows one span long this is the
swizzle TMA writes in its 32, 64 and 128-byte modes. Each function returns a `Layout`
over the buffer's shape that only permutes elements within a row; CUDA targets place
shared tiles this way (docs/guide/language.md, "Layouts"), the CPU and Metal ignore it."""

from tilelang.language.buffer import Buffer, Region, const_int, to_value
from tilelang.language.builder_ctx import frontend_error

from .layout import Layout

_SPANS = {"full": 128, "half": 64, "quarter": 32}


def _buffer_info(obj, what):
    """(shape, dtype) of a buffer, a slice of one or an element of one."""
    obj = to_value(obj)
    if isinstance(obj, Region):
        obj = obj.buffer
    if not isinstance(obj, Buffer) and hasattr(obj, "base"):  # a view
        return tuple(obj.shape), obj.dtype
    if not isinstance(obj, Buffer):
        from tilelang.language import builder_ctx

        ctx = builder_ctx.maybe_current()
        element = ctx.element_of(obj) if ctx is not None and hasattr(obj, "same_as") else None
        if element is None:
            raise frontend_error(f"{what} needs a buffer, got {type(obj).__name__} {obj!r}")
        obj = element[0]
    return tuple(obj.shape), obj.dtype


def _tile_dims(shape, what):
    if len(shape) < 2:
        raise frontend_error(f"{what} needs a buffer of at least 2 dimensions, got shape {shape}")
    rows, cols = const_int(shape[-2]), const_int(shape[-1])
    if rows is None or cols is None:
        raise frontend_error(f"{what} needs constant tile sizes, got shape {shape}")
    return rows, cols


def _swizzle(shape, bits, span_bytes):
    """The layout over `shape` that XOR-swizzles 16-byte vectors within spans of span_bytes."""
    cols = const_int(shape[-1])
    per_vec = max(1, 128 // bits)  # elements in a 16-byte vector
    vecs = span_bytes // 16
    if span_bytes == 0 or cols % (per_vec * vecs) != 0:
        return Layout(shape, lambda *idx: list(idx))

    def forward(*idx):
        r, c = idx[-2], idx[-1]
        v, e = c // per_vec, c % per_vec
        span, lane = v // vecs, v % vecs
        new_c = (span * vecs + (lane ^ ((r // (8 // vecs)) % vecs))) * per_vec + e
        return [*idx[:-2], r, new_c]

    return Layout(shape, forward)


def _widest_span(cols, bits):
    row_bytes = cols * bits // 8
    for span in (128, 64, 32):
        if row_bytes % span == 0:
            return span
    return 0


def make_swizzled_layout(buffer, k_major=True, allow_pad=True):
    """The widest bank swizzle the tile's rows allow (linear when rows are too narrow).
    `k_major` and `allow_pad` are accepted for compatibility; the swizzle permutes within
    rows either way."""
    shape, dtype = _buffer_info(buffer, "make_swizzled_layout")
    _, cols = _tile_dims(shape, "make_swizzled_layout")
    if not isinstance(k_major, bool):
        raise frontend_error(f"make_swizzled_layout k_major must be True or False, got {k_major!r}")
    return _swizzle(shape, dtype.bits, _widest_span(cols, dtype.bits))


def _bank_layout(kind, args):
    what = f"make_{kind}_bank_swizzled_layout"
    if len(args) == 1:
        shape, dtype = _buffer_info(args[0], what)
        bits = dtype.bits
    elif len(args) == 3:
        stride, continuous, bits = (const_int(to_value(a)) for a in args)
        if None in (stride, continuous, bits):
            raise frontend_error(
                f"{what}(stride, continuous, element_bits) needs constants, got {args}"
            )
        shape = (stride, continuous)
    else:
        raise frontend_error(
            f"{what} takes a buffer or (stride, continuous, element_bits), got {args}"
        )
    _, cols = _tile_dims(shape, what)
    span = _SPANS[kind]
    if cols * bits // 8 % span != 0:
        raise frontend_error(
            f"{what}: rows of {cols} elements of {bits} bits are not a multiple of {span} bytes"
        )
    return _swizzle(shape, bits, span)


def make_full_bank_swizzled_layout(*args):
    return _bank_layout("full", args)


def make_half_bank_swizzled_layout(*args):
    return _bank_layout("half", args)


def make_quarter_bank_swizzled_layout(*args):
    return _bank_layout("quarter", args)


def make_linear_layout(*args):
    """The identity layout over a buffer, or over (stride, continuous)."""
    if len(args) == 1:
        shape, _ = _buffer_info(args[0], "make_linear_layout")
    elif len(args) == 2:
        shape = tuple(args)
    else:
        raise frontend_error(
            f"make_linear_layout takes a buffer or (stride, continuous), got {args}"
        )
    return Layout(shape, lambda *idx: list(idx))


def make_metadata_layout(buffer, mma_dtype="float16", backend="cutlass", arch=None, **kwargs):
    """The layout of a sparse gemm's metadata (`E` of T.gemm_sp) by backend, as TileLang
    names them: "cutlass" is make_cutlass_metadata_layout (CUTLASS's reordered storage,
    tilelang.layout.gemm_sp), "naive" the identity (the row-major format
    tilelang.utils.sparse.compress writes by default)."""
    if backend == "cutlass":
        return make_cutlass_metadata_layout(buffer, mma_dtype, arch, **kwargs)
    if backend != "naive":
        raise frontend_error(
            f"make_metadata_layout: backend must be 'cutlass' or 'naive', got {backend!r}"
        )
    shape, _ = _buffer_info(buffer, "make_metadata_layout")
    layout = Layout(shape, lambda *idx: list(idx))
    # Known to be the identity: annotated on a global buffer it moves nothing, so the
    # compiler is not asked to remap (and keeps the buffer's bulk and async copies).
    layout._identity = True
    return layout


def make_cutlass_metadata_layout(buffer, mma_dtype="float16", arch=None, **kwargs):
    """Metadata in CUTLASS's reordered storage; see tilelang.layout.gemm_sp."""
    from .gemm_sp import make_cutlass_metadata_layout as make

    return make(buffer, mma_dtype, arch, **kwargs)
